//===- Attention.cpp - tfm to linalg: positions, heads, attention ----------===//
//
// Part of pmlir.
//
// The lowerings of positions, heads, rotary embeddings and attention (whole,
// blocks of a ring and their merge), forward and gradient.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm_to_linalg;

namespace {

/// The sequence position of `index` in head-tail order (HeadTailOrder's
/// arithmetic on an index value).
static Value headTailPosition(OpBuilder &b, Location l, Value index, HeadTailOrder order) {
  auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
  Value rank = arith::DivUIOp::create(b, l, index, constant(order.block()));
  Value within = arith::RemUIOp::create(b, l, index, constant(order.block()));
  Value inHead =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, within, constant(order.head()));
  Value head = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, rank, constant(order.head())), within);
  // ranks * head + (ranks - 1 - rank) * tail + within - head
  Value reversed = arith::SubIOp::create(b, l, constant(order.ranks - 1), rank);
  Value tail = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, reversed, constant(order.tail())),
      arith::AddIOp::create(b, l, within, constant(order.ranks * order.head() - order.head())));
  return arith::SelectOp::create(b, l, inHead, head, tail);
}

struct ArangeLowering : TfmPattern<tfm::ArangeOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::ArangeOp op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    Location loc = op.getLoc();
    Value offset = op.getOffset();
    tfm::HeadTailAttr order = op.getHeadTailAttr();
    return generic(b, loc, type, {}, {b.getMultiDimIdentityMap(1)}, {IteratorType::parallel},
                   [&](OpBuilder &nb, Location l, ValueRange) -> Value {
                     Value i = linalg::IndexOp::create(nb, l, 0);
                     if (offset)
                       i = arith::AddIOp::create(nb, l, i, offset);
                     if (order)
                       i = headTailPosition(nb, l, i, order.order());
                     i = arith::IndexCastOp::create(nb, l, type.getElementType(), i);
                     Value start = arith::ConstantOp::create(
                         nb, l, nb.getIntegerAttr(type.getElementType(), op.getStart()));
                     return arith::AddIOp::create(nb, l, i, start);
                   });
  }
};

struct SplitHeadsLowering : TfmPattern<tfm::SplitHeadsOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::SplitHeadsOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    ArrayRef<int64_t> out = tensorType(op.getResult()).getShape(); // [B,A,S,D]
    Type t = tensorType(op.getResult()).getElementType();
    auto expandedType = RankedTensorType::get({out[0], out[2], out[1], out[3]}, t);
    Value expanded = tensor::ExpandShapeOp::create(
        b, loc, expandedType, op.getInput(), ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    Value init = emptyLike(b, loc, out, t);
    return linalg::TransposeOp::create(b, loc, expanded, init, ArrayRef<int64_t>{0, 2, 1, 3})
        .getResult()[0];
  }
};

struct MergeHeadsLowering : TfmPattern<tfm::MergeHeadsOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MergeHeadsOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType in = tensorType(op.getInput()); // [B,A,S,D]
    ArrayRef<int64_t> s = in.getShape();
    Value init = emptyLike(b, loc, {s[0], s[2], s[1], s[3]}, in.getElementType());
    Value transposed =
        linalg::TransposeOp::create(b, loc, op.getInput(), init, ArrayRef<int64_t>{0, 2, 1, 3})
            .getResult()[0];
    return tensor::CollapseShapeOp::create(b, loc, tensorType(op.getResult()), transposed,
                                           ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
  }
};

