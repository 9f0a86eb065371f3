//===- Experts.cpp - tfm to linalg: mixture-of-experts layers --------------===//
//
// Part of pmlir.
//
// The lowerings of the router, the sort by expert, dispatch and combine
// (gathers through the sort's permutation) and the grouped matmul (one
// contraction per expert over its rows, which the target runs as its GEMM
// kernel on the rows' dynamic count), forward and gradient. A whole block
// of experts (tfm.moe_experts, its gradient) is written out as those ops
// (ExpertBlock.h), which lower in turn. Every index
// read from a tensor is clamped into its range: these indices are data,
// and a hand-written program may pass any.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

#include "pmlir/Dialect/Tfm/IR/ExpertBlock.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm_to_linalg;

namespace {

Value indexConst(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// `v` (an integer of any width) as an index clamped into [0, size).
Value clampedIndex(OpBuilder &b, Location loc, Value v, int64_t size) {
  Value i = arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
  i = arith::MaxSIOp::create(b, loc, i, indexConst(b, loc, 0));
  return arith::MinSIOp::create(b, loc, i, indexConst(b, loc, size - 1));
}

/// [..., X] as [T, X]: the leading dimensions collapsed into one (a rank-1
/// tensor is one row).
Value asRows(OpBuilder &b, Location loc, Value x) {
  RankedTensorType type = tensorType(x);
  if (type.getRank() >= 2)
    return collapseLeading(b, loc, x);
  auto rows = RankedTensorType::get({1, type.getShape()[0]}, type.getElementType());
  return tensor::ExpandShapeOp::create(b, loc, rows, x, ArrayRef<ReassociationIndices>{{0, 1}});
}

/// The inverse of asRows: the [T, X] `rows` as a tensor of `type`.
Value fromRows(OpBuilder &b, Location loc, Value rows, RankedTensorType type) {
  int64_t rank = type.getRank();
  if (rank == 2)
    return rows;
  if (rank == 1)
    return tensor::CollapseShapeOp::create(b, loc, type, rows,
                                           ArrayRef<ReassociationIndices>{{0, 1}});
  ReassociationIndices leading;
  for (int64_t d = 0; d + 1 < rank; ++d)
    leading.push_back(d);
  return tensor::ExpandShapeOp::create(b, loc, type, rows,
                                       ArrayRef<ReassociationIndices>{leading, {rank - 1}});
}

/// Every element of `x` in one dimension, row-major.
Value flattened(OpBuilder &b, Location loc, Value x) {
  RankedTensorType type = tensorType(x);
  if (type.getRank() == 1)
    return x;
  ReassociationIndices all;
  for (int64_t d = 0; d < type.getRank(); ++d)
    all.push_back(d);
  auto flat = RankedTensorType::get({type.getNumElements()}, type.getElementType());
  return tensor::CollapseShapeOp::create(b, loc, flat, x, ArrayRef<ReassociationIndices>{all});
}

/// The inverse of flattened: the rank-1 `flat` as a tensor of `shape`.
Value unflattened(OpBuilder &b, Location loc, Value flat, ArrayRef<int64_t> shape) {
  if (shape.size() == 1)
    return flat;
  ReassociationIndices all;
  for (size_t d = 0; d < shape.size(); ++d)
    all.push_back(static_cast<int64_t>(d));
  return tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get(shape, tensorType(flat).getElementType()), flat,
      ArrayRef<ReassociationIndices>{all});
}

Value filledInt(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, int64_t value) {
  Type i64 = b.getI64Type();
  Value init = emptyLike(b, loc, shape, i64);
  Value fill = arith::ConstantOp::create(b, loc, b.getIntegerAttr(i64, value));
  return linalg::FillOp::create(b, loc, fill, init).getResult(0);
}

AffineMap mapOf(OpBuilder &b, unsigned loops, ArrayRef<unsigned> dims) {
  SmallVector<AffineExpr> exprs;
  for (unsigned d : dims)
    exprs.push_back(b.getAffineDimExpr(d));
  return AffineMap::get(loops, 0, exprs, b.getContext());
}

/// Per token of `experts` [T, k] (clamped into [0, numExperts)), the sum
/// over its choices of `values` [T, k] at the chosen expert: [T, E], zero
/// where an expert was not chosen.
Value byExpert(OpBuilder &b, Location loc, Value experts, Value values, int64_t numExperts) {
  RankedTensorType type = tensorType(values);
  int64_t tokens = type.getShape()[0];
  Type t = type.getElementType();
  auto outType = RankedTensorType::get({tokens, numExperts}, t);
  // Loops: token, expert, choice (summed).
  return generic(
      b, loc, outType, {experts, values},
      {mapOf(b, 3, {0, 2}), mapOf(b, 3, {0, 2}), mapOf(b, 3, {0, 1})},
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value chosen = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                             clampedIndex(nb, l, a[0], numExperts),
                                             linalg::IndexOp::create(nb, l, 1));
        Value v = arith::SelectOp::create(nb, l, chosen, a[1], floatConst(nb, l, t, 0.0));
        return arith::AddFOp::create(nb, l, a[2], v);
      },
      filled(b, loc, outType.getShape(), t, 0.0));
}

