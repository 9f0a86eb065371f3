//===- Optimizer.cpp - tfm to linalg: the optimizer step -------------------===//
//
// Part of pmlir.
//
// The lowerings of the optimizer step: gradient norms, microbatch slices and
// AdamW.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm_to_linalg;

namespace {

/// In two stages where the input has more than one dimension: a sum per
/// index of the first (a loop the runtime's threads split), then the sum
/// of those. The order of the sums is fixed by the shape alone, so a norm
/// is the same on any number of threads; one stage would run on one
/// thread over every gradient of the model.
struct SumSquaresLowering : TfmPattern<tfm::SumSquaresOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::SumSquaresOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType in = tensorType(op.getInput());
    RankedTensorType out = tensorType(op.getResult());
    Type t = out.getElementType();
    unsigned rank = in.getRank();
    auto squareAndAdd = [](OpBuilder &nb, Location l, ValueRange a) {
      return addF(nb, l, a[1], arith::MulFOp::create(nb, l, a[0], a[0]));
    };
    if (rank < 2)
      return generic(b, loc, out, {op.getInput()},
                     {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, {}, b.getContext())},
                     SmallVector<IteratorType>(rank, IteratorType::reduction), squareAndAdd,
                     filled(b, loc, {}, t, 0.0));
    int64_t leading = in.getShape()[0];
    SmallVector<IteratorType> iterators(rank, IteratorType::reduction);
    iterators[0] = IteratorType::parallel;
    Value partial =
        generic(b, loc, RankedTensorType::get({leading}, t), {op.getInput()},
                {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, b.getAffineDimExpr(0))},
                iterators, squareAndAdd, filled(b, loc, {leading}, t, 0.0));
    return generic(
        b, loc, out, {partial},
        {b.getMultiDimIdentityMap(1), AffineMap::get(1, 0, {}, b.getContext())},
        {IteratorType::reduction},
        [](OpBuilder &nb, Location l, ValueRange a) { return addF(nb, l, a[1], a[0]); },
        filled(b, loc, {}, t, 0.0));
  }
};

struct MicrobatchLowering : OpRewritePattern<tfm::MicrobatchOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::MicrobatchOp op, PatternRewriter &b) const override {
    RankedTensorType in = tensorType(op.getInput());
    if (!in.hasStaticShape())
      return b.notifyMatchFailure(op, "dynamic shapes are not lowered");
    unsigned rank = in.getRank();
    SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
        strides(rank, b.getIndexAttr(1));
    offsets[0] = b.getIndexAttr(op.getIndex());
    sizes.push_back(b.getIndexAttr(1));
    for (int64_t d : in.getShape().drop_front())
      sizes.push_back(b.getIndexAttr(d));
    b.replaceOpWithNewOp<tensor::ExtractSliceOp>(op, tensorType(op.getResult()), op.getInput(),
                                                 offsets, sizes, strides);
    return success();
  }
};

/// One loop over the parameter writing the new parameter and state into
/// the old ones' places (they are the generic's outputs, so bufferization
/// updates the arguments in place). The step's bias corrections and the
/// clipping coefficient are scalars computed once, before the loop, in f64
/// as PyTorch computes them.
struct AdamWLowering : OpRewritePattern<tfm::AdamWOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::AdamWOp op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getParam());
    if (!type.hasStaticShape())
      return b.notifyMatchFailure(op, "dynamic shapes are not lowered");
    Location loc = op.getLoc();
    Type t = type.getElementType();
    Type f64 = b.getF64Type();
    auto c64 = [&](double v) { return floatConst(b, loc, f64, v); };
    double beta1 = op.getBeta1().convertToDouble(), beta2 = op.getBeta2().convertToDouble();
    double lr = op.getLr().convertToDouble();
    // t, 1 - beta1^t, sqrt(1 - beta2^t), lr / (1 - beta1^t).
    auto scalarOf = [&](Value tensor) {
      Value element = tensor::ExtractOp::create(b, loc, tensor, ValueRange{});
      return arith::ExtFOp::create(b, loc, f64, element).getResult();
    };
    Value step = scalarOf(op.getStep());
    auto correction = [&](double beta) {
      return arith::SubFOp::create(b, loc, c64(1.0), math::PowFOp::create(b, loc, c64(beta), step))
          .getResult();
    };
    Value stepSize = arith::DivFOp::create(b, loc, c64(lr), correction(beta1));
    Value sqrtCorrection2 = math::SqrtOp::create(b, loc, correction(beta2));
    // The gradient's scale: grad_scale, times min(1, max / (norm + 1e-6)).
    Value scale = c64(op.getGradScale().convertToDouble());
    if (Value norm = op.getGradNorm()) {
      Value n = scalarOf(norm);
      Value coef = arith::DivFOp::create(b, loc, c64(op.getMaxGradNorm()->convertToDouble()),
                                         arith::AddFOp::create(b, loc, n, c64(1e-6)));
      scale =
          arith::MulFOp::create(b, loc, scale, arith::MinimumFOp::create(b, loc, coef, c64(1.0)));
    }
    auto toT = [&](Value v) { return arith::TruncFOp::create(b, loc, t, v).getResult(); };
    stepSize = toT(stepSize);
    sqrtCorrection2 = toT(sqrtCorrection2);
    scale = toT(scale);
    double decay = 1.0 - lr * op.getWeightDecay().convertToDouble();
    double eps = op.getEps().convertToDouble();
    unsigned rank = type.getRank();
    AffineMap id = b.getMultiDimIdentityMap(rank);
    auto update = linalg::GenericOp::create(
        b, loc, TypeRange{type, type, type}, ValueRange{op.getGrad()},
        ValueRange{op.getParam(), op.getExpAvg(), op.getExpAvgSq()}, SmallVector<AffineMap>(4, id),
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        [&](OpBuilder &nb, Location l, ValueRange a) {
          auto c = [&](double v) { return floatConst(nb, l, t, v); };
          auto mul = [&](Value x, Value y) {
            return arith::MulFOp::create(nb, l, x, y).getResult();
          };
          auto add = [&](Value x, Value y) {
            return arith::AddFOp::create(nb, l, x, y).getResult();
          };
          auto sub = [&](Value x, Value y) {
            return arith::SubFOp::create(nb, l, x, y).getResult();
          };
          Value g = mul(a[0], scale);
          Value p = mul(a[1], c(decay));
          Value m = add(a[2], mul(c(1.0 - beta1), sub(g, a[2])));
          Value v = add(mul(c(beta2), a[3]), mul(c(1.0 - beta2), mul(g, g)));
          Value denom =
              add(arith::DivFOp::create(nb, l, math::SqrtOp::create(nb, l, v), sqrtCorrection2),
                  c(eps));
          p = sub(p, mul(stepSize, arith::DivFOp::create(nb, l, m, denom)));
          linalg::YieldOp::create(nb, l, ValueRange{p, m, v});
        });
    b.replaceOp(op, update.getResults());
    return success();
  }
};

} // namespace

void pmlir::tfm_to_linalg::populateOptimizerPatterns(RewritePatternSet &patterns) {
  patterns.add<SumSquaresLowering, MicrobatchLowering, AdamWLowering>(patterns.getContext());
}
