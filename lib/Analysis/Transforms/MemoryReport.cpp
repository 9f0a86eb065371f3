//===- MemoryReport.cpp - Activation bytes per layer, as JSON -------------===//
//
// Part of pmlir.
//
// The activations a backward pass keeps, per tfm.layer and per rank,
// counted as Korthikanti et al. count them for Megatron's GPT layer
// ("Reducing Activation Recomputation in Large Transformer Models", §4):
// the activation operands of every matmul, the inputs of the norms and of
// the nonlinear elementwise ops (gelu, silu, both factors of a mul), the
// query, key and value of each attention and its softmax probabilities
// [b, a, s, s]. Adds, scales, reshapes and rotations keep nothing. A value
// counts once however many ops keep it. A matmul input that is an
// all_gather of a sequence shard counts as the shard: Megatron's sequence
// parallelism keeps the shard and gathers it again in the backward pass.
// Weights (function arguments and what is computed from them alone, e.g.
// their local slices) are not activations. The parameters are reported
// apart: the bytes a rank holds next to the ideal (each divided exactly by
// the devices it is split over).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Analysis/Transforms/Passes.h"

#include "pmlir/Analysis/JsonReport.h"
#include "pmlir/Sharding/Sharding.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Analysis/SliceAnalysis.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#include <map>

#define DEBUG_TYPE "pmlir-memory-report"

namespace pmlir {
#define GEN_PASS_DEF_MEMORYREPORT
#include "pmlir/Analysis/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm;
using pmlir::sharding::tensorBytes;

namespace {

/// Values computed from weights alone: parameter arguments, and the
/// results of ops whose tensor operands all are such values.
DenseSet<Value> parametersOf(func::FuncOp func) {
  DenseSet<Value> params;
  for (BlockArgument arg : func.getArguments()) {
    if (argumentRole(func, arg.getArgNumber()) == ArgumentRole::Param)
      params.insert(arg);
  }
  func.walk([&](Operation *op) {
    if (op->getNumResults() == 0 || op->getNumRegions() != 0)
      return;
    bool fromParams = llvm::all_of(op->getOperands(), [&](Value v) {
      return !isa<RankedTensorType>(v.getType()) || params.contains(v);
    });
    if (fromParams && llvm::any_of(op->getOperands(), [&](Value v) { return params.contains(v); }))
      for (Value r : op->getResults())
        params.insert(r);
  });
  return params;
}

struct MemoryReportPass : public pmlir::impl::MemoryReportBase<MemoryReportPass> {
  using MemoryReportBase::MemoryReportBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "writing the memory report to " << output << "\n");
    ModuleOp module = getOperation();
    auto mesh = module->getAttrOfType<MeshAttr>(kMeshAttr);
    int64_t tp = mesh ? mesh.axisSize("tp") : 1;
    llvm::json::Array layers;
    int64_t total = 0;
    llvm::json::Array training;
    module.walk([&](func::FuncOp func) {
      DenseSet<Value> params = parametersOf(func);
      func.walk([&](LayerOp layer) {
        if (layer.getBackward())
          return;
        llvm::json::Object entry = reportLayer(layer, params, tp);
        total += *entry.getInteger("activation_bytes_per_rank");
        layers.push_back(std::move(entry));
      });
      if (std::optional<llvm::json::Object> step = reportTrainingStep(func, mesh))
        training.push_back(std::move(*step));
    });
    llvm::json::Object report{{"mesh", meshJson(module)},
                              {"activation_bytes_per_rank", total},
                              {"layers", std::move(layers)},
                              {"parameters", reportParameters(module, mesh)}};
    if (!training.empty())
      report["training"] = std::move(training);
    if (failed(
            writeJsonReport(module, output, "memory report", llvm::json::Value(std::move(report)))))
      return signalPassFailure();
  }