struct RopeLowering : TfmPattern<tfm::RopeOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::RopeOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType type = tensorType(op.getResult());
    Type t = type.getElementType();
    int64_t d = type.getShape()[3], half = d / 2;
    double theta = op.getTheta().convertToDouble();
    Value x = op.getInput();
    AffineMap posMap = AffineMap::get(4, 0, {b.getAffineDimExpr(2)}, b.getContext());
    return elementwise(
        b, loc, type, {x, op.getPositions()}, {b.getMultiDimIdentityMap(4), posMap},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          // j = dim mod D/2; angle = pos * theta^(-2j/D).
          Value dim = linalg::IndexOp::create(nb, l, 3);
          Value halfIdx = arith::ConstantIndexOp::create(nb, l, half);
          Value j = arith::RemUIOp::create(nb, l, dim, halfIdx);
          Value jf = arith::UIToFPOp::create(
              nb, l, t, arith::IndexCastUIOp::create(nb, l, nb.getI64Type(), j));
          Value exponent =
              arith::MulFOp::create(nb, l, jf, floatConst(nb, l, t, -2.0 / static_cast<double>(d)));
          Value invFreq = math::PowFOp::create(nb, l, floatConst(nb, l, t, theta), exponent);
          Value pos = arith::SIToFPOp::create(nb, l, t, a[1]);
          Value angle = arith::MulFOp::create(nb, l, pos, invFreq);
          // rotate_half: the first half reads -x[d + D/2], the second x[d - D/2].
          Value firstHalf = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, dim, halfIdx);
          Value partner =
              arith::SelectOp::create(nb, l, firstHalf, arith::AddIOp::create(nb, l, dim, halfIdx),
                                      arith::SubIOp::create(nb, l, dim, halfIdx));
          SmallVector<Value> idx;
          for (unsigned i = 0; i < 3; ++i)
            idx.push_back(linalg::IndexOp::create(nb, l, i));
          idx.push_back(partner);
          Value other = tensor::ExtractOp::create(nb, l, x, idx);
          Value rotated =
              arith::SelectOp::create(nb, l, firstHalf, arith::NegFOp::create(nb, l, other), other);
          Value cos = math::CosOp::create(nb, l, angle);
          Value sin = math::SinOp::create(nb, l, angle);
          // The inverse rotation, by -angle: the sine changes sign.
          if (op.getInverse())
            sin = arith::NegFOp::create(nb, l, sin);
          return arith::AddFOp::create(nb, l, arith::MulFOp::create(nb, l, a[0], cos),
                                       arith::MulFOp::create(nb, l, rotated, sin));
        });
  }
};

/// The operands of attention in the layout of its GEMMs: the G query heads
/// that share a kv head are rows of one GEMM, so q [B, A, S, D] is viewed as
/// [B, K, G*S, D] (a reshape, no copy) and grouped-query attention costs no
/// repeated keys or values.
struct GroupedAttention {
  OpBuilder &b;
  Location loc;
  Type t;
  int64_t batch, heads, kvHeads, group, seq, keys;
  double scale;
  bool causal;
  Value queryOffset;
  tfm::HeadTailAttr order;

  GroupedAttention(OpBuilder &b, Location loc, Value query, Value key, bool causal, double scale,
                   Value queryOffset, tfm::HeadTailAttr order = {})
      : b(b), loc(loc), scale(scale), causal(causal), queryOffset(queryOffset), order(order) {
    ArrayRef<int64_t> q = tensorType(query).getShape();
    ArrayRef<int64_t> k = tensorType(key).getShape();
    t = tensorType(query).getElementType();
    batch = q[0], heads = q[1], kvHeads = k[1], group = heads / kvHeads, seq = q[2], keys = k[2];
  }

  /// [B, A, S, W] -> [B, K, G*S, W]
  Value grouped(Value x) {
    int64_t width = tensorType(x).getShape()[3];
    auto split = RankedTensorType::get({batch, kvHeads, group, seq, width}, t);
    auto rows = RankedTensorType::get({batch, kvHeads, group * seq, width}, t);
    Value e = tensor::ExpandShapeOp::create(b, loc, split, x,
                                            ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
    return tensor::CollapseShapeOp::create(b, loc, rows, e,
                                           ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
  }

  /// [B, K, G*S, W] -> [B, A, S, W]
  Value ungrouped(Value x) {
    int64_t width = tensorType(x).getShape()[3];
    auto split = RankedTensorType::get({batch, kvHeads, group, seq, width}, t);
    auto out = RankedTensorType::get({batch, heads, seq, width}, t);
    Value e = tensor::ExpandShapeOp::create(b, loc, split, x,
                                            ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
    return tensor::CollapseShapeOp::create(b, loc, out, e,
                                           ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
  }

  /// [B, A, S] -> [B, K, G*S]: per-query rows (a log-sum-exp) in the
  /// grouped layout.
  Value groupedRows(Value x) {
    auto split = RankedTensorType::get({batch, kvHeads, group, seq}, t);
    auto rows = RankedTensorType::get({batch, kvHeads, group * seq}, t);
    Value e = tensor::ExpandShapeOp::create(b, loc, split, x,
                                            ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}});
    return tensor::CollapseShapeOp::create(b, loc, rows, e,
                                           ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
  }

  /// [B, K, G*S] -> [B, A, S]
  Value ungroupedRows(Value x) {
    auto split = RankedTensorType::get({batch, kvHeads, group, seq}, t);
    auto out = RankedTensorType::get({batch, heads, seq}, t);
    Value e = tensor::ExpandShapeOp::create(b, loc, split, x,
                                            ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    return tensor::CollapseShapeOp::create(b, loc, out, e,
                                           ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}});
  }

  /// scale * q k^T + mask in the grouped layout [B, K, G*S, Skv].
  Value scores(Value groupedQuery, Value key) {
    // scores[b, kv, g*S + s, t] = q[b, kv*G + g, s] . k[b, kv, t]
    Value scores = matmul(b, loc, groupedQuery, key, /*transposeLhs=*/false,
                          /*transposeRhs=*/true);
    RankedTensorType scoresType = tensorType(scores);
    int64_t offset = keys - seq;
    return elementwise(
        b, loc, scoresType, {scores}, {b.getMultiDimIdentityMap(4)},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value v = arith::MulFOp::create(nb, l, a[0], floatConst(nb, l, t, scale));
          if (!causal)
            return v;
          // Query s (row g*S + s) sees keys t <= s + offset.
          Value row = linalg::IndexOp::create(nb, l, 2);
          Value s = arith::RemUIOp::create(nb, l, row, arith::ConstantIndexOp::create(nb, l, seq));
          Value key = linalg::IndexOp::create(nb, l, 3);
          Value last = arith::AddIOp::create(
              nb, l, s,
              queryOffset ? queryOffset : Value(arith::ConstantIndexOp::create(nb, l, offset)));
          if (order) {
            // Indices of the head-tail ordered sequence: compare positions.
            key = headTailPosition(nb, l, key, order.order());
            last = headTailPosition(nb, l, last, order.order());
          }
          Value masked = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, key, last);
          return arith::SelectOp::create(nb, l, masked, floatConst(nb, l, t, -INFINITY), v);
        });
  }

