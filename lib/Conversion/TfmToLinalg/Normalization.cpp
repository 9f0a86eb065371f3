//===- Normalization.cpp - tfm to linalg: softmax and norms ----------------===//
//
// Part of pmlir.
//
// The lowerings of softmax, layer and RMS norms, and their gradients.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm_to_linalg;

namespace {

struct SoftmaxGradLowering : TfmPattern<tfm::SoftmaxGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::SoftmaxGradOp op, PatternRewriter &b) const override {
    return softmaxGradRows(b, op.getLoc(), op.getOutput(), op.getGrad());
  }
};

struct SoftmaxLowering : TfmPattern<tfm::SoftmaxOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::SoftmaxOp op, PatternRewriter &b) const override {
    return softmaxRows(b, op.getLoc(), op.getInput());
  }
};

/// LayerNorm (with `beta`) and RMSNorm (without, and without centering).
Value normalize(OpBuilder &b, Location loc, Value x, Value gamma, Value beta, double epsilon) {
  RankedTensorType type = tensorType(x);
  unsigned rank = type.getRank();
  Type t = type.getElementType();
  double inv = 1.0 / static_cast<double>(type.getShape().back());
  Value mean;
  if (beta)
    mean = reduceRows(b, loc, x, {}, 0.0, identity, addF);
  // Sum of squares of (x - mean) or of x.
  Value squares = reduceRows(
      b, loc, x, mean ? ValueRange{mean} : ValueRange{}, 0.0,
      [&](OpBuilder &nb, Location l, Value v, ValueRange row) -> Value {
        if (!row.empty()) {
          Value m = arith::MulFOp::create(nb, l, row[0], floatConst(nb, l, t, inv));
          v = arith::SubFOp::create(nb, l, v, m);
        }
        return arith::MulFOp::create(nb, l, v, v);
      },
      addF);
  SmallVector<Value> inputs = {x, squares, gamma};
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank), rowMap(b, rank),
                                 trailingMap(b, rank, 1)};
  if (beta) {
    inputs.append({mean, beta});
    maps.append({rowMap(b, rank), trailingMap(b, rank, 1)});
  }
  return elementwise(b, loc, type, inputs, maps, [&](OpBuilder &nb, Location l, ValueRange a) {
    Value scale = floatConst(nb, l, t, inv);
    Value v = a[0];
    if (beta)
      v = arith::SubFOp::create(nb, l, v, arith::MulFOp::create(nb, l, a[3], scale));
    Value var = arith::MulFOp::create(nb, l, a[1], scale);
    Value rstd = math::RsqrtOp::create(
        nb, l, arith::AddFOp::create(nb, l, var, floatConst(nb, l, t, epsilon)));
    Value y = arith::MulFOp::create(nb, l, arith::MulFOp::create(nb, l, v, rstd), a[2]);
    return beta ? arith::AddFOp::create(nb, l, y, a[4]).getResult() : y;
  });
}

struct LayerNormLowering : TfmPattern<tfm::LayerNormOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::LayerNormOp op, PatternRewriter &b) const override {
    return normalize(b, op.getLoc(), op.getInput(), op.getGamma(), op.getBeta(),
                     op.getEpsilon().convertToDouble());
  }
};

struct RmsNormLowering : TfmPattern<tfm::RmsNormOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::RmsNormOp op, PatternRewriter &b) const override {
    return normalize(b, op.getLoc(), op.getInput(), op.getGamma(), Value(),
                     op.getEpsilon().convertToDouble());
  }
};

/// Per row of the last dimension of `x`: its mean (when `centered`) and
/// 1 / sqrt(variance + epsilon) (of x itself, not centered, for RMSNorm).
struct RowStats {
  Value mean, rstd;
};

