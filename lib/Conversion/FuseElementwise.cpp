//===- FuseElementwise.cpp - Elementwise fusion that keeps library calls --===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Conversion/Contraction.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-fuse-elementwise"

namespace pmlir {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// A library call, named already or (a GEMM) to be named by a target's
/// kernel selection after fusion and the choice of storage precision.
bool namesLibraryCall(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && (generic.getLibraryCall().has_value() || pmlir::matchGemm(generic));
}

/// Whether a call (a transformer block's, a collective's) runs between
/// `producer` and `consumer` of one block. Fusing moves
/// the producer's work to the consumer and keeps its operands alive until
/// there: across calls, whose own buffers are then live beside them, that
/// raises the peak. A step's running sum of its microbatches' gradients,
/// fused, kept every microbatch's gradients until the last one's were
/// made (GPT-2 small, 32 microbatches: 17 GB where one takes 2).
bool callBetween(Operation *producer, Operation *consumer) {
  if (!producer || producer->getBlock() != consumer->getBlock())
    return false;
  for (Operation *op = producer->getNextNode(); op && op != consumer; op = op->getNextNode())
    if (isa<CallOpInterface>(op))
      return true;
  return false;
}

struct FuseElementwisePass : public pmlir::impl::FuseElementwiseBase<FuseElementwisePass> {
  using FuseElementwiseBase::FuseElementwiseBase;

  void runOnOperation() override {
    // Transposes as generics, so that they fuse like elementwise work.
    if (transposes) {
      SmallVector<linalg::TransposeOp> ops;
      getOperation()->walk([&](linalg::TransposeOp op) { ops.push_back(op); });
      IRRewriter rewriter(&getContext());
      for (linalg::TransposeOp op : ops) {
        rewriter.setInsertionPoint(op);
        if (failed(linalg::generalizeNamedOp(rewriter, op)))
          return signalPassFailure();
      }
    }
    RewritePatternSet patterns(&getContext());
    auto control = [](OpOperand *fused) {
      Operation *consumer = fused->getOwner();
      // A producer with other consumers would be recomputed in each of
      // them; along a residual stream that is every later layer.
      bool onlyConsumer =
          llvm::all_of(fused->get().getUsers(), [&](Operation *user) { return user == consumer; });
      Operation *producer = fused->get().getDefiningOp();
      return onlyConsumer && !namesLibraryCall(consumer) && !namesLibraryCall(producer) &&
             !callBetween(producer, consumer);
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    // A reshape between two generics (heads split out of a hidden
    // dimension) moves onto the producer, which then fuses.
    if (transposes)
      linalg::populateFoldReshapeOpsByExpansionPatterns(patterns, control);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    LLVM_DEBUG({
      int64_t loops = 0;
      getOperation()->walk([&](linalg::GenericOp) { ++loops; });
      llvm::dbgs() << loops << " linalg.generic ops after fusion\n";
    });
  }
};

} // namespace