  /// softmax(scale * q k^T + mask) in the grouped layout [B, K, G*S, Skv].
  Value probabilities(Value groupedQuery, Value key) {
    return softmaxRows(b, loc, scores(groupedQuery, key));
  }

  /// dQ [B, A, S, D], dK and dV from the probabilities `p`, the grouped
  /// query and output gradient, and `scoreGrad` (dS from P and dP): dV =
  /// P^T dO and dK = dS^T Q contract the G*S rows, so a kv head's gradient
  /// sums over its query heads in the GEMM.
  SmallVector<Value> gradients(Value groupedQuery, Value groupedGrad, Value p, Value key,
                               Value value, function_ref<Value(Value p, Value dP)> scoreGrad) {
    Value dV = matmul(b, loc, p, groupedGrad, /*transposeLhs=*/true, false);
    Value dP = matmul(b, loc, groupedGrad, value, false, /*transposeRhs=*/true);
    Value dS = scoreGrad(p, dP);
    Value dQ = ungrouped(matmul(b, loc, dS, key, false, false));
    Value dK = matmul(b, loc, dS, groupedQuery, /*transposeLhs=*/true, false);
    return {dQ, dK, dV};
  }
};

/// Attention as two batched GEMMs around a masked softmax, grouped-query
/// heads as rows of one GEMM per kv head; the probabilities are a second
/// result where the op has one.
struct AttentionLowering : OpRewritePattern<tfm::AttentionOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::AttentionOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    GroupedAttention att(b, op.getLoc(), op.getQuery(), op.getKey(), op.getCausal(),
                         op.getScale().convertToDouble(), op.getQueryOffset(),
                         op.getHeadTailAttr());
    Value probs = att.probabilities(att.grouped(op.getQuery()), op.getKey());
    SmallVector<Value> results = {
        att.ungrouped(matmul(b, op.getLoc(), probs, op.getValue(), false, false))};
    if (op.getProbabilities())
      results.push_back(att.ungrouped(probs));
    b.replaceOp(op, results);
    return success();
  }
};

/// The gradients of attention with the probabilities recomputed (or read,
/// where the forward kept them), in the grouped layout.
struct AttentionGradLowering : OpRewritePattern<tfm::AttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::AttentionGradOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    double scale = op.getScale().convertToDouble();
    GroupedAttention att(b, loc, op.getQuery(), op.getKey(), op.getCausal(), scale,
                         op.getQueryOffset(), op.getHeadTailAttr());
    Value q = att.grouped(op.getQuery()), dO = att.grouped(op.getGrad());
    Value p = op.getProbabilities() ? att.grouped(op.getProbabilities())
                                    : att.probabilities(q, op.getKey());
    b.replaceOp(op, att.gradients(q, dO, p, op.getKey(), op.getValue(), [&](Value p, Value dP) {
      return softmaxGradRows(b, loc, p, dP, scale);
    }));
    return success();
  }
};