/// How many elements of `experts` [N] (clamped into [0, numExperts)) name
/// each expert: [numExperts] i64.
Value countPerExpert(OpBuilder &b, Location loc, Value experts, int64_t numExperts) {
  Type i64 = b.getI64Type();
  // Loops: expert, pair (summed).
  return generic(
      b, loc, RankedTensorType::get({numExperts}, i64), {experts},
      {mapOf(b, 2, {1}), mapOf(b, 2, {0})}, {IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value mine = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                           clampedIndex(nb, l, a[0], numExperts),
                                           linalg::IndexOp::create(nb, l, 0));
        return arith::AddIOp::create(nb, l, a[1], arith::ExtUIOp::create(nb, l, i64, mine));
      },
      filledInt(b, loc, {numExperts}, 0));
}

/// Where in head-tail order (HeadTailOrder) sequence position `position`
/// is stored: the inverse of HeadTailOrder::position, on an index value.
Value headTailIndex(OpBuilder &b, Location l, Value position, HeadTailOrder order) {
  auto constant = [&](int64_t v) { return indexConst(b, l, v); };
  int64_t heads = order.ranks * order.head();
  Value inHead = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, position, constant(heads));
  // A head chunk's: rank p / head, within p % head.
  Value head = arith::AddIOp::create(
      b, l,
      arith::MulIOp::create(b, l, arith::DivUIOp::create(b, l, position, constant(order.head())),
                            constant(order.block())),
      arith::RemUIOp::create(b, l, position, constant(order.head())));
  // A tail chunk's, q = p - ranks * head past the heads: rank
  // ranks - 1 - q / tail, within head + q % tail (q clamped at 0 where
  // the position is a head's, whose value the select drops).
  Value q = arith::SubIOp::create(b, l, arith::MaxUIOp::create(b, l, position, constant(heads)),
                                  constant(heads));
  Value rank = arith::SubIOp::create(b, l, constant(order.ranks - 1),
                                     arith::DivUIOp::create(b, l, q, constant(order.tail())));
  Value tail = arith::AddIOp::create(
      b, l, arith::MulIOp::create(b, l, rank, constant(order.block())),
      arith::AddIOp::create(b, l, arith::RemUIOp::create(b, l, q, constant(order.tail())),
                            constant(order.head())));
  return arith::SelectOp::create(b, l, inHead, head, tail);
}

/// The choices of `experts` ([..., S, k], clamped into [0, numExperts))
/// past `capacity`: one pass over them in row-major order (with `order`,
/// each sequence's tokens in sequence order, where they are stored in
/// head-tail order) keeps each sequence's count of each expert's places so
/// far. Returns, per choice flattened ([N] i64), 1 where dropped, and per
/// expert how many were.
std::pair<Value, Value> pastCapacity(OpBuilder &b, Location loc, Value experts, int64_t capacity,
                                     int64_t numExperts, tfm::HeadTailAttr order) {
  RankedTensorType type = tensorType(experts);
  ArrayRef<int64_t> shape = type.getShape();
  int64_t perSequence = shape[shape.size() - 2] * shape.back();
  int64_t pairs = type.getNumElements();
  int64_t sequences = perSequence > 0 ? pairs / perSequence : 0;
  Value flat = flattened(b, loc, experts);
  Type i64 = b.getI64Type();
  auto i64Const = [&](OpBuilder &nb, Location l, int64_t v) -> Value {
    return arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(v));
  };
  auto pass = scf::ForOp::create(
      b, loc, indexConst(b, loc, 0), indexConst(b, loc, pairs), indexConst(b, loc, 1),
      ValueRange{filledInt(b, loc, {sequences * numExperts}, 0), filledInt(b, loc, {pairs}, 0),
                 filledInt(b, loc, {numExperts}, 0)},
      [&](OpBuilder &nb, Location l, Value i, ValueRange iter) {
        Value sequence = arith::DivUIOp::create(nb, l, i, indexConst(nb, l, perSequence));
        if (order) {
          // Choice j of the token at sequence position p is stored at
          // (sequence * S + index of p) * k + j.
          int64_t k = shape.back();
          Value within = arith::RemUIOp::create(nb, l, i, indexConst(nb, l, perSequence));
          Value token = headTailIndex(
              nb, l, arith::DivUIOp::create(nb, l, within, indexConst(nb, l, k)), order.order());
          Value tokens = arith::AddIOp::create(
              nb, l, arith::MulIOp::create(nb, l, sequence, indexConst(nb, l, perSequence / k)),
              token);
          i = arith::AddIOp::create(nb, l,
                                    arith::MulIOp::create(nb, l, tokens, indexConst(nb, l, k)),
                                    arith::RemUIOp::create(nb, l, within, indexConst(nb, l, k)));
        }
        Value expert = clampedIndex(nb, l, tensor::ExtractOp::create(nb, l, flat, i), numExperts);
        Value place = arith::AddIOp::create(
            nb, l, arith::MulIOp::create(nb, l, sequence, indexConst(nb, l, numExperts)), expert);
        Value taken = tensor::ExtractOp::create(nb, l, iter[0], place);
        Value over =
            arith::ExtUIOp::create(nb, l, i64,
                                   arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sge, taken,
                                                         i64Const(nb, l, capacity)));
        Value places = tensor::InsertOp::create(
            nb, l, arith::AddIOp::create(nb, l, taken, i64Const(nb, l, 1)), iter[0], place);
        Value dropped = tensor::InsertOp::create(nb, l, over, iter[1], i);
        Value perExpert = tensor::InsertOp::create(
            nb, l,
            arith::AddIOp::create(nb, l, tensor::ExtractOp::create(nb, l, iter[2], expert), over),
            iter[2], expert);
        scf::YieldOp::create(nb, l, ValueRange{places, dropped, perExpert});
      });
  return {pass.getResult(1), pass.getResult(2)};
}

