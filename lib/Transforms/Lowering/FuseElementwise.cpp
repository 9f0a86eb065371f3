//===- FuseElementwise.cpp - Elementwise fusion that keeps library calls --===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pmlir {
#define GEN_PASS_DEF_FUSEELEMENTWISE
#include "pmlir/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

bool namesLibraryCall(Operation *op) {
  auto generic = dyn_cast_or_null<linalg::GenericOp>(op);
  return generic && generic.getLibraryCall().has_value();
}

struct FuseElementwisePass
    : public pmlir::impl::FuseElementwiseBase<FuseElementwisePass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(
        patterns, [](OpOperand *fused) {
          return !namesLibraryCall(fused->getOwner()) &&
                 !namesLibraryCall(fused->get().getDefiningOp());
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
