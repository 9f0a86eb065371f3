//===- Zero.cpp - ZeRO: a training step's model state sharded over dp -----===//
//
// Part of pmlir.
//
// ZeRO (Rajbhandari et al.) as annotations, so that propagation and
// partition make its collectives: each parameter of a training step gets a
// dimension split over the data-parallel axis as well (its "ZeRO
// sharding"), and
// - stage 1 gives it to the optimizer state: the update runs on dp shards,
//   the gradient reaches it reduce-scattered, the new parameter is
//   all-gathered (2 Psi of wire bytes per step, as data parallelism's
//   all-reduce);
// - stage 2 also to each gradient right where the backward pass makes it,
//   so gradients are reduce-scattered layer by layer and accumulated on
//   shards;
// - stage 3 also to the parameter itself, gathered whole right before each
//   use, in the forward and again in the backward pass (3 Psi).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-zero"

namespace pmlir {
#define GEN_PASS_DEF_ZERO
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

struct ZeroPass : public pmlir::impl::ZeroBase<ZeroPass> {
  using ZeroBase::ZeroBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = meshOf(module, "ZeRO");
    if (!mesh)
      return signalPassFailure();
    if (stage < 1 || stage > 3) {
      module.emitError() << "ZeRO has stages 1, 2 and 3, not " << static_cast<int64_t>(stage);
      return signalPassFailure();
    }
    if (mesh.axisIndex(dpAxis) < 0) {
      module.emitError() << "ZeRO shards the model state over the data-parallel axis '" << dpAxis
                         << "', which mesh " << mesh << " does not have";
      return signalPassFailure();
    }
    bool any = false;
    for (auto func : module.getOps<func::FuncOp>())
      if (hasOptimizerState(func)) {
        any = true;
        if (failed(shard(func, mesh)))
          return signalPassFailure();
      }
    if (!any) {
      module.emitError() << "ZeRO shards a training step's optimizer state, and no function "
                            "has one (run pmlir-optimizer first)";
      return signalPassFailure();
    }
    module->setAttr(kZeroStageAttr, IntegerAttr::get(IntegerType::get(&getContext(), 64), stage));
  }

  static bool hasOptimizerState(func::FuncOp func) {
    for (unsigned i = 0; i < func.getNumArguments(); ++i)
      if (argumentRole(func, i) == ArgumentRole::OptimizerState &&
          func.getArgAttr(i, kShardedLikeAttr))
        return true;
    return false;
  }