/// Softmax over the experts, the k largest (equal ones in expert order),
/// their probabilities, renormalized over the k with `normalize`.
struct MoeRouteLowering : OpRewritePattern<tfm::MoeRouteOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::MoeRouteOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    Value logits = asRows(b, loc, op.getLogits());
    ArrayRef<int64_t> shape = tensorType(logits).getShape();
    int64_t tokens = shape[0], experts = shape[1], k = static_cast<int64_t>(op.getTopK());
    Type t = tensorType(logits).getElementType();
    Type i64 = b.getI64Type();
    auto [max, sum] = rowMaxAndExpSum(b, loc, logits);
    // The place of each expert in its token's descending order: how many
    // experts beat it (a larger logit, or an equal one of a smaller id).
    // Loops: token, expert, rival (summed).
    auto placeType = RankedTensorType::get({tokens, experts}, i64);
    Value place = generic(
        b, loc, placeType, {logits, logits},
        {mapOf(b, 3, {0, 1}), mapOf(b, 3, {0, 2}), mapOf(b, 3, {0, 1})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value larger = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OGT, a[1], a[0]);
          Value equal = arith::CmpFOp::create(nb, l, arith::CmpFPredicate::OEQ, a[1], a[0]);
          Value before = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                               linalg::IndexOp::create(nb, l, 2),
                                               linalg::IndexOp::create(nb, l, 1));
          Value beats =
              arith::OrIOp::create(nb, l, larger, arith::AndIOp::create(nb, l, equal, before));
          return arith::AddIOp::create(nb, l, a[2], arith::ExtUIOp::create(nb, l, i64, beats));
        },
        filledInt(b, loc, placeType.getShape(), 0));
    // The expert at each of the first k places. (The largest id at the
    // place: with NaN logits places may repeat, and an id stays in range.)
    // Loops: token, choice, expert (reduced).
    auto chosenType = RankedTensorType::get({tokens, k}, i64);
    Value chosen = generic(
        b, loc, chosenType, {place}, {mapOf(b, 3, {0, 2}), mapOf(b, 3, {0, 1})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value atPlace = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::eq, a[0],
              arith::IndexCastOp::create(nb, l, i64, linalg::IndexOp::create(nb, l, 1)));
          Value id = arith::IndexCastOp::create(nb, l, i64, linalg::IndexOp::create(nb, l, 2));
          Value candidate = arith::SelectOp::create(
              nb, l, atPlace, id, arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0)));
          return arith::MaxSIOp::create(nb, l, a[1], candidate);
        },
        filledInt(b, loc, chosenType.getShape(), 0));
    // exp(logit - max) of each choice, over the softmax's sum or over the
    // choices' own.
    auto weightType = RankedTensorType::get({tokens, k}, t);
    Value numerators = elementwise(
        b, loc, weightType, {chosen, max}, {mapOf(b, 2, {0, 1}), mapOf(b, 2, {0})},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value logit = tensor::ExtractOp::create(
              nb, l, logits,
              ValueRange{linalg::IndexOp::create(nb, l, 0), clampedIndex(nb, l, a[0], experts)});
          return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, logit, a[1]));
        });
    Value denominators =
        op.getNormalize()
            ? rowSum(b, loc, {numerators}, {},
                     [](OpBuilder &, Location, ValueRange a, ValueRange) { return a[0]; })
            : sum;
    Value weights = elementwise(b, loc, weightType, {numerators, denominators},
                                {mapOf(b, 2, {0, 1}), mapOf(b, 2, {0})},
                                [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                                  return arith::DivFOp::create(nb, l, a[0], a[1]);
                                });
    b.replaceOp(op, {fromRows(b, loc, weights, op.getWeights().getType()),
                     fromRows(b, loc, chosen, op.getExperts().getType())});
    return success();
  }
};