  /// A function that differentiates (backward layers) or trains (AdamW
  /// updates): what its backward layers read of the forward pass, per
  /// forward layer (the activations kept, as the recompute mode leaves
  /// them), and its model state per rank (parameters, the gradients the
  /// updates read, the optimizer state) next to ZeRO's formulas at f32.
  static std::optional<llvm::json::Object> reportTrainingStep(func::FuncOp func, MeshAttr mesh) {
    SmallVector<AdamWOp> updates;
    bool backward = false;
    func.walk([&](Operation *op) {
      if (auto update = dyn_cast<AdamWOp>(op))
        updates.push_back(update);
      if (auto layer = dyn_cast<LayerOp>(op))
        backward |= layer.getBackward();
    });
    if (!backward && updates.empty())
      return std::nullopt;
    llvm::json::Object step{{"function", jsonText(func.getSymName())}};

    // Kept: the values of the forward pass (what the losses are computed
    // from) that backward layers read, by the forward layer that made them
    // ("before" the first: the embeddings).
    DenseSet<Value> params = parametersOf(func);
    SetVector<Operation *> forwardOps;
    func.walk([&](Operation *op) {
      if (isa<CrossEntropyOp, CrossEntropyCombineOp>(op)) {
        BackwardSliceOptions options;
        options.omitUsesFromAbove = false;
        (void)getBackwardSlice(op, &forwardOps, options);
      }
    });
    llvm::json::Array keptPerLayer;
    int64_t keptTotal = 0, beforeLayers = 0;
    std::map<int64_t, int64_t> byLayer;
    DenseSet<Value> counted;
    func.walk([&](LayerOp layer) {
      if (!layer.getBackward())
        return;
      layer.walk([&](Operation *op) {
        for (Value v : op->getOperands()) {
          Operation *def = v.getDefiningOp();
          if (!def || params.contains(v) || !isa<RankedTensorType>(v.getType()) ||
              !forwardOps.contains(def) || !counted.insert(v).second)
            continue;
          keptTotal += tensorBytes(v);
          if (auto forward = dyn_cast<LayerOp>(def))
            byLayer[forward.getIndex()] += tensorBytes(v);
          else
            beforeLayers += tensorBytes(v);
        }
      });
    });
    if (beforeLayers > 0)
      keptPerLayer.push_back(
          llvm::json::Object{{"layer", "before"}, {"kept_bytes_per_rank", beforeLayers}});
    for (auto &[index, bytes] : byLayer)
      keptPerLayer.push_back(llvm::json::Object{{"layer", index}, {"kept_bytes_per_rank", bytes}});
    step["kept_activation_bytes_per_rank"] = keptTotal;
    step["kept_by_layer"] = std::move(keptPerLayer);
    if (updates.empty())
      return step;

    // Model state. Psi: the parameters a rank would hold without dp (each
    // divided by the devices of its axes other than dp).
    int64_t dp = mesh && mesh.axisIndex("dp") >= 0 ? mesh.axisSize("dp") : 1;
    int64_t paramBytes = 0, gradBytes = 0, stateBytes = 0;
    double psi = 0;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        continue;
      ArgumentRole role = argumentRole(func, i);
      if (role == ArgumentRole::OptimizerState && type.getRank() > 0)
        stateBytes += tensorBytes(arg);
      if (role != ArgumentRole::Param)
        continue;
      paramBytes += tensorBytes(arg);
      auto sharding = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
      auto globalType = func.getArgAttrOfType<TypeAttr>(i, kGlobalTypeAttr);
      auto global = globalType ? cast<RankedTensorType>(globalType.getValue()) : type;
      double devices = 1;
      if (sharding && mesh)
        for (int64_t d = 0; d < sharding.getRank(); ++d)
          for (StringRef a : sharding.axesOf(d))
            if (a != "dp")
              devices *= mesh.axisSize(a);
      psi += double(global.getNumElements()) / devices;
    }
    // The gradients a rank holds: whole until the update under ZeRO-1
    // (reduce-scattered as the update reads them), on dp shards from where
    // the backward makes them under ZeRO-2 and 3.
    auto zero = func->getParentOfType<ModuleOp>()->getAttrOfType<IntegerAttr>(kZeroStageAttr);
    int64_t stage = zero ? zero.getInt() : 0;
    if (stage >= 2)
      for (AdamWOp update : updates)
        gradBytes += tensorBytes(update.getGrad());
    else
      gradBytes = paramBytes;
    double n = double(dp);
    double formula = stage == 0   ? 16 * psi
                     : stage == 1 ? 4 * psi + 4 * psi + 8 * psi / n
                     : stage == 2 ? 4 * psi + 12 * psi / n
                                  : 16 * psi / n;
    step["model_state"] =
        llvm::json::Object{{"parameter_bytes_per_rank", paramBytes},
                           {"gradient_bytes_per_rank", gradBytes},
                           {"optimizer_state_bytes_per_rank", stateBytes},
                           {"bytes_per_rank", paramBytes + gradBytes + stateBytes},
                           {"psi", static_cast<int64_t>(psi + 0.5)},
                           {"dp", dp},
                           {"zero_stage", stage},
                           {"zero_formula_bytes_per_rank", static_cast<int64_t>(formula + 0.5)}};
    return step;
  }

  /// The parameter bytes a rank holds (its blocks, padding included), next
  /// to the ideal: every parameter divided exactly by the devices its
  /// sharding splits it over, the rest whole; and the unsharded total.
  static llvm::json::Object reportParameters(ModuleOp module, MeshAttr mesh) {
    int64_t perRank = 0, whole = 0, replicated = 0;
    double ideal = 0;
    module.walk([&](func::FuncOp func) {
      for (BlockArgument arg : func.getArguments()) {
        unsigned i = arg.getArgNumber();
        if (argumentRole(func, i) != ArgumentRole::Param || !isa<RankedTensorType>(arg.getType()))
          continue;
        int64_t local = tensorBytes(arg);
        auto globalType = func.getArgAttrOfType<TypeAttr>(i, kGlobalTypeAttr);
        auto global = globalType ? cast<RankedTensorType>(globalType.getValue())
                                 : cast<RankedTensorType>(arg.getType());
        int64_t globalBytes =
            local * global.getNumElements() /
            std::max<int64_t>(1, cast<RankedTensorType>(arg.getType()).getNumElements());
        int64_t devices = 1;
        if (auto sharding = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr); sharding && mesh)
          for (int64_t d = 0; d < sharding.getRank(); ++d)
            devices *= pmlir::sharding::devicesOf(mesh, sharding.axesOf(d));
        perRank += local;
        whole += globalBytes;
        ideal += double(globalBytes) / double(devices);
        if (devices == 1)
          replicated += local;
      }
    });
    return llvm::json::Object{{"bytes_per_rank", perRank},
                              {"ideal_bytes_per_rank", static_cast<int64_t>(ideal + 0.5)},
                              {"replicated_bytes_per_rank", replicated},
                              {"unsharded_bytes", whole}};
  }

  llvm::json::Object reportLayer(LayerOp layer, const DenseSet<Value> &params, int64_t tp) {
    // Kept values by the reason they are kept, each counted once.
    llvm::SetVector<Value> kept;
    std::map<std::string, int64_t> byKind;
    auto keep = [&](Value v, StringRef kind) {
      if (!isa<RankedTensorType>(v.getType()) || params.contains(v))
        return;
      // A gathered sequence is kept as its shard.
      if (auto gather = v.getDefiningOp<shard::AllGatherOp>())
        v = gather.getInput();
      if (kept.insert(v))
        byKind[kind.str()] += tensorBytes(v);
    };
    int64_t probabilities = 0;
    bool sequenceParallel = false;
    std::optional<std::array<int64_t, 4>> dims; // b, a, s, h of the first attention
    layer.walk([&](Operation *op) {
      if (auto cost = dyn_cast<CostOpInterface>(op)) {
        SmallVector<SavedValue> saved;
        cost.getSavedForBackward(saved);
        for (SavedValue &v : saved)
          keep(v.value, v.kind);
        probabilities += cost.getSavedInternalBytes();
      }
      if (auto attention = dyn_cast<AttentionOp>(op)) {
        ArrayRef<int64_t> q = attention.getQuery().getType().getShape();
        if (!dims)
          dims = {q[0], q[1] * tp, q[2], q[1] * tp * q[3]};
      } else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op)) {
        sequenceParallel |= scatter.getScatterAxis() == 1;
      }
    });
    byKind["attention_probabilities"] = probabilities;
    int64_t bytes = probabilities;
    for (Value v : kept)
      bytes += tensorBytes(v);

    llvm::json::Object kinds;
    for (auto &[kind, n] : byKind)
      kinds[kind] = n;
    llvm::json::Object entry{{"layer", layer.getIndex()},
                             {"activation_bytes_per_rank", bytes},
                             {"by_kind", std::move(kinds)},
                             {"sequence_parallel", sequenceParallel}};
    if (dims) {
      // Megatron's GPT layer per rank, in bytes: with 16-bit activations
      // and dropout as the paper, and in this accounting (f32, no dropout).
      auto [b, a, s, h] = *dims;
      double sbh = double(s) * b * h, as2b = double(a) * s * s * b, t = double(tp);
      double megatron =
          sequenceParallel ? sbh / t * (34 + 5.0 * a * s / h) : sbh * (10 + 24 / t) + 5 * as2b / t;
      double f32 =
          sequenceParallel ? sbh / t * 64 + 4 * as2b / t : sbh * (16 + 48 / t) + 4 * as2b / t;
      entry["dims"] = llvm::json::Object{{"b", b}, {"s", s}, {"h", h}, {"a", a}, {"t", tp}};
      entry["megatron_gpt_layer_bytes"] =
          llvm::json::Object{{"fp16_with_dropout", static_cast<int64_t>(megatron + 0.5)},
                             {"f32_without_dropout", static_cast<int64_t>(f32 + 0.5)}};
    }
    return entry;
  }
};

} // namespace
