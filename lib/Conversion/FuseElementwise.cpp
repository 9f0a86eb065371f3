//===- FuseElementwise.cpp - Elementwise fusion that keeps library calls --===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Conversion/Contraction.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
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
      return onlyConsumer && !namesLibraryCall(consumer) &&
             !namesLibraryCall(fused->get().getDefiningOp());
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