/// q * (G - sum_j w_j g_j), q the chosen weights (normalize) or the
/// softmax, G the weight gradients by expert.
struct MoeRouteGradLowering : TfmPattern<tfm::MoeRouteGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MoeRouteGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value logits = asRows(b, loc, op.getLogits());
    Value weights = asRows(b, loc, op.getWeights());
    Value experts = asRows(b, loc, op.getExperts());
    Value dw = asRows(b, loc, op.getWeightsGrad());
    int64_t numExperts = tensorType(logits).getShape()[1];
    Value dot = rowSum(b, loc, {weights, dw}, {},
                       [](OpBuilder &nb, Location l, ValueRange a, ValueRange) -> Value {
                         return arith::MulFOp::create(nb, l, a[0], a[1]);
                       });
    Value gradByExpert = byExpert(b, loc, experts, dw, numExperts);
    Value q = op.getNormalize() ? byExpert(b, loc, experts, weights, numExperts)
                                : softmaxRows(b, loc, logits);
    RankedTensorType type = tensorType(logits);
    Value result = elementwise(b, loc, type, {q, gradByExpert, dot},
                               {mapOf(b, 2, {0, 1}), mapOf(b, 2, {0, 1}), mapOf(b, 2, {0})},
                               [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                                 return arith::MulFOp::create(
                                     nb, l, a[0], arith::SubFOp::create(nb, l, a[1], a[2]));
                               });
    return fromRows(b, loc, result, op.getResult().getType());
  }
};

/// A counting sort: the count of each expert, the place each expert's
/// pairs start at, then one pass over the pairs in order that deals out
/// the places (stable).
struct MoeSortLowering : OpRewritePattern<tfm::MoeSortOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::MoeSortOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    Value experts = flattened(b, loc, op.getExperts());
    int64_t pairs = tensorType(experts).getShape()[0];
    int64_t numExperts = static_cast<int64_t>(op.getNumExperts());
    Type i64 = b.getI64Type();
    auto countsType = RankedTensorType::get({numExperts}, i64);
    Value counts = countPerExpert(b, loc, experts, numExperts);
    // Loops: expert, earlier expert (summed).
    Value starts = generic(
        b, loc, countsType, {counts}, {mapOf(b, 2, {1}), mapOf(b, 2, {0})},
        {IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value earlier = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult,
                                                linalg::IndexOp::create(nb, l, 1),
                                                linalg::IndexOp::create(nb, l, 0));
          Value add = arith::SelectOp::create(
              nb, l, earlier, a[0], arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0)));
          return arith::AddIOp::create(nb, l, a[1], add);
        },
        filledInt(b, loc, {numExperts}, 0));
    Value slots = emptyLike(b, loc, {pairs}, i64);
    Value sources = emptyLike(b, loc, {pairs}, i64);
    auto deal = scf::ForOp::create(
        b, loc, indexConst(b, loc, 0), indexConst(b, loc, pairs), indexConst(b, loc, 1),
        ValueRange{starts, slots, sources},
        [&](OpBuilder &nb, Location l, Value i, ValueRange iter) {
          Value expert =
              clampedIndex(nb, l, tensor::ExtractOp::create(nb, l, experts, i), numExperts);
          Value slot = tensor::ExtractOp::create(nb, l, iter[0], expert);
          Value next = arith::AddIOp::create(
              nb, l, slot, arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(1)));
          Value cursors = tensor::InsertOp::create(nb, l, next, iter[0], expert);
          Value newSlots = tensor::InsertOp::create(nb, l, slot, iter[1], i);
          Value source = arith::IndexCastOp::create(nb, l, i64, i);
          Value slotIndex = clampedIndex(nb, l, slot, pairs);
          Value newSources = tensor::InsertOp::create(nb, l, source, iter[2], slotIndex);
          scf::YieldOp::create(nb, l, ValueRange{cursors, newSlots, newSources});
        });
    b.replaceOp(op, {unflattened(b, loc, deal.getResult(1), op.getSlots().getType().getShape()),
                     deal.getResult(2), counts});
    return success();
  }
};

/// Row r of the result is the token of pair sources[r] (pair p is token
/// p / k's choice p % k), times that pair's weight where given.
Value dispatchRows(OpBuilder &b, Location loc, Value input, Value sources, Value weights,
                   RankedTensorType type) {
  Value tokens = asRows(b, loc, input);
  int64_t numTokens = tensorType(tokens).getShape()[0];
  int64_t pairs = type.getShape()[0];
  int64_t choices = pairs / numTokens;
  Value flatWeights = weights ? flattened(b, loc, weights) : Value();
  return elementwise(
      b, loc, type, {sources}, {mapOf(b, 2, {0})},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value pair = clampedIndex(nb, l, a[0], pairs);
        Value token = arith::DivUIOp::create(nb, l, pair, indexConst(nb, l, choices));
        Value v = tensor::ExtractOp::create(nb, l, tokens,
                                            ValueRange{token, linalg::IndexOp::create(nb, l, 1)});
        if (!flatWeights)
          return v;
        return arith::MulFOp::create(nb, l, v, tensor::ExtractOp::create(nb, l, flatWeights, pair));
      });
}

