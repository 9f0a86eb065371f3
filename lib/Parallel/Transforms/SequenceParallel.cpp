//===- SequenceParallel.cpp - Megatron's sequence parallelism -------------===//
//
// Part of pmlir.
//
// On a partitioned program: each all_reduce (sum) over the tensor-parallel
// axis whose result feeds sequence-local ops (residual adds, bias adds,
// norms, activations: every position computed alone) becomes a
// reduce_scatter along the sequence dimension, those ops run on the
// rank's sequence shard, and an all_gather along the sequence restores
// the full sequence right before the first op that needs it (the next
// column-parallel matmul, the attention, the LM head, the function's
// return). The region grows through chains of sequence-local ops and
// through layer results, so the residual stream between layers stays a
// sequence shard. A full operand the region meets (GPT-2's position table,
// a residual from outside) is sliced locally (all_slice, no communication).
// Bytes do not change: a reduce_scatter and an all_gather move what one
// all_reduce moves; activations of the region shrink by the tp size.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Parallel/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Grid.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-sequence-parallel"

namespace pmlir {
#define GEN_PASS_DEF_SEQUENCEPARALLEL
#include "pmlir/Parallel/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

/// Ops that compute each sequence position from that position alone.
bool isSequenceLocal(Operation *op) { return op->hasTrait<pmlir::tfm::OpTrait::SequenceLocal>(); }

struct SequenceParallelPass : public pmlir::impl::SequenceParallelBase<SequenceParallelPass> {
  using SequenceParallelBase::SequenceParallelBase;