  /// `base` (the parameter's sharding) with the dp axis added to the
  /// dimension with the most elements per device (after its parts), where
  /// dp divides it evenly if any does; null where no dimension has room.
  ShardingAttr zeroSharding(ShardingAttr base, RankedTensorType type, MeshAttr mesh) {
    int64_t dp = mesh.axisSize(dpAxis);
    int64_t best = -1, bestElements = 0;
    bool bestEven = false;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      int64_t devices = 1;
      for (StringRef a : base.axesOf(d))
        devices *= mesh.axisSize(a);
      int64_t elements = type.getShape()[d] / base.partsOf(d) / devices;
      bool even = elements % dp == 0;
      if (elements < dp || (bestEven && !even) || (even == bestEven && elements <= bestElements))
        continue;
      best = d, bestElements = elements, bestEven = even;
    }
    if (best < 0)
      return {};
    SmallVector<SmallVector<StringRef>> dims;
    for (int64_t d = 0; d < type.getRank(); ++d) {
      dims.push_back(base.axesOf(d));
      if (d == best)
        dims.back().push_back(dpAxis);
    }
    return ShardingAttr::get(base.getContext(), dims, {}, {}, base.getPriority(), base.getParts());
  }

  LogicalResult shard(func::FuncOp func, MeshAttr mesh) {
    MLIRContext *context = &getContext();
    Block &body = func.getBody().front();
    // Each parameter's ZeRO sharding.
    DenseMap<unsigned, ShardingAttr> zero;
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      if (argumentRole(func, i) != ArgumentRole::Param)
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      auto base = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
      if (base && !base.pendingAxes().empty())
        continue;
      // Pinned: a parameter without an annotation is whole on every rank
      // (propagation would otherwise give it the update's dp split).
      if (!base) {
        base = ShardingAttr::replicated(context, type.getRank());
        func.setArgAttr(i, kShardingAttr, base);
      }
      if (llvm::any_of(llvm::seq<int64_t>(0, type.getRank()),
                       [&](int64_t d) { return llvm::is_contained(base.axesOf(d), dpAxis); }))
        return func.emitOpError() << "argument #" << i << " is already split over '" << dpAxis
                                  << "': ZeRO shards replicated parameters over it";
      if (ShardingAttr s = zeroSharding(base, type, mesh))
        zero[i] = s;
    }
    // Stage 1: the optimizer state.
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto like = func.getArgAttrOfType<IntegerAttr>(i, kShardedLikeAttr);
      if (argumentRole(func, i) == ArgumentRole::OptimizerState && like &&
          zero.count(like.getInt()))
        func.setArgAttr(i, kShardingAttr, zero[like.getInt()]);
    }
    OpBuilder b(context);
    auto constrain = [&](Value v, ShardingAttr s) {
      return ShardingConstraintOp::create(b, v.getLoc(), v, s).getResult();
    };
    int64_t gradients = 0, gathers = 0;
    for (auto [i, s] : zero) {
      BlockArgument param = body.getArgument(i);
      for (Operation *user : llvm::make_early_inc_range(param.getUsers())) {
        auto update = dyn_cast<AdamWOp>(user);
        if (!update)
          continue;
        // Stage 1: the gradient reaches the update (and the gradient norm,
        // summed on shards) reduce-scattered, at its first use.
        if (stage == 1) {
          Value g = update.getGrad();
          Operation *first = update;
          for (Operation *other : g.getUsers())
            if (other->getBlock() == first->getBlock() && other->isBeforeInBlock(first))
              first = other;
          b.setInsertionPoint(first);
          Value constrained = constrain(g, s);
          g.replaceUsesWithIf(constrained, [&](OpOperand &use) {
            return use.getOwner() != constrained.getDefiningOp();
          });
          ++gradients;
          continue;
        }
        // Stage 2: each gradient sharded where it is made (each
        // microbatch's before they are summed).
        {
          SmallVector<Value> terms = {update.getGrad()};
          for (size_t t = 0; t < terms.size(); ++t) {
            Value g = terms[t];
            auto sum = g.getDefiningOp<AddOp>();
            if (sum && sum.getLhs().getType() == sum.getRhs().getType() && g.hasOneUse()) {
              terms.push_back(sum.getLhs());
              terms.push_back(sum.getRhs());
              continue;
            }
            b.setInsertionPointAfterValue(g);
            Value constrained = constrain(g, s);
            g.replaceUsesWithIf(constrained, [&](OpOperand &use) {
              return use.getOwner() != constrained.getDefiningOp();
            });
            ++gradients;
          }
        }
      }
      // Stage 3: the parameter itself, gathered to its own sharding right
      // before its uses, once per block (forward and backward layers
      // gather it each).
      if (stage >= 3) {
        auto base = func.getArgAttrOfType<ShardingAttr>(i, kShardingAttr);
        if (!base)
          base =
              ShardingAttr::replicated(context, cast<RankedTensorType>(param.getType()).getRank());
        func.setArgAttr(i, kShardingAttr, s);
        DenseMap<Block *, Value> gathered;
        for (OpOperand &use : llvm::make_early_inc_range(param.getUses())) {
          Operation *user = use.getOwner();
          if (isa<AdamWOp>(user))
            continue;
          Value &whole = gathered[user->getBlock()];
          if (!whole) {
            b.setInsertionPoint(user);
            whole = constrain(param, base);
            ++gathers;
          } else if (user->isBeforeInBlock(whole.getDefiningOp())) {
            whole.getDefiningOp()->moveBefore(user);
          }
          use.set(whole);
        }
      }
    }
    LLVM_DEBUG(llvm::dbgs() << "@" << func.getSymName() << ": ZeRO-" << stage << " on "
                            << zero.size() << " parameters, " << gradients << " gradients sharded, "
                            << gathers << " gathers\n");
    return success();
  }
};

} // namespace