/// Per token, the sum over its choices of the row at the choice's slot,
/// times the choice's weight where given.
Value combineRows(OpBuilder &b, Location loc, Value rows, Value slots, Value weights,
                  RankedTensorType type) {
  Value slotRows = asRows(b, loc, slots);
  ArrayRef<int64_t> slotShape = tensorType(slotRows).getShape();
  int64_t pairs = tensorType(rows).getShape()[0], hidden = tensorType(rows).getShape()[1];
  Type t = type.getElementType();
  auto outType = RankedTensorType::get({slotShape[0], hidden}, t);
  SmallVector<Value> inputs = {slotRows};
  SmallVector<AffineMap> maps = {mapOf(b, 3, {0, 1})};
  if (weights) {
    inputs.push_back(asRows(b, loc, weights));
    maps.push_back(mapOf(b, 3, {0, 1}));
  }
  maps.push_back(mapOf(b, 3, {0, 2}));
  // Loops: token, choice (summed), hidden.
  Value out = generic(
      b, loc, outType, inputs, maps,
      {IteratorType::parallel, IteratorType::reduction, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value v = tensor::ExtractOp::create(
            nb, l, rows,
            ValueRange{clampedIndex(nb, l, a[0], pairs), linalg::IndexOp::create(nb, l, 2)});
        if (weights)
          v = arith::MulFOp::create(nb, l, v, a[1]);
        return arith::AddFOp::create(nb, l, a.back(), v);
      },
      filled(b, loc, outType.getShape(), t, 0.0));
  return fromRows(b, loc, out, type);
}

struct MoeDispatchLowering : TfmPattern<tfm::MoeDispatchOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MoeDispatchOp op, PatternRewriter &b) const override {
    return dispatchRows(b, op.getLoc(), op.getInput(), op.getSources(), op.getWeights(),
                        op.getResult().getType());
  }
};

struct MoeCombineLowering : TfmPattern<tfm::MoeCombineOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MoeCombineOp op, PatternRewriter &b) const override {
    return combineRows(b, op.getLoc(), op.getInput(), op.getSlots(), op.getWeights(),
                       op.getResult().getType());
  }
};

/// Per choice, the dot product of its token's row of `tokens` with the row
/// at its slot.
struct MoeWeightGradLowering : TfmPattern<tfm::MoeWeightGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MoeWeightGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value tokens = asRows(b, loc, op.getTokens());
    Value slots = asRows(b, loc, op.getSlots());
    Value rows = op.getRows();
    int64_t pairs = tensorType(rows).getShape()[0];
    ArrayRef<int64_t> slotShape = tensorType(slots).getShape();
    Type t = tensorType(tokens).getElementType();
    auto outType = RankedTensorType::get(slotShape, t);
    // Loops: token, choice, hidden (summed).
    Value out = generic(
        b, loc, outType, {tokens, slots},
        {mapOf(b, 3, {0, 2}), mapOf(b, 3, {0, 1}), mapOf(b, 3, {0, 1})},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value v = tensor::ExtractOp::create(
              nb, l, rows,
              ValueRange{clampedIndex(nb, l, a[1], pairs), linalg::IndexOp::create(nb, l, 2)});
          return addF(nb, l, a[2], arith::MulFOp::create(nb, l, a[0], v));
        },
        filled(b, loc, slotShape, t, 0.0));
    return fromRows(b, loc, out, op.getResult().getType());
  }
};

/// `slice` zeroed, then the sum over loop 2 of lhs * rhs through `maps`
/// (loops m, n, k): a contraction the target may run as a GEMM kernel on
/// the slice's dynamic sizes.
Value contractInto(OpBuilder &b, Location loc, Value slice, Value lhs, Value rhs,
                   ArrayRef<AffineMap> maps) {
  RankedTensorType type = tensorType(slice);
  Value zero = floatConst(b, loc, type.getElementType(), 0.0);
  Value init = linalg::FillOp::create(b, loc, zero, slice).getResult(0);
  return generic(
      b, loc, type, {lhs, rhs}, maps,
      {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction},
      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::AddFOp::create(nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]));
      },
      init);
}

/// A slice's offsets or sizes: each a value where given, else the static
/// number.
SmallVector<OpFoldResult> folds(OpBuilder &b, ArrayRef<Value> values, ArrayRef<int64_t> statics) {
  SmallVector<OpFoldResult> out;
  for (auto [v, s] : llvm::zip(values, statics))
    out.push_back(v ? OpFoldResult(v) : OpFoldResult(b.getIndexAttr(s)));
  return out;
}

