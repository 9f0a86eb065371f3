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

#include "pmlir/Transforms/Passes.h"

#include "JsonReport.h"
#include "pmlir/Sharding/Sharding.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#include <map>

#define DEBUG_TYPE "pmlir-memory-report"

namespace pmlir {
#define GEN_PASS_DEF_MEMORYREPORT
#include "pmlir/Transforms/Passes.h.inc"
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
    module.walk([&](func::FuncOp func) {
      DenseSet<Value> params = parametersOf(func);
      func.walk([&](LayerOp layer) {
        llvm::json::Object entry = reportLayer(layer, params, tp);
        total += *entry.getInteger("activation_bytes_per_rank");
        layers.push_back(std::move(entry));
      });
    });
    llvm::json::Value report = llvm::json::Object{{"mesh", meshJson(module)},
                                                  {"activation_bytes_per_rank", total},
                                                  {"layers", std::move(layers)},
                                                  {"parameters", reportParameters(module, mesh)}};
    if (failed(writeJsonReport(module, output, "memory report", report)))
      return signalPassFailure();
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
      double megatron = sequenceParallel ? sbh / t * (34 + 5.0 * a * s / h)
                                         : sbh * (10 + 24 / t) + 5 * as2b / t;
      double f32 = sequenceParallel ? sbh / t * 64 + 4 * as2b / t
                                    : sbh * (16 + 48 / t) + 4 * as2b / t;
      entry["dims"] = llvm::json::Object{{"b", b}, {"s", s}, {"h", h}, {"a", a}, {"t", tp}};
      entry["megatron_gpt_layer_bytes"] =
          llvm::json::Object{{"fp16_with_dropout", static_cast<int64_t>(megatron + 0.5)},
                             {"f32_without_dropout", static_cast<int64_t>(f32 + 0.5)}};
    }
    return entry;
  }
};

} // namespace
