//===- MegatronRecipe.cpp - Annotate a model as Megatron-LM shards it ------===//
//
// Part of pmlir.
//
// Annotations only: the weights Megatron splits get their sharding, the
// token ids their batch split, and sharding propagation derives the rest
// (activations, biases, pending sums). Weights are recognized by their
// Hugging Face names and their dimension roles (tfm.dims), so GPT-2 and
// Llama checkpoints from pmlir-gen are covered:
//   column-parallel (split "out" on tp): attn.c_attn, mlp.c_fc, q_proj,
//     k_proj, v_proj, gate_proj, up_proj, and the shared experts' w1, w3;
//   row-parallel (split "in" on tp): attn.c_proj, mlp.c_proj, o_proj,
//     down_proj, and the shared experts' w2;
//   vocab-parallel (split "vocab" on tp): wte, embed_tokens, lm_head; a
//     vocabulary tp does not divide is padded, as Megatron pads it (each
//     shard holds ceil(V / tp) rows, the last ones padding);
//   data-parallel: every argument's "batch" dimension on dp, then ep;
//   expert-parallel: every "expert" dimension (Mixtral's stacked experts)
//     on ep: each device holds whole experts, and tfm.moe_experts sends
//     each token's rows to its experts' devices;
//   context-parallel: every argument's "seq" dimension on cp (the token ids
//     and labels; propagation carries the split through the whole model,
//     and attention's keys and values are gathered over cp unless a
//     context-parallel attention pass rewrites them).
// With fewer key/value heads than tp, k_proj and v_proj split over the
// major part of tp ("tp:(1)K" for K heads): each device keeps the head its
// query heads read, replicated over the minor part, as Megatron does.
// GPT-2's fused QKV weight and bias are cut by tfm.split into Q, K and V; a
// contiguous split of the fused dimension would give a device parts of two
// projections, so each part is split over tp instead (`parts = [..., 3]`):
// a device holds its heads of q, k and v, a third of the fused weight each.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/SafeTensors.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-megatron-recipe"