/// Unit strides of a slice of `rank` dimensions.
SmallVector<OpFoldResult> unitStrides(OpBuilder &b, unsigned rank) {
  return SmallVector<OpFoldResult>(rank, b.getIndexAttr(1));
}

/// What the body of a loop over groups gets: the group, its first row, its
/// row count (cut to the rows left, at least 0) and the result so far.
struct Group {
  Value index, start, count, result;
};

/// A loop over the `counts.size()` groups of consecutive rows of `rows`
/// rows, carrying `init`: `body` returns the result with the group's part
/// written. Returns the result and the first row past the groups.
std::pair<Value, Value> overGroups(OpBuilder &b, Location loc, Value counts, int64_t rows,
                                   Value init,
                                   function_ref<Value(OpBuilder &, Location, const Group &)> body) {
  int64_t groups = tensorType(counts).getShape()[0];
  auto loop = scf::ForOp::create(
      b, loc, indexConst(b, loc, 0), indexConst(b, loc, groups), indexConst(b, loc, 1),
      ValueRange{init, indexConst(b, loc, 0)},
      [&](OpBuilder &nb, Location l, Value index, ValueRange iter) {
        Value start = iter[1];
        Value count = arith::IndexCastOp::create(nb, l, nb.getIndexType(),
                                                 tensor::ExtractOp::create(nb, l, counts, index));
        count = arith::MaxSIOp::create(nb, l, count, indexConst(nb, l, 0));
        Value left = arith::SubIOp::create(nb, l, indexConst(nb, l, rows), start);
        count = arith::MinSIOp::create(nb, l, count, left);
        Value next = body(nb, l, Group{index, start, count, iter[0]});
        scf::YieldOp::create(nb, l, ValueRange{next, arith::AddIOp::create(nb, l, start, count)});
      });
  return {loop.getResult(0), loop.getResult(1)};
}

/// A group's rows [start, start + count) of the [N, W] tensor `x`.
Value groupRows(OpBuilder &b, Location loc, Value x, const Group &g) {
  int64_t width = tensorType(x).getShape()[1];
  return tensor::ExtractSliceOp::create(b, loc, x, folds(b, {g.start, Value()}, {0, 0}),
                                        folds(b, {g.count, Value()}, {0, width}),
                                        unitStrides(b, 2));
}

/// A group's [X, Y] block of the [E, X, Y] tensor `x` (rank-reduced).
Value groupBlock(OpBuilder &b, Location loc, Value x, const Group &g) {
  RankedTensorType type = tensorType(x);
  ArrayRef<int64_t> shape = type.getShape();
  auto blockType = RankedTensorType::get({shape[1], shape[2]}, type.getElementType());
  return tensor::ExtractSliceOp::create(
      b, loc, blockType, x, folds(b, {g.index, Value(), Value()}, {0, 0, 0}),
      folds(b, {Value(), Value(), Value()}, {1, shape[1], shape[2]}), unitStrides(b, 3));
}

/// `dest` with `value` written where `slice` (an extract_slice of it) was.
Value writeBack(OpBuilder &b, Location loc, Value value, Value slice, Value dest) {
  auto slicing = cast<tensor::ExtractSliceOp>(slice.getDefiningOp());
  return tensor::InsertSliceOp::create(b, loc, value, dest, slicing.getMixedOffsets(),
                                       slicing.getMixedSizes(), slicing.getMixedStrides());
}

/// One GEMM per group over its rows: the rows [start, start + count) of
/// the result are those of lhs times the group's weight.
struct GroupedMatmulLowering : TfmPattern<tfm::GroupedMatmulOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::GroupedMatmulOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getResult().getType();
    int64_t rows = type.getShape()[0];
    // Loops: row (m), column (n), inner (k).
    SmallVector<AffineMap> maps = {mapOf(b, 3, {0, 2}),
                                   op.getTransposeRhs() ? mapOf(b, 3, {1, 2}) : mapOf(b, 3, {2, 1}),
                                   mapOf(b, 3, {0, 1})};
    // Each group zeroes its own rows before its GEMM (the target's kernel
    // overwrites them); only the rows past the groups are zeroed after.
    Value out = emptyLike(b, loc, type.getShape(), type.getElementType());
    auto [grouped, end] = overGroups(
        b, loc, op.getCounts(), rows, out, [&](OpBuilder &nb, Location l, const Group &g) -> Value {
          Value slice = groupRows(nb, l, g.result, g);
          Value product = contractInto(nb, l, slice, groupRows(nb, l, op.getLhs(), g),
                                       groupBlock(nb, l, op.getRhs(), g), maps);
          return writeBack(nb, l, product, slice, g.result);
        });
    Value left = arith::SubIOp::create(b, loc, indexConst(b, loc, rows), end);
    Value tail = groupRows(b, loc, grouped, Group{Value(), end, left, grouped});
    Value zero = floatConst(b, loc, type.getElementType(), 0.0);
    return writeBack(b, loc, linalg::FillOp::create(b, loc, zero, tail).getResult(0), tail,
                     grouped);
  }
};

