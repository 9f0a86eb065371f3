//===- ApproximateMath.cpp - Vectorizable f32 transcendentals -------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-approximate-math"

namespace pmlir {
#define GEN_PASS_DEF_APPROXIMATEMATH
#include "pmlir/Target/CPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct ApproximateMathPass : public pmlir::impl::ApproximateMathBase<ApproximateMathPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Every op upstream can approximate; the patterns only match f32 (and
    // vectors of it), so f64 keeps libm's correctly rounded results.
    populateMathPolynomialApproximationPatterns(patterns, [](StringRef) { return true; });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
    LLVM_DEBUG({
      int64_t left = 0;
      getOperation()->walk(
          [&](Operation *op) { left += isa<math::MathDialect>(op->getDialect()); });
      llvm::dbgs() << left << " math ops left to intrinsics and libm\n";
    });
  }
};

} // namespace