namespace pmlir {
#define GEN_PASS_DEF_MEGATRONRECIPE
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

enum class Role { None, Column, Row, Vocab };

/// Whether `name` is a stacked expert weight (pmlir-gen's Mixtral names
/// them with kStackIndex for the expert); the router has an expert
/// dimension too, but every device routes its own tokens over all experts.
bool isRoutedExpert(StringRef name) {
  return name.contains(".experts." + std::string(1, pmlir::kStackIndex) + ".");
}

Role roleOf(StringRef name) {
  auto endsWith = [&](StringRef part) {
    return name.ends_with("." + part.str() + ".weight") ||
           name.ends_with("." + part.str() + ".bias") || name.starts_with(part.str() + ".");
  };
  if (isRoutedExpert(name))
    return name.ends_with(".w2.weight")                                   ? Role::Row
           : name.ends_with(".w1.weight") || name.ends_with(".w3.weight") ? Role::Column
                                                                          : Role::None;
  for (StringRef part : {"attn.c_attn", "mlp.c_fc", "q_proj", "k_proj", "v_proj", "gate_proj",
                         "up_proj", "shared_experts.w1", "shared_experts.w3"})
    if (endsWith(part))
      return Role::Column;
  for (StringRef part : {"attn.c_proj", "mlp.c_proj", "o_proj", "down_proj", "shared_experts.w2"})
    if (endsWith(part))
      return name.ends_with(".bias") ? Role::None : Role::Row;
  for (StringRef part : {"wte", "embed_tokens", "lm_head"})
    if (endsWith(part))
      return Role::Vocab;
  return Role::None;
}

struct MegatronRecipePass : public pmlir::impl::MegatronRecipeBase<MegatronRecipePass> {
  using MegatronRecipeBase::MegatronRecipeBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "Megatron recipe on " << getOperation()->getName() << "\n");
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    MeshAttr mesh = meshOf(module, "the megatron recipe");
    if (!mesh)
      return signalPassFailure();
    // An axis option set otherwise than its default names an axis of the
    // mesh: a misspelt one would leave its parallelism out unseen.
    for (auto [option, value, fallback] :
         {std::tuple<const char *, StringRef, StringRef>{"tp-axis", tpAxis, "tp"},
          {"dp-axis", dpAxis, "dp"},
          {"cp-axis", cpAxis, "cp"},
          {"ep-axis", epAxis, "ep"},
          {"pipeline-axis", pipelineAxis, "pp"}})
      if (value != fallback && mesh.axisIndex(value) < 0) {
        emitError(module.getLoc()) << "the megatron recipe: " << option << " '" << value
                                   << "' is no axis of the mesh " << mesh;
        return signalPassFailure();
      }
    // Each role its own axis: an axis in two roles would shard one value
    // twice over it (or conflict with itself) and leave another axis idle.
    std::pair<const char *, StringRef> roles[] = {{"tp-axis", tpAxis},
                                                  {"dp-axis", dpAxis},
                                                  {"cp-axis", cpAxis},
                                                  {"ep-axis", epAxis},
                                                  {"pipeline-axis", pipelineAxis}};
    for (size_t a = 0; a < std::size(roles); ++a)
      for (size_t b = a + 1; b < std::size(roles); ++b)
        if (roles[a].second == roles[b].second) {
          emitError(module.getLoc())
              << "the megatron recipe: " << roles[a].first << " and " << roles[b].first
              << " both name '" << roles[a].second << "': each role needs its own mesh axis";
          return signalPassFailure();
        }
    bool tp = mesh.axisIndex(tpAxis) >= 0, dp = mesh.axisIndex(dpAxis) >= 0;
    bool cp = mesh.axisIndex(cpAxis) >= 0, ep = mesh.axisIndex(epAxis) >= 0;
    // A mesh of pipeline stages alone (Megatron's TP = 1): the recipe has
    // nothing to shard, and pmlir-pipeline-partition does the rest.
    if (!tp && !dp && !cp && !ep && llvm::all_of(mesh.getAxes(), [&](StringAttr axis) {
          return axis.getValue() == pipelineAxis;
        })) {
      LLVM_DEBUG(llvm::dbgs() << "mesh " << mesh << " has only the pipeline axis\n");
      return;
    }
    if (!tp && !dp && !cp && !ep) {
      emitError(module.getLoc()) << "the megatron recipe shards over mesh axes '" << tpAxis
                                 << "' (tensor parallel), '" << dpAxis << "' (data parallel), '"
                                 << cpAxis << "' (context parallel) and '" << epAxis
                                 << "' (expert parallel), and mesh " << mesh
                                 << " has none of them; name an axis so, or annotate by hand";
      return signalPassFailure();
    }
    if (ep && failed(checkExperts(module, mesh.axisSize(epAxis))))
      return signalPassFailure();
    if (tp && failed(checkHeads(module, mesh.axisSize(tpAxis))))
      return signalPassFailure();
    for (auto func : module.getOps<func::FuncOp>()) {
      for (BlockArgument arg : func.getArguments()) {
        unsigned i = arg.getArgNumber();
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        auto name = func.getArgAttrOfType<StringAttr>(i, kNameAttr);
        auto roles = func.getArgAttrOfType<ArrayAttr>(i, kDimsAttr);
        if (!type || !roles || func.getArgAttr(i, kShardingAttr))
          continue;
        SmallVector<SmallVector<StringRef>> dims(type.getRank());
        auto dimWithRole = [&](StringRef role) -> int64_t {
          for (auto [d, r] : llvm::enumerate(roles))
            if (auto s = dyn_cast<StringAttr>(r); s && s.getValue() == role)
              return d;
          return -1;
        };
        if (dp && dimWithRole("batch") >= 0)
          dims[dimWithRole("batch")].push_back(dpAxis);
        if (ep && dimWithRole("batch") >= 0)
          dims[dimWithRole("batch")].push_back(epAxis);
        if (ep && dimWithRole("expert") >= 0 && name && isRoutedExpert(name.getValue()))
          dims[dimWithRole("expert")].push_back(epAxis);
        if (int64_t seq = dimWithRole("seq"); cp && seq >= 0) {
          // Sequence shards are not padded: a padded key would be attended.
          int64_t cpSize = mesh.axisSize(cpAxis);
          if (type.getDimSize(seq) % cpSize != 0) {
            InFlightDiagnostic diag = emitError(arg.getLoc()) << "argument #" << i;
            if (name)
              diag << " ('" << name.getValue() << "')";
            diag << " has a sequence of " << type.getDimSize(seq) << ", which " << cpAxis << " = "
                 << cpSize << " does not divide (context parallelism splits the sequence "
                 << "into equal shards)";
            return signalPassFailure();
          }
          dims[seq].push_back(cpAxis);
        }
        Role role = name && tp ? roleOf(name.getValue()) : Role::None;
        int64_t split = role == Role::Column  ? dimWithRole("out")
                        : role == Role::Row   ? dimWithRole("in")
                        : role == Role::Vocab ? dimWithRole("vocab")
                                              : -1;
        SmallVector<int64_t> parts;
        if (split >= 0) {
          if (auto fused = fusedSplit(arg, split)) {
            // Each projection's part split over tp: a device holds its
            // heads of q, k and v and nothing else.
            parts.assign(type.getRank(), 1);
            parts[split] = fused.getNumResults();
            dims[split].push_back(tpAxis);
          } else if (int64_t heads = projectedHeads(arg);
                     role == Role::Column && heads > 0 && heads < mesh.axisSize(tpAxis)) {
            // Fewer key/value heads than tp: each device keeps the one its
            // query heads read, as Megatron replicates them; the heads
            // split over the major part of tp, the minor part replicates.
            // One head (multi-query attention) is whole on every device.
            if (heads > 1)
              dims[split].push_back(mesh.subAxisName(mesh.axisIndex(tpAxis), 1, heads));
          } else {
            dims[split].push_back(tpAxis);
          }
        }
        if (llvm::any_of(dims, [](const auto &axes) { return !axes.empty(); }))
          func.setArgAttr(i, kShardingAttr,
                          ShardingAttr::get(context, dims, {}, /*open=*/{}, /*priority=*/0, parts));
      }
    }
  }

  /// Expert parallelism splits whole experts: the model has experts, and
  /// ep divides every expert dimension.
  LogicalResult checkExperts(ModuleOp module, int64_t epSize) {
    bool any = false;
    for (auto func : module.getOps<func::FuncOp>())
      for (BlockArgument arg : func.getArguments()) {
        auto roles = func.getArgAttrOfType<ArrayAttr>(arg.getArgNumber(), kDimsAttr);
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        auto weight = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), kNameAttr);
        if (!roles || !type || !weight || !isRoutedExpert(weight.getValue()))
          continue;
        for (auto [d, role] : llvm::enumerate(roles)) {
          auto name = dyn_cast<StringAttr>(role);
          if (!name || name.getValue() != "expert")
            continue;
          any = true;
          if (type.getDimSize(d) % epSize == 0)
            continue;
          return emitError(arg.getLoc())
                 << "argument #" << arg.getArgNumber() << " ('" << weight.getValue() << "') has "
                 << type.getDimSize(d) << " experts, which " << epAxis << " = " << epSize
                 << " does not divide (expert parallelism gives each device whole experts)";
        }
      }
    if (any)
      return success();
    return emitError(module.getLoc())
           << "mesh axis '" << epAxis << "' splits experts, and the model has none (a dense "
           << "model: split its batch over '" << dpAxis << "')";
  }

  /// Megatron splits attention by heads: tp must divide the query heads,
  /// and the kv heads or be a multiple of them.
  LogicalResult checkHeads(ModuleOp module, int64_t tpSize) {
    WalkResult walked = module.walk([&](AttentionOp op) {
      int64_t heads = op.getQuery().getType().getShape()[1];
      int64_t kvHeads = op.getKey().getType().getShape()[1];
      if (heads % tpSize != 0) {
        op.emitOpError() << "has " << heads << " query heads, which " << tpAxis << " = " << tpSize
                         << " does not divide (Megatron splits attention by heads)";
        return WalkResult::interrupt();
      }
      if (kvHeads % tpSize != 0 && tpSize % kvHeads != 0) {
        op.emitOpError() << "has " << kvHeads << " key/value heads; " << tpAxis << " = " << tpSize
                         << " must divide them or be a multiple of them";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(walked.wasInterrupted());
  }

  /// The heads of the projection `arg` is the weight of (its matmul's
  /// result split into heads), or 0.
  static int64_t projectedHeads(Value arg) {
    for (Operation *user : arg.getUsers())
      if (isa<MatmulOp>(user))
        for (Operation *next : user->getResult(0).getUsers())
          if (auto heads = dyn_cast<SplitHeadsOp>(next))
            return heads.getHeads();
    return 0;
  }

  /// The tfm.split that cuts `arg` along `dim` into projections, if every
  /// use of `arg` is such a split (a training program splits it again in
  /// the backward pass) or reads it elementwise (an optimizer's update,
  /// which keeps any parts).
  static SplitOp fusedSplit(Value arg, int64_t dim) {
    SplitOp first;
    for (OpOperand &use : arg.getUses()) {
      auto split = dyn_cast<SplitOp>(use.getOwner());
      if (!split) {
        if (readsElementwise(use))
          continue;
        return {};
      }
      if (static_cast<int64_t>(split.getDim()) != dim ||
          (first && split.getNumResults() != first.getNumResults()))
        return {};
      first = first ? first : split;
    }
    return first;
  }

  /// Whether the op of `use` reads the operand elementwise: each of its
  /// dimensions one parallel factor of the op's rule.
  static bool readsElementwise(OpOperand &use) {
    std::optional<ShardingRule> rule = getShardingRule(use.getOwner());
    if (!rule || use.getOperandNumber() >= rule->operands.size() ||
        !rule->operands[use.getOperandNumber()])
      return false;
    return llvm::all_of(
        *rule->operands[use.getOperandNumber()], [&](const SmallVector<int64_t> &factors) {
          return factors.size() == 1 && rule->factors[factors.front()].kind == FactorKind::Parallel;
        });
  }
};

} // namespace