/// Per group, its rows of lhs transposed times its rows of rhs, into the
/// group's [K, F] block of the result (zeros for an empty group).
struct GroupedWeightGradLowering : TfmPattern<tfm::GroupedWeightGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::GroupedWeightGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getResult().getType();
    int64_t rows = tensorType(op.getLhs()).getShape()[0];
    // Loops: lhs column (m), rhs column (n), row (k).
    SmallVector<AffineMap> maps = {mapOf(b, 3, {2, 0}), mapOf(b, 3, {2, 1}), mapOf(b, 3, {0, 1})};
    // Every group's block is zeroed before its GEMM, an empty group's too.
    Value out = emptyLike(b, loc, type.getShape(), type.getElementType());
    return overGroups(b, loc, op.getCounts(), rows, out,
                      [&](OpBuilder &nb, Location l, const Group &g) -> Value {
                        Value block = groupBlock(nb, l, g.result, g);
                        Value product = contractInto(nb, l, block, groupRows(nb, l, op.getLhs(), g),
                                                     groupRows(nb, l, op.getRhs(), g), maps);
                        return writeBack(nb, l, product, block, g.result);
                      })
        .first;
  }
};

/// The counts of the choices naming each expert, or of those it drops past
/// a capacity.
struct MoeExpertCountsLowering : OpRewritePattern<tfm::MoeExpertCountsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::MoeExpertCountsOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    int64_t numExperts = static_cast<int64_t>(op.getNumExperts());
    if (std::optional<uint64_t> capacity = op.getCapacity())
      b.replaceOp(op, pastCapacity(b, loc, op.getExperts(), static_cast<int64_t>(*capacity),
                                   numExperts, op.getHeadTailAttr())
                          .second);
    else
      b.replaceOp(op, countPerExpert(b, loc, flattened(b, loc, op.getExperts()), numExperts));
    return success();
  }
};

/// The weights with those of the choices past capacity zero.
struct MoeCapacityLowering : OpRewritePattern<tfm::MoeCapacityOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::MoeCapacityOp op, PatternRewriter &b) const override {
    if (failed(staticOperands(op, b)))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType type = op.getResult().getType();
    Value dropped = pastCapacity(b, loc, op.getExperts(), static_cast<int64_t>(op.getCapacity()),
                                 static_cast<int64_t>(op.getNumExperts()), op.getHeadTailAttr())
                        .first;
    dropped = unflattened(b, loc, dropped, type.getShape());
    AffineMap identity = b.getMultiDimIdentityMap(type.getRank());
    Type t = type.getElementType();
    b.replaceOp(op, elementwise(b, loc, type, {op.getWeights(), dropped}, {identity, identity},
                                [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                                  Value kept = arith::CmpIOp::create(
                                      nb, l, arith::CmpIPredicate::eq, a[1],
                                      arith::ConstantOp::create(nb, l, nb.getI64IntegerAttr(0)));
                                  return arith::SelectOp::create(nb, l, kept, a[0],
                                                                 floatConst(nb, l, t, 0.0));
                                }));
    return success();
  }
};

/// Row 0: per expert, the sum over tokens of its softmax probability;
/// row 1: the count of the tokens' choices naming it.
struct MoeRouterStatsLowering : TfmPattern<tfm::MoeRouterStatsOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MoeRouterStatsOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value probs = softmaxRows(b, loc, asRows(b, loc, op.getLogits()));
    Value experts = asRows(b, loc, op.getExperts());
    RankedTensorType type = op.getResult().getType();
    Type t = type.getElementType();
    int64_t numExperts = type.getShape()[1];
    auto perExpert = RankedTensorType::get({numExperts}, t);
    // Loops: token (summed), expert.
    Value probSums = generic(
        b, loc, perExpert, {probs}, {mapOf(b, 2, {0, 1}), mapOf(b, 2, {1})},
        {IteratorType::reduction, IteratorType::parallel},
        [](OpBuilder &nb, Location l, ValueRange a) -> Value { return addF(nb, l, a[1], a[0]); },
        filled(b, loc, {numExperts}, t, 0.0));
    // Loops: token (summed), choice (summed), expert.
    Value counts = generic(
        b, loc, perExpert, {experts}, {mapOf(b, 3, {0, 1}), mapOf(b, 3, {2})},
        {IteratorType::reduction, IteratorType::reduction, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value mine = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                             clampedIndex(nb, l, a[0], numExperts),
                                             linalg::IndexOp::create(nb, l, 2));
          return arith::AddFOp::create(nb, l, a[1],
                                       arith::SelectOp::create(nb, l, mine,
                                                               floatConst(nb, l, t, 1.0),
                                                               floatConst(nb, l, t, 0.0)));
        },
        filled(b, loc, {numExperts}, t, 0.0));
    return elementwise(b, loc, type, {probSums, counts}, {mapOf(b, 2, {1}), mapOf(b, 2, {1})},
                       [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         Value first = arith::CmpIOp::create(
                             nb, l, arith::CmpIPredicate::eq, linalg::IndexOp::create(nb, l, 0),
                             arith::ConstantIndexOp::create(nb, l, 0));
                         return arith::SelectOp::create(nb, l, first, a[0], a[1]);
                       });
  }
};

