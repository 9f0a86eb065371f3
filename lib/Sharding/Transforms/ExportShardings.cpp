//===- ExportShardings.cpp - tfm shardings as upstream shard annotations --===//
//
// Part of pmlir.
//
// Writes the user's shardings of a global program (tfm.sharding on function
// arguments and results, tfm.sharding_constraint) as the annotations of
// upstream MLIR's shard dialect: a shard.grid from tfm.mesh and shard.shard
// ops, so that upstream's sharding-propagation and shard-partition can take
// the same program with the same annotations. pmlir measures its plans
// against upstream's this way (bench/upstream_sharding.py).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-export-shardings"

namespace pmlir {
#define GEN_PASS_DEF_EXPORTSHARDINGS
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

using pmlir::kGridName;

struct ExportShardingsPass : public pmlir::impl::ExportShardingsBase<ExportShardingsPass> {
  MeshAttr mesh;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "exporting shardings to the shard dialect\n");
    ModuleOp module = getOperation();
    if (!(mesh = meshOf(module, "exporting shardings")))
      return signalPassFailure();
    OpBuilder b(module.getBodyRegion());
    if (!module.lookupSymbol(kGridName))
      shard::GridOp::create(b, module.getLoc(), kGridName, mesh.getSizes());
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(exportFunction(func)))
        return signalPassFailure();
  }

  /// `value` annotated with `sharding` by a shard.shard op at `b`, or an
  /// error at `where`: upstream annotations have no pending sums.
  FailureOr<Value> annotate(OpBuilder &b, Location loc, Value value, ShardingAttr sharding,
                            Operation *where) {
    if (!sharding.pendingAxes().empty())
      return where->emitOpError() << "has the sharding " << sharding
                                  << ", whose pending sum upstream shard annotations cannot "
                                     "express";
    if (!sharding.getParts().empty())
      return where->emitOpError() << "has the sharding " << sharding
                                  << ", whose dimensions of parts upstream shard annotations "
                                     "cannot express";
    SmallVector<shard::GridAxesAttr> splitAxes;
    for (int64_t d = 0; d < sharding.getRank(); ++d) {
      SmallVector<int16_t> axes;
      for (StringRef a : sharding.axesOf(d)) {
        if (mesh.axisIndex(a) < 0 && mesh.subAxis(a))
          return where->emitOpError() << "has the sharding " << sharding << " with the sub-axis '"
                                      << a << "', which upstream shard annotations cannot express";
        if (mesh.axisIndex(a) < 0)
          return where->emitOpError() << "has the sharding " << sharding << " naming mesh axis '"
                                      << a << "', which the mesh " << mesh << " does not have";
        axes.push_back(static_cast<int16_t>(mesh.axisIndex(a)));
      }
      splitAxes.push_back(b.getDenseI16ArrayAttr(axes));
    }
    Value s = shard::ShardingOp::create(b, loc, kGridName, splitAxes);
    return shard::ShardOp::create(b, loc, value, s).getResult();
  }

  LogicalResult exportFunction(func::FuncOp func) {
    Block &entry = func.getBody().front();
    OpBuilder b = OpBuilder::atBlockBegin(&entry);
    for (BlockArgument arg : entry.getArguments()) {
      auto sharding = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), kShardingAttr);
      if (!sharding)
        continue;
      func.removeArgAttr(arg.getArgNumber(), kShardingAttr);
      if (sharding.isReplicated())
        continue;
      FailureOr<Value> annotated = annotate(b, arg.getLoc(), arg, sharding, func);
      if (failed(annotated))
        return failure();
      arg.replaceAllUsesExcept(*annotated, annotated->getDefiningOp());
    }
    WalkResult walked = func.walk([&](ShardingConstraintOp op) {
      OpBuilder at(op);
      FailureOr<Value> annotated = annotate(at, op.getLoc(), op.getInput(), op.getSharding(), op);
      if (failed(annotated))
        return WalkResult::interrupt();
      op.getResult().replaceAllUsesWith(*annotated);
      op.erase();
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return failure();
    Operation *ret = entry.getTerminator();
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto sharding = func.getResultAttrOfType<ShardingAttr>(i, kShardingAttr);
      if (!sharding)
        continue;
      func.removeResultAttr(i, StringAttr::get(func.getContext(), kShardingAttr));
      OpBuilder at(ret);
      FailureOr<Value> annotated = annotate(at, ret->getLoc(), ret->getOperand(i), sharding, func);
      if (failed(annotated))
        return failure();
      ret->setOperand(i, *annotated);
    }
    return success();
  }
};

} // namespace