RowStats rowStats(OpBuilder &b, Location loc, Value x, bool centered, double epsilon) {
  RankedTensorType type = tensorType(x);
  unsigned rank = type.getRank();
  Type t = type.getElementType();
  double inv = 1.0 / static_cast<double>(type.getShape().back());
  auto rowType = RankedTensorType::get(type.getShape().drop_back(), t);
  AffineMap rows = b.getMultiDimIdentityMap(rank - 1);
  RowStats stats;
  if (centered) {
    Value sum = reduceRows(b, loc, x, {}, 0.0, identity, addF);
    stats.mean = elementwise(b, loc, rowType, {sum}, {rows},
                             [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                               return arith::MulFOp::create(nb, l, a[0], floatConst(nb, l, t, inv));
                             });
  }
  Value squares = rowSum(b, loc, {x}, stats.mean ? ValueRange{stats.mean} : ValueRange{},
                         [&](OpBuilder &nb, Location l, ValueRange a, ValueRange row) -> Value {
                           Value v = a[0];
                           if (!row.empty())
                             v = arith::SubFOp::create(nb, l, v, row[0]);
                           return arith::MulFOp::create(nb, l, v, v);
                         });
  stats.rstd = elementwise(
      b, loc, rowType, {squares}, {rows}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value var = arith::MulFOp::create(nb, l, a[0], floatConst(nb, l, t, inv));
        return math::RsqrtOp::create(
            nb, l, arith::AddFOp::create(nb, l, var, floatConst(nb, l, t, epsilon)));
      });
  return stats;
}

/// x normalized as a norm does before scaling: (x - mean) * rstd, or x * rstd.
Value normalized(OpBuilder &b, Location l, Value x, Value mean, Value rstd) {
  if (mean)
    x = arith::SubFOp::create(b, l, x, mean);
  return arith::MulFOp::create(b, l, x, rstd);
}

/// The input gradient of LayerNorm (`centered`) or RMSNorm, per row with
/// xhat the normalized input and g = dy * gamma:
/// rstd * (g - mean(g) - xhat * mean(g * xhat)), without the mean(g) for
/// RMSNorm.
Value normInputGrad(OpBuilder &b, Location loc, Value x, Value gamma, Value dy, double epsilon,
                    bool centered) {
  RankedTensorType type = tensorType(x);
  unsigned rank = type.getRank();
  Type t = type.getElementType();
  double inv = 1.0 / static_cast<double>(type.getShape().back());
  RowStats stats = rowStats(b, loc, x, centered, epsilon);
  auto rowType = RankedTensorType::get(type.getShape().drop_back(), t);
  AffineMap id = b.getMultiDimIdentityMap(rank), row = rowMap(b, rank),
            column = trailingMap(b, rank, 1);
  SmallVector<Value> rowsIn = {stats.rstd};
  SmallVector<AffineMap> maps = {id, id, column, row};
  if (centered) {
    rowsIn.push_back(stats.mean);
    maps.push_back(row);
  }
  // Sums over the row of g and of g * xhat.
  SmallVector<AffineMap> reduceMaps(maps);
  reduceMaps.append({row, row});
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators.back() = IteratorType::reduction;
  SmallVector<Value> inputs = {x, dy, gamma};
  llvm::append_range(inputs, rowsIn);
  auto sums = linalg::GenericOp::create(
      b, loc, TypeRange{rowType, rowType}, inputs,
      ValueRange{filled(b, loc, rowType.getShape(), t, 0.0),
                 filled(b, loc, rowType.getShape(), t, 0.0)},
      reduceMaps, iterators, [&](OpBuilder &nb, Location l, ValueRange a) {
        Value g = arith::MulFOp::create(nb, l, a[1], a[2]);
        Value xhat = normalized(nb, l, a[0], centered ? a[4] : Value(), a[3]);
        unsigned acc = centered ? 5 : 4;
        Value sumG = addF(nb, l, a[acc], g);
        Value sumGx = addF(nb, l, a[acc + 1], arith::MulFOp::create(nb, l, g, xhat));
        linalg::YieldOp::create(nb, l, ValueRange{sumG, sumGx});
      });
  inputs.append({sums.getResult(0), sums.getResult(1)});
  maps.append({row, row});
  return elementwise(b, loc, type, inputs, maps, [&](OpBuilder &nb, Location l, ValueRange a) {
    Value scale = floatConst(nb, l, t, inv);
    unsigned sumsAt = centered ? 5 : 4;
    Value g = arith::MulFOp::create(nb, l, a[1], a[2]);
    Value xhat = normalized(nb, l, a[0], centered ? a[4] : Value(), a[3]);
    Value meanGx = arith::MulFOp::create(nb, l, a[sumsAt + 1], scale);
    Value v = arith::SubFOp::create(nb, l, g, arith::MulFOp::create(nb, l, xhat, meanGx));
    if (centered)
      v = arith::SubFOp::create(nb, l, v, arith::MulFOp::create(nb, l, a[sumsAt], scale));
    return arith::MulFOp::create(nb, l, a[3], v);
  });
}