/// One block of ring attention: the softmax over the block's keys and its
/// log-sum-exp, max + log(sum of exp(score - max)), per query.
struct AttentionBlockLowering : OpRewritePattern<tfm::AttentionBlockOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::AttentionBlockOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    GroupedAttention att(b, loc, op.getQuery(), op.getKey(), op.getCausal(),
                         op.getScale().convertToDouble(), op.getQueryOffset());
    Value scores = att.scores(att.grouped(op.getQuery()), op.getKey());
    auto [max, sum] = rowMaxAndExpSum(b, loc, scores);
    unsigned rank = 4;
    Value probs = elementwise(b, loc, tensorType(scores), {scores, max, sum},
                              {b.getMultiDimIdentityMap(rank), rowMap(b, rank), rowMap(b, rank)},
                              [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                                Value e = math::ExpOp::create(
                                    nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                                return arith::DivFOp::create(nb, l, e, a[2]);
                              });
    Value lse =
        elementwise(b, loc, tensorType(max), {max, sum},
                    {b.getMultiDimIdentityMap(3), b.getMultiDimIdentityMap(3)},
                    [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                      return arith::AddFOp::create(nb, l, a[0], math::LogOp::create(nb, l, a[1]));
                    });
    b.replaceOp(op, {att.ungrouped(matmul(b, loc, probs, op.getValue(), false, false)),
                     att.ungroupedRows(lse)});
    return success();
  }
};

/// Online softmax's combine: the new log-sum-exp, then each side weighted
/// by exp(its lse - the new one).
struct AttentionMergeLowering : OpRewritePattern<tfm::AttentionMergeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::AttentionMergeOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType rowsType = tensorType(op.getLhsLse());
    unsigned rows = rowsType.getRank(), rank = rows + 1;
    Value lse = elementwise(
        b, loc, rowsType, {op.getLhsLse(), op.getRhsLse()},
        {b.getMultiDimIdentityMap(rows), b.getMultiDimIdentityMap(rows)},
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value max = arith::MaximumFOp::create(nb, l, a[0], a[1]);
          Value sum = arith::AddFOp::create(
              nb, l, math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], max)),
              math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[1], max)));
          return arith::AddFOp::create(nb, l, max, math::LogOp::create(nb, l, sum));
        });
    AffineMap id = b.getMultiDimIdentityMap(rank), row = rowMap(b, rank);
    Value result = elementwise(
        b, loc, tensorType(op.getLhs()),
        {op.getLhs(), op.getLhsLse(), op.getRhs(), op.getRhsLse(), lse}, {id, row, id, row, row},
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          auto weighted = [&](Value x, Value xLse) -> Value {
            Value w = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, xLse, a[4]));
            return arith::MulFOp::create(nb, l, x, w);
          };
          return arith::AddFOp::create(nb, l, weighted(a[0], a[1]), weighted(a[2], a[3]));
        });
    b.replaceOp(op, {result, lse});
    return success();
  }
};

/// One block of ring attention's backward: the block's columns of the
/// full softmax from the whole sequence's log-sum-exp, and
/// D = rowsum(dO * O) from the whole sequence's output, in the grouped
/// layout as attention's gradient.
struct AttentionBlockGradLowering : OpRewritePattern<tfm::AttentionBlockGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::AttentionBlockGradOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    double scale = op.getScale().convertToDouble();
    GroupedAttention att(b, loc, op.getQuery(), op.getKey(), op.getCausal(), scale,
                         op.getQueryOffset());
    Value q = att.grouped(op.getQuery()), dO = att.grouped(op.getGrad());
    Value scores = att.scores(q, op.getKey());
    unsigned rank = 4;
    AffineMap id = b.getMultiDimIdentityMap(rank), row = rowMap(b, rank);
    Value p =
        elementwise(b, loc, tensorType(scores), {scores, att.groupedRows(op.getLse())}, {id, row},
                    [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                      return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                    });
    Value d = rowSum(b, loc, {dO, att.grouped(op.getOutput())}, {},
                     [](OpBuilder &nb, Location l, ValueRange a, ValueRange) {
                       return arith::MulFOp::create(nb, l, a[0], a[1]).getResult();
                     });
    b.replaceOp(op, att.gradients(q, dO, p, op.getKey(), op.getValue(), [&](Value p, Value dP) {
      return elementwise(
          b, loc, tensorType(p), {p, dP, d}, {id, id, row},
          [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
            Value v = arith::MulFOp::create(nb, l, a[0], arith::SubFOp::create(nb, l, a[1], a[2]));
            return arith::MulFOp::create(nb, l, v, floatConst(nb, l, v.getType(), scale));
          });
    }));
    return success();
  }
};

} // namespace

void pmlir::tfm_to_linalg::populateAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<ArangeLowering, SplitHeadsLowering, MergeHeadsLowering, RopeLowering,
               AttentionLowering, AttentionGradLowering, AttentionBlockLowering,
               AttentionMergeLowering, AttentionBlockGradLowering>(patterns.getContext());
}