/// p * (g - sum(p * g)) per token, g row 0 of the stats' gradient.
struct MoeRouterStatsGradLowering : TfmPattern<tfm::MoeRouterStatsGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MoeRouterStatsGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value probs = softmaxRows(b, loc, asRows(b, loc, op.getLogits()));
    RankedTensorType rowsType = tensorType(probs);
    Type t = rowsType.getElementType();
    int64_t tokens = rowsType.getShape()[0];
    // g read as row 0 of the stats' gradient: (token, expert) -> (0, expert).
    AffineMap rowZero =
        AffineMap::get(2, 0, {b.getAffineConstantExpr(0), b.getAffineDimExpr(1)}, b.getContext());
    auto tokenType = RankedTensorType::get({tokens}, t);
    Value dot = generic(
        b, loc, tokenType, {probs, op.getStatsGrad()},
        {mapOf(b, 2, {0, 1}), rowZero, mapOf(b, 2, {0})},
        {IteratorType::parallel, IteratorType::reduction},
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return addF(nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]));
        },
        filled(b, loc, {tokens}, t, 0.0));
    Value grad = elementwise(b, loc, rowsType, {probs, op.getStatsGrad(), dot},
                             {mapOf(b, 2, {0, 1}), rowZero, mapOf(b, 2, {0})},
                             [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                               return arith::MulFOp::create(
                                   nb, l, a[0], arith::SubFOp::create(nb, l, a[1], a[2]));
                             });
    return fromRows(b, loc, grad, op.getResult().getType());
  }
};

/// scale * sum over experts of stats[0, e] * stats[1, e].
struct MoeBalanceLossLowering : TfmPattern<tfm::MoeBalanceLossOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MoeBalanceLossOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getResult().getType();
    Type t = type.getElementType();
    MLIRContext *ctx = b.getContext();
    AffineMap row0 = AffineMap::get(1, 0, {b.getAffineConstantExpr(0), b.getAffineDimExpr(0)}, ctx);
    AffineMap row1 = AffineMap::get(1, 0, {b.getAffineConstantExpr(1), b.getAffineDimExpr(0)}, ctx);
    AffineMap scalar = AffineMap::get(1, 0, {}, ctx);
    double scale = op.getScale().convertToDouble();
    Value sum = generic(
        b, loc, type, {op.getStats(), op.getStats()}, {row0, row1, scalar},
        {IteratorType::reduction},
        [](OpBuilder &nb, Location l, ValueRange a) -> Value {
          return addF(nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]));
        },
        filled(b, loc, {}, t, 0.0));
    return elementwise(b, loc, type, {sum}, {AffineMap::get(0, 0, {}, ctx)},
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         return arith::MulFOp::create(nb, l, a[0], floatConst(nb, l, t, scale));
                       });
  }
};

} // namespace

/// The experts on one device: the ops they are made of.
struct MoeExpertsLowering : OpRewritePattern<tfm::MoeExpertsOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::MoeExpertsOp op, PatternRewriter &b) const override {
    auto in = tfm::ExpertOperands::of(op);
    b.replaceOp(op, tfm::buildExperts(b, op.getLoc(), in, in.numExperts(), /*exchange=*/nullptr));
    return success();
  }
};

struct MoeExpertsGradLowering : OpRewritePattern<tfm::MoeExpertsGradOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::MoeExpertsGradOp op, PatternRewriter &b) const override {
    auto in = tfm::ExpertOperands::of(op);
    FailureOr<SmallVector<Value>> grads = tfm::buildExpertsGradients(
        b, op.getLoc(), in, op.getResultGrad(), in.numExperts(), /*exchange=*/nullptr);
    if (failed(grads))
      return failure();
    b.replaceOp(op, *grads);
    return success();
  }
};

void pmlir::tfm_to_linalg::populateExpertPatterns(RewritePatternSet &patterns) {
  patterns.add<MoeRouteLowering, MoeRouteGradLowering, MoeSortLowering, MoeExpertCountsLowering,
               MoeCapacityLowering, MoeDispatchLowering, MoeCombineLowering, MoeWeightGradLowering,
               GroupedMatmulLowering, GroupedWeightGradLowering, MoeRouterStatsLowering,
               MoeRouterStatsGradLowering, MoeBalanceLossLowering, MoeExpertsLowering,
               MoeExpertsGradLowering>(patterns.getContext());
}