struct LayerNormGradLowering : TfmPattern<tfm::LayerNormGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::LayerNormGradOp op, PatternRewriter &b) const override {
    return normInputGrad(b, op.getLoc(), op.getInput(), op.getGamma(), op.getGrad(),
                         op.getEpsilon().convertToDouble(), /*centered=*/true);
  }
};

struct RmsNormGradLowering : TfmPattern<tfm::RmsNormGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::RmsNormGradOp op, PatternRewriter &b) const override {
    return normInputGrad(b, op.getLoc(), op.getInput(), op.getGamma(), op.getGrad(),
                         op.getEpsilon().convertToDouble(), /*centered=*/false);
  }
};

/// The gamma gradient of a norm: the sum over rows of dy * xhat.
Value normWeightGrad(OpBuilder &b, Location loc, Value x, Value dy, RankedTensorType resultType,
                     double epsilon, bool centered) {
  RankedTensorType type = tensorType(x);
  unsigned rank = type.getRank();
  RowStats stats = rowStats(b, loc, x, centered, epsilon);
  AffineMap id = b.getMultiDimIdentityMap(rank), row = rowMap(b, rank);
  SmallVector<Value> inputs = {x, dy, stats.rstd};
  SmallVector<AffineMap> maps = {id, id, row};
  if (centered) {
    inputs.push_back(stats.mean);
    maps.push_back(row);
  }
  maps.push_back(trailingMap(b, rank, 1));
  SmallVector<IteratorType> iterators(rank, IteratorType::reduction);
  iterators.back() = IteratorType::parallel;
  return generic(
      b, loc, resultType, inputs, maps, iterators,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value xhat = normalized(nb, l, a[0], centered ? a[3] : Value(), a[2]);
        return addF(nb, l, a.back(), arith::MulFOp::create(nb, l, a[1], xhat));
      },
      filled(b, loc, resultType.getShape(), resultType.getElementType(), 0.0));
}

struct LayerNormWeightGradLowering : TfmPattern<tfm::LayerNormWeightGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::LayerNormWeightGradOp op, PatternRewriter &b) const override {
    return normWeightGrad(b, op.getLoc(), op.getInput(), op.getGrad(), tensorType(op.getResult()),
                          op.getEpsilon().convertToDouble(), true);
  }
};

struct RmsNormWeightGradLowering : TfmPattern<tfm::RmsNormWeightGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::RmsNormWeightGradOp op, PatternRewriter &b) const override {
    return normWeightGrad(b, op.getLoc(), op.getInput(), op.getGrad(), tensorType(op.getResult()),
                          op.getEpsilon().convertToDouble(), false);
  }
};

} // namespace

void pmlir::tfm_to_linalg::populateNormalizationPatterns(RewritePatternSet &patterns) {
  patterns.add<SoftmaxGradLowering, SoftmaxLowering, LayerNormLowering, RmsNormLowering,
               LayerNormGradLowering, RmsNormGradLowering, LayerNormWeightGradLowering,
               RmsNormWeightGradLowering>(patterns.getContext());
}
