//===- TfmToLinalg.cpp - Lower tfm ops to linalg on tensors ---------------===//
//
// Part of pmlir.
//
// Each tfm op becomes linalg.generic ops (plus tensor reshapes and slices) on
// static shapes, so that upstream fusion, tiling, vectorization and one-shot
// bufferization apply. Arithmetic is done in the op's element type. The
// lowerings live by op family beside this file (Elementwise, Normalization,
// Matmul, Attention, EmbeddingAndLoss, Optimizer; what they share in
// Common.h); this file is the pass.
//
//===----------------------------------------------------------------------===//

#include "Common.h"
#include "pmlir/Conversion/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-convert-tfm-to-linalg"

namespace pmlir {
#define GEN_PASS_DEF_CONVERTTFMTOLINALG
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

namespace {

/// A layer's body runs in place: its ops move before it and its results
/// become the yielded values.
struct InlineLayer : OpRewritePattern<tfm::LayerOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::LayerOp op, PatternRewriter &b) const override {
    Block &body = op.getBody().front();
    auto yield = cast<tfm::YieldOp>(body.getTerminator());
    SmallVector<Value> results(yield.getValues());
    b.eraseOp(yield);
    b.inlineBlockBefore(&body, op);
    b.replaceOp(op, results);
    return success();
  }
};

struct ConvertTfmToLinalgPass : public pmlir::impl::ConvertTfmToLinalgBase<ConvertTfmToLinalgPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    // The lowerings compute on static shapes; a dynamic dimension is named
    // here rather than left as "failed to legalize".
    WalkResult dynamic = getOperation()->walk([](Operation *op) {
      if (!isa<tfm::TfmDialect>(op->getDialect()) || isa<tfm::LayerOp>(op))
        return WalkResult::advance();
      for (Type type : llvm::concat<Type>(op->getOperandTypes(), op->getResultTypes()))
        if (auto shaped = dyn_cast<ShapedType>(type); shaped && !shaped.hasStaticShape()) {
          op->emitOpError() << "has a dynamic dimension in " << type
                            << "; the CPU lowering needs static shapes";
          return WalkResult::interrupt();
        }
      return WalkResult::advance();
    });
    if (dynamic.wasInterrupted())
      return signalPassFailure();
    LLVM_DEBUG(llvm::dbgs() << "lowering tfm in " << getOperation()->getName() << "\n");
    RewritePatternSet patterns(ctx);
    populateTfmToLinalgPatterns(patterns);
    ConversionTarget target(*ctx);
    target.addIllegalDialect<tfm::TfmDialect>();
    // Collectives and step metrics: pmlir-lower-shard-to-runtime calls the
    // runtime for them.
    target.addLegalOp<tfm::MoeAllToAllOp, tfm::MoeAllToAllBackOp, tfm::StepMetricOp>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect,
                           scf::SCFDialect, tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void pmlir::populateTfmToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<InlineLayer>(patterns.getContext());
  tfm_to_linalg::populateElementwisePatterns(patterns);
  tfm_to_linalg::populateNormalizationPatterns(patterns);
  tfm_to_linalg::populateMatmulPatterns(patterns);
  tfm_to_linalg::populateAttentionPatterns(patterns);
  tfm_to_linalg::populateEmbeddingAndLossPatterns(patterns);
  tfm_to_linalg::populateOptimizerPatterns(patterns);
  tfm_to_linalg::populateExpertPatterns(patterns);
}
