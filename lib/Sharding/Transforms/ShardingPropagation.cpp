//===- ShardingPropagation.cpp - Complete the shardings of a global program ===//
//
// Part of pmlir.
//
// Seeds are the shardings the user gave: `tfm.sharding` on function
// arguments and results and `tfm.sharding_constraint` ops. The pass checks
// them against the mesh, hands them to the sharding engine
// (pmlir/Sharding/Propagation.h: rounds of increasing priority, forward and
// backward over the ops' factor rules, conflicts decided by the tensor bytes
// behind each proposal, pending sums through linear ops) and writes what it
// returns: each op gets `tfm.shardings`, one #tfm.sharding per result, seeds
// with open dimensions their extended sharding, and values nothing reached
// are replicated.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Propagation.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-sharding-propagation"

namespace pmlir {
#define GEN_PASS_DEF_SHARDINGPROPAGATION
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;

namespace {

struct ShardingPropagationPass
    : public pmlir::impl::ShardingPropagationBase<ShardingPropagationPass> {
  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "propagating shardings\n");
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    MeshAttr mesh = meshOf(module, "sharding propagation");
    if (!mesh)
      return signalPassFailure();
    // A declaration has no values to shard.
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(propagate(func, mesh, context)))
        return signalPassFailure();
  }

  LogicalResult propagate(func::FuncOp func, MeshAttr mesh, MLIRContext *context) {
    // The user annotations: on arguments, constraints and results.
    std::vector<ShardingSeed> seeds;
    SmallVector<ShardingAttr> seedAttrs;
    auto atFunc = [&]() {
      return mlir::emitError(func.getLoc()) << "@" << func.getSymName() << ": ";
    };
    // An argument without a sharding of its own that is sharded like
    // another (a parameter's optimizer state) takes that one's.
    for (BlockArgument arg : func.getArguments()) {
      unsigned i = arg.getArgNumber();
      auto like = func.getArgAttrOfType<IntegerAttr>(i, kShardedLikeAttr);
      if (!like || func.getArgAttr(i, kShardingAttr))
        continue;
      if (like.getInt() < 0 || like.getInt() >= func.getNumArguments() ||
          func.getArgumentTypes()[like.getInt()] != arg.getType())
        return atFunc() << "argument #" << i << " is tfm.sharded_like argument #" << like.getInt()
                        << ", which is no argument of its type";
      if (auto attr = func.getArgAttrOfType<ShardingAttr>(like.getInt(), kShardingAttr))
        func.setArgAttr(i, kShardingAttr, attr);
    }
    for (BlockArgument arg : func.getArguments())
      if (auto attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), kShardingAttr)) {
        FailureOr<Sharding> s = checkSharding(mesh, arg, attr, atFunc,
                                              "argument #" + std::to_string(arg.getArgNumber()));
        if (failed(s))
          return failure();
        if (!attr.pendingAxes().empty())
          return atFunc() << "argument #" << arg.getArgNumber() << " has pending axes in " << attr
                          << "; an input is a full value";
        seeds.push_back({arg, *s, SmallVector<int64_t>(attr.getOpen()), attr.getPriority()});
        seedAttrs.push_back(attr);
      }
    WalkResult walked = func.walk([&](ShardingConstraintOp constraint) {
      FailureOr<Sharding> s = checkSharding(
          mesh, constraint.getResult(), constraint.getSharding(),
          [&]() { return constraint.emitOpError(); }, "the constraint");
      if (failed(s))
        return WalkResult::interrupt();
      ShardingAttr attr = constraint.getSharding();
      seeds.push_back(
          {constraint.getResult(), *s, SmallVector<int64_t>(attr.getOpen()), attr.getPriority()});
      seedAttrs.push_back(attr);
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return failure();
    // A parameter's gradient or updated value (tfm.sharded_like) is
    // sharded as its parameter is annotated, unless its result has a
    // sharding of its own.
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto like = func.getResultAttrOfType<IntegerAttr>(i, kShardedLikeAttr);
      if (!like || func.getResultAttr(i, kShardingAttr))
        continue;
      if (like.getInt() < 0 || like.getInt() >= func.getNumArguments())
        return atFunc() << "result #" << i << " is tfm.sharded_like argument #" << like.getInt()
                        << ", which the function does not have";
      unsigned arg = like.getInt();
      auto attr = func.getArgAttrOfType<ShardingAttr>(arg, kShardingAttr);
      if (!attr)
        continue;
      if (func.getArgument(arg).getType() != ret.getOperand(i).getType())
        return atFunc() << "result #" << i << " of type " << ret.getOperand(i).getType()
                        << " is tfm.sharded_like argument #" << arg << " of type "
                        << func.getArgument(arg).getType();
      FailureOr<Sharding> s =
          checkSharding(mesh, ret.getOperand(i), attr, atFunc, "result #" + std::to_string(i));
      if (failed(s))
        return failure();
      seeds.push_back(
          {ret.getOperand(i), *s, SmallVector<int64_t>(attr.getOpen()), attr.getPriority()});
      seedAttrs.push_back(attr);
    }
    // A returned value takes its result's sharding when nothing else gives
    // it one.
    std::vector<std::pair<Value, Sharding>> resultHints;
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (auto attr = func.getResultAttrOfType<ShardingAttr>(i, kShardingAttr)) {
        FailureOr<Sharding> s =
            checkSharding(mesh, ret.getOperand(i), attr, atFunc, "result #" + std::to_string(i));
        if (failed(s))
          return failure();
        s->pending.clear();
        resultHints.push_back({ret.getOperand(i), *s});
      }

    ShardingMap known = propagateShardings(func, mesh, seeds, resultHints);

    // Annotations whose open dimensions propagation split further say so.
    for (auto [seed, attr] : llvm::zip(seeds, seedAttrs)) {
      if (attr.getOpen().empty())
        continue;
      ShardingAttr final = known[seed.value].toAttr(context);
      if (auto arg = dyn_cast<BlockArgument>(seed.value))
        func.setArgAttr(arg.getArgNumber(), kShardingAttr, final);
      else if (auto constraint = seed.value.getDefiningOp<ShardingConstraintOp>())
        constraint.setShardingAttr(final);
    }

    // Write the shardings; what nothing reached is replicated.
    auto attrOf = [&](Value v) {
      auto it = known.find(v);
      if (it == known.end())
        return ShardingAttr::replicated(context, cast<RankedTensorType>(v.getType()).getRank());
      return it->second.toAttr(context);
    };
    func.walk([&](Operation *op) {
      if (op->getNumResults() == 0 || op->hasTrait<mlir::OpTrait::IsTerminator>() ||
          !llvm::all_of(op->getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); }))
        return;
      if (!isa<TfmDialect, pmlir::pipe::PipeDialect>(op->getDialect()))
        return;
      SmallVector<Attribute> shardings;
      for (Value r : op->getResults())
        shardings.push_back(attrOf(r));
      op->setAttr(kResultShardingsAttr, ArrayAttr::get(context, shardings));
    });
    for (BlockArgument arg : func.getArguments())
      if (!func.getArgAttr(arg.getArgNumber(), kShardingAttr) &&
          isa<RankedTensorType>(arg.getType()))
        func.setArgAttr(arg.getArgNumber(), kShardingAttr, attrOf(arg));
    for (unsigned i = 0; i < func.getNumResults(); ++i)
      if (!func.getResultAttr(i, kShardingAttr) && isa<RankedTensorType>(func.getResultTypes()[i]))
        func.setResultAttr(i, kShardingAttr,
                           known.count(ret.getOperand(i))
                               ? known[ret.getOperand(i)].toAttr(context, /*withPending=*/false)
                               : attrOf(ret.getOperand(i)));
    return success();
  }
};

} // namespace
