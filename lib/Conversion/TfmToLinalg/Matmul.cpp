//===- Matmul.cpp - tfm to linalg: matmuls, weight gradients ---------------===//
//
// Part of pmlir.
//
// The lowerings of matmuls and the weight gradients that sum over leading
// dimensions.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm_to_linalg;

namespace {

struct MatmulLowering : TfmPattern<tfm::MatmulOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MatmulOp op, PatternRewriter &b) const override {
    return matmul(b, op.getLoc(), op.getLhs(), op.getRhs(), op.getTransposeLhs(),
                  op.getTransposeRhs());
  }
};

/// One GEMM lhs^T rhs over every row of the collapsed batch.
struct WeightGradLowering : TfmPattern<tfm::WeightGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::WeightGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    return matmul(b, loc, collapseLeading(b, loc, op.getLhs()),
                  collapseLeading(b, loc, op.getRhs()), /*transposeLhs=*/true, false);
  }
};

struct SumLeadingLowering : TfmPattern<tfm::SumLeadingOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::SumLeadingOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType in = tensorType(op.getInput()), out = tensorType(op.getResult());
    unsigned rank = in.getRank(), kept = out.getRank();
    SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
    for (unsigned d = 0; d < rank - kept; ++d)
      iterators[d] = IteratorType::reduction;
    return generic(
        b, loc, out, {op.getInput()}, {b.getMultiDimIdentityMap(rank), trailingMap(b, rank, kept)},
        iterators, [](OpBuilder &nb, Location l, ValueRange a) { return addF(nb, l, a[1], a[0]); },
        filled(b, loc, out.getShape(), out.getElementType(), 0.0));
  }
};

} // namespace

void pmlir::tfm_to_linalg::populateMatmulPatterns(RewritePatternSet &patterns) {
  patterns.add<MatmulLowering, WeightGradLowering, SumLeadingLowering>(patterns.getContext());
}