  int64_t seqDim = 1;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "sequence parallelism\n");
    ModuleOp module = getOperation();
    MeshAttr mesh = meshOf(module, "sequence parallelism");
    if (!mesh)
      return signalPassFailure();
    if (mesh.axisIndex(tpAxis) < 0) {
      emitError(module.getLoc()) << "sequence parallelism needs the mesh axis '" << tpAxis
                                 << "', which the mesh " << mesh << " does not have";
      return signalPassFailure();
    }
    auto gridOp = dyn_cast_or_null<shard::GridOp>(module.lookupSymbol(pmlir::kGridName));
    if (!gridOp) {
      emitError(module.getLoc())
          << "sequence parallelism runs on a partitioned program (shard.grid "
             "@mesh); run pmlir-partition first";
      return signalPassFailure();
    }
    FailureOr<pmlir::sharding::Grid> grid = pmlir::sharding::Grid::declaredBy(gridOp, mesh);
    if (failed(grid))
      return signalPassFailure();
    // tp on the grid: one grid axis, or its parts where the program cut it.
    StringRef tp = tpAxis;
    SmallVector<int16_t> axes = grid->axesOf(tp);
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal() && failed(rewrite(func, axes, mesh.axisSize(tpAxis))))
        return signalPassFailure();
  }

  /// `type` with the sequence dimension divided by `parts`.
  RankedTensorType shardType(Type type, int64_t parts, int64_t dim) const {
    auto tensor = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(tensor.getShape());
    shape[dim] /= parts;
    return tensor.clone(shape);
  }

  LogicalResult rewrite(func::FuncOp func, ArrayRef<int16_t> axes, int64_t tp) {
    // The all-reduces that start a region: a sum over tp alone, of a
    // tensor with a sequence dimension, feeding a sequence-local op.
    SmallVector<shard::AllReduceOp> starts;
    func.walk([&](shard::AllReduceOp op) {
      auto type = cast<RankedTensorType>(op.getResult().getType());
      if (op.getReduction() == shard::ReductionKind::Sum && op.getGridAxes() == axes &&
          type.getRank() > seqDim && llvm::any_of(op->getUsers(), isSequenceLocal))
        starts.push_back(op);
    });

    // Grow the region: values that become sequence shards.
    llvm::SetVector<Value> region;
    SmallVector<Operation *> regionOps;
    SmallVector<OpOperand *> exits; // uses that need the full sequence
    SmallVector<Value> worklist;
    for (shard::AllReduceOp op : starts) {
      auto type = cast<RankedTensorType>(op.getResult().getType());
      if (type.getShape()[seqDim] % tp != 0)
        return op.emitOpError() << "reduces a tensor of type " << type
                                << " whose sequence (dimension " << seqDim << ", size "
                                << type.getShape()[seqDim] << ") " << tpAxis << " = " << tp
                                << " does not divide: sequence parallelism splits the "
                                   "sequence over "
                                << tpAxis;
      region.insert(op.getResult());
      worklist.push_back(op.getResult());
    }
    while (!worklist.empty()) {
      Value v = worklist.pop_back_val();
      for (OpOperand &use : v.getUses()) {
        Operation *user = use.getOwner();
        if (isSequenceLocal(user) && user->getResult(0).getType() == v.getType()) {
          if (!llvm::is_contained(regionOps, user))
            regionOps.push_back(user);
          if (region.insert(user->getResult(0)))
            worklist.push_back(user->getResult(0));
        } else if (user->hasTrait<mlir::OpTrait::IsTerminator>() &&
                   user->getParentOp()->hasTrait<pmlir::tfm::OpTrait::InlineBody>()) {
          Value result = user->getParentOp()->getResult(use.getOperandNumber());
          if (region.insert(result))
            worklist.push_back(result);
        } else {
          exits.push_back(&use);
        }
      }
    }

    OpBuilder b(func.getContext());
    // Full operands a region op meets are sliced along the sequence: a
    // same-shape tensor at its sequence dimension, a trailing-suffix one
    // (a position table) where it has that dimension.
    for (Operation *op : regionOps) {
      int64_t rank = cast<RankedTensorType>(op->getResult(0).getType()).getRank();
      for (OpOperand &operand : op->getOpOperands()) {
        Value v = operand.get();
        auto type = dyn_cast<RankedTensorType>(v.getType());
        int64_t dim = type ? seqDim - (rank - type.getRank()) : -1;
        if (region.contains(v) || dim < 0)
          continue;
        if (type.getShape()[dim] % tp != 0)
          return op->emitOpError() << "meets operand #" << operand.getOperandNumber() << " of type "
                                   << type << " on the sequence shards, but " << tpAxis << " = "
                                   << tp << " does not divide its dimension " << dim;
        b.setInsertionPoint(op);
        Value slice = shard::AllSliceOp::create(b, op->getLoc(), shardType(type, tp, dim), v,
                                                pmlir::kGridName, axes, dim);
        operand.set(slice);
      }
    }
    // Uses that need the full sequence get it back, once per value and
    // block, right before the first such use. In the order the uses were
    // found, never by address: every rank compiles its own program, and
    // two gathers before one op must come in the same order on all of them.
    llvm::MapVector<std::pair<Value, Block *>, SmallVector<OpOperand *>> exitsByBlock;
    for (OpOperand *use : exits)
      exitsByBlock[{use->get(), use->getOwner()->getBlock()}].push_back(use);
    for (auto &[key, uses] : exitsByBlock) {
      Operation *first = uses.front()->getOwner();
      for (OpOperand *use : uses)
        if (use->getOwner()->isBeforeInBlock(first))
          first = use->getOwner();
      Value v = uses.front()->get();
      b.setInsertionPoint(first);
      Value full = shard::AllGatherOp::create(b, first->getLoc(), v.getType(), pmlir::kGridName,
                                              axes, v, APInt(64, seqDim));
      for (OpOperand *use : uses)
        use->set(full);
    }
    // The region's values become shards; its all-reduces reduce-scatters.
    for (Value v : region)
      v.setType(shardType(v.getType(), tp, seqDim));
    for (shard::AllReduceOp op : starts) {
      b.setInsertionPoint(op);
      Value scattered = shard::ReduceScatterOp::create(
          b, op.getLoc(), op.getResult().getType(), pmlir::kGridName, axes, op.getInput(),
          shard::ReductionKind::Sum, APInt(64, seqDim));
      op.getResult().replaceAllUsesWith(scattered);
      op.erase();
    }
    return success();
  }
};

} // namespace
