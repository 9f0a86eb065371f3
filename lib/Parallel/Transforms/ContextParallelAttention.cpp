//===- ContextParallelAttention.cpp - Attention's shardings under cp -----===//
//
// Part of pmlir.
//
// On a global program whose sequence propagation split over the cp axis,
// the shardings each context-parallel attention variant needs, pinned with
// sharding constraints; propagation runs again over them.
//
// ulysses (DeepSpeed-Ulysses): each attention and attention gradient runs
// on the whole sequence for a cp-th of the heads. Its operands are pinned
// to heads shards, its results back to sequence shards (the key and value
// gradients complete), so pmlir-partition reshards across each with one
// all_to_all: four per attention in the forward, b·s·h/cp elements each.
//
// ring: the attention gradient's key and value gradients are pinned to
// sequence shards, complete, so that pmlir-partition reduce-scatters them
// right at the op, where pmlir-ring-attention finds the pattern it replaces
// (otherwise the sums stay pending through the projections' gradients).
//
// allgather needs nothing: propagation gathers the keys and values.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Parallel/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Sharding.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-context-parallel-attention"

namespace pmlir {
#define GEN_PASS_DEF_CONTEXTPARALLELATTENTION
#include "pmlir/Parallel/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;

namespace {

// Attention's tensors are [batch, heads, seq, ...] for every result.
constexpr size_t kHeadsDim = 1, kSeqDim = 2;

struct ContextParallelAttentionPass
    : public pmlir::impl::ContextParallelAttentionBase<ContextParallelAttentionPass> {
  using ContextParallelAttentionBase::ContextParallelAttentionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MeshAttr mesh = meshOf(module, "context-parallel attention");
    if (!mesh)
      return signalPassFailure();
    if (mesh.axisIndex(axis) < 0) {
      emitError(module.getLoc())
          << "context-parallel attention splits the sequence over mesh axis '" << axis
          << "', which mesh " << mesh << " does not have";
      return signalPassFailure();
    }
    if (attention == pmlir::ContextAttention::AllGather)
      return;
    int64_t rewritten = 0;
    WalkResult walked = module.walk([&](Operation *op) {
      if (!isa<AttentionOp, AttentionGradOp>(op) ||
          (attention == pmlir::ContextAttention::Ring && !isa<AttentionGradOp>(op)))
        return WalkResult::advance();
      FailureOr<bool> moved =
          pin(op, mesh, /*onHeads=*/attention == pmlir::ContextAttention::Ulysses);
      if (failed(moved))
        return WalkResult::interrupt();
      rewritten += *moved;
      return WalkResult::advance();
    });
    if (walked.wasInterrupted())
      return signalPassFailure();
    LLVM_DEBUG(llvm::dbgs() << rewritten << " attention ops pinned for variant "
                            << static_cast<int>(attention.getValue()) << "\n");
  }

  /// Pins the results of `op` to sequence shards over the axis, complete,
  /// and with `onHeads` its operands to heads shards, where propagation
  /// split its sequence over the axis. Returns whether it did.
  FailureOr<bool> pin(Operation *op, MeshAttr mesh, bool onHeads) {
    auto attrs = op->getAttrOfType<ArrayAttr>(kResultShardingsAttr);
    if (!attrs || attrs.size() != op->getNumResults()) {
      op->emitOpError() << "has no result shardings: context-parallel attention runs after "
                           "pmlir-sharding-propagation";
      return failure();
    }
    StringRef cp = axis;
    Sharding result = Sharding::of(cast<ShardingAttr>(attrs[0]));
    if (!llvm::is_contained(result.dims[kSeqDim], cp))
      return false;

    // Operands ([batch, heads, seq, ...] each): the axis leaves the
    // sequence for the heads, minor to their split.
    OpBuilder b(op);
    MLIRContext *context = op->getContext();
    for (OpOperand &operand : op->getOpOperands()) {
      if (!onHeads)
        break;
      auto type = dyn_cast<RankedTensorType>(operand.get().getType());
      if (!type || type.getRank() != 4)
        continue;
      FailureOr<Sharding> onHeads = shardingOf(operand.get());
      if (failed(onHeads))
        return op->emitOpError() << "operand #" << operand.getOperandNumber()
                                 << " has no sharding: context-parallel attention runs after "
                                    "pmlir-sharding-propagation";
      llvm::erase(onHeads->dims[kSeqDim], cp);
      llvm::erase(onHeads->pending, cp);
      onHeads->dims[kHeadsDim].push_back(cp);
      int64_t heads = type.getShape()[kHeadsDim];
      int64_t devices = devicesOf(mesh, onHeads->dims[kHeadsDim]);
      if (heads % devices != 0) {
        static const char *const names[] = {"queries", "keys", "values", "output gradient",
                                            "probabilities"};
        InFlightDiagnostic diag = op->emitOpError()
                                  << "has " << heads << " heads of "
                                  << names[operand.getOperandNumber()]
                                  << ", which Ulysses attention cannot split over ";
        llvm::interleave(
            onHeads->dims[kHeadsDim], diag, [&](StringRef a) { diag << a; }, " × ");
        diag << " = " << devices << " devices (it trades the sequence split for a heads split)";
        return failure();
      }
      operand.set(constrain(b, op->getLoc(), operand.get(), onHeads->toAttr(context)));
    }
    // Results: back to sequence shards, complete (the key and value
    // gradients of the whole sequence sum nothing over the axis).
    b.setInsertionPointAfter(op);
    for (auto [r, attr] : llvm::zip(op->getResults(), attrs)) {
      Sharding onSeq = Sharding::of(cast<ShardingAttr>(attr));
      llvm::erase(onSeq.pending, cp);
      if (!llvm::is_contained(onSeq.dims[kSeqDim], cp))
        onSeq.dims[kSeqDim].push_back(cp);
      Value pinned = constrain(b, op->getLoc(), r, onSeq.toAttr(context));
      r.replaceAllUsesExcept(pinned, pinned.getDefiningOp());
    }
    return true;
  }

  /// What propagation gave `v`.
  static FailureOr<Sharding> shardingOf(Value v) {
    ShardingAttr attr;
    if (auto arg = dyn_cast<BlockArgument>(v)) {
      if (auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp()))
        attr = func.getArgAttrOfType<ShardingAttr>(arg.getArgNumber(), kShardingAttr);
    } else if (auto attrs = v.getDefiningOp()->getAttrOfType<ArrayAttr>(kResultShardingsAttr)) {
      attr = dyn_cast<ShardingAttr>(attrs[cast<OpResult>(v).getResultNumber()]);
    }
    if (!attr)
      return failure();
    return Sharding::of(attr);
  }

  static Value constrain(OpBuilder &b, Location loc, Value v, ShardingAttr sharding) {
    return ShardingConstraintOp::create(b, loc, v.getType(), v, sharding).getResult();
  }
};

} // namespace
