//===- Gradients.cpp - Vector-Jacobian products of tfm ops ----------------===//
//
// Part of pmlir.
//
// Each differentiable op builds the gradients of its operands from those of
// its results (AutodiffOpInterface::buildGradients), in tfm ops on global
// shapes: gradient ops where a composition would be slower or less precise
// (TfmGradOps.td), forward ops where the gradient is one (a matmul's, a
// head split's). pmlir-autodiff calls these in reverse program order.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace pmlir::tfm;

namespace {

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

/// `grad` summed down to the type of `operand`, a trailing suffix of it (the
/// broadcast operand of add, sub and mul).
Value sumToShapeOf(OpBuilder &b, Location loc, Value grad, Value operand) {
  if (grad.getType() == operand.getType())
    return grad;
  return SumLeadingOp::create(b, loc, operand.getType(), grad);
}

/// The gradient `grad` of a result, or zeros of its type where none
/// reached it (an unused part of a split).
Value gradOrZeros(OpBuilder &b, Location loc, Value grad, Value result) {
  if (grad)
    return grad;
  return FillOp::create(b, loc, result.getType(), b.getF64FloatAttr(0.0));
}

/// One gradient of each operand, null where the operand is not a float
/// tensor.
void resizeGrads(Operation *op, SmallVectorImpl<Value> &grads) {
  grads.assign(op->getNumOperands(), Value());
}

} // namespace

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = EmbeddingGradOp::create(b, getLoc(), getTable().getType(), resultGrads[0], getIds(),
                                     getRowOffset());
  return success();
}

/// With op(x) the operand as the product reads it (transposed or not):
/// d op(lhs) = dy op(rhs)^T and d op(rhs) = op(lhs)^T dy, each written as one
/// matmul (or, for a rank-2 weight shared by a batched lhs, one weight_grad
/// contracting the batch) that produces the operand's own layout.
LogicalResult MatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                       SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dy = resultGrads[0], lhs = getLhs(), rhs = getRhs();
  bool tl = getTransposeLhs(), tr = getTransposeRhs();
  bool sharedRhs = tensorType(rhs).getRank() == 2 && tensorType(lhs).getRank() > 2;
  if (sharedRhs && tl)
    return emitOpError() << "cannot be differentiated: a batched 'lhs' read transposed "
                            "(transpose_lhs) against a shared rank-2 'rhs' has no gradient "
                            "as one tfm op; transpose the operand before the matmul";
  // Left: [.., M, K] = dy [.., M, N] . op(rhs)^T, or [.., K, M] = op(rhs) . dy^T.
  if (!tl)
    grads[0] = MatmulOp::create(b, loc, lhs.getType(), dy, rhs, false, !tr);
  else
    grads[0] = MatmulOp::create(b, loc, lhs.getType(), rhs, dy, tr, true);
  // Right: [K, N] = op(lhs)^T . dy, or [N, K] = dy^T . op(lhs).
  if (sharedRhs)
    grads[1] = tr ? WeightGradOp::create(b, loc, rhs.getType(), dy, lhs)
                  : WeightGradOp::create(b, loc, rhs.getType(), lhs, dy);
  else if (!tr)
    grads[1] = MatmulOp::create(b, loc, rhs.getType(), lhs, dy, !tl, false);
  else
    grads[1] = MatmulOp::create(b, loc, rhs.getType(), dy, lhs, true, tl);
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = resultGrads[0];
  grads[1] = sumToShapeOf(b, getLoc(), resultGrads[0], getRhs());
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = resultGrads[0];
  Value negated =
      ScaleOp::create(b, getLoc(), resultGrads[0].getType(), resultGrads[0], b.getF64FloatAttr(-1));
  grads[1] = sumToShapeOf(b, getLoc(), negated, getRhs());
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                    SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dy = resultGrads[0];
  grads[0] = MulOp::create(b, loc, dy.getType(), dy, getRhs());
  grads[1] = sumToShapeOf(b, loc, MulOp::create(b, loc, dy.getType(), dy, getLhs()), getRhs());
  return success();
}

LogicalResult ScaleOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = ScaleOp::create(b, getLoc(), getType(), resultGrads[0], getFactorAttr());
  return success();
}

LogicalResult GeluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = GeluGradOp::create(b, getLoc(), getType(), getInput(), resultGrads[0],
                                getApproximationAttr());
  return success();
}

LogicalResult SiluOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = SiluGradOp::create(b, getLoc(), getType(), getInput(), resultGrads[0]);
  return success();
}

LogicalResult SoftmaxOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = SoftmaxGradOp::create(b, getLoc(), getType(), getResult(), resultGrads[0]);
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dy = resultGrads[0];
  grads[0] =
      LayerNormGradOp::create(b, loc, getType(), getInput(), getGamma(), dy, getEpsilonAttr());
  grads[1] =
      LayerNormWeightGradOp::create(b, loc, getGamma().getType(), getInput(), dy, getEpsilonAttr());
  grads[2] = sumToShapeOf(b, loc, dy, getBeta());
  return success();
}

LogicalResult RmsNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                        SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dy = resultGrads[0];
  grads[0] = RmsNormGradOp::create(b, loc, getType(), getInput(), getGamma(), dy, getEpsilonAttr());
  grads[1] =
      RmsNormWeightGradOp::create(b, loc, getGamma().getType(), getInput(), dy, getEpsilonAttr());
  return success();
}

LogicalResult SplitHeadsOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                           SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = MergeHeadsOp::create(b, getLoc(), getInput().getType(), resultGrads[0]);
  return success();
}

LogicalResult MergeHeadsOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                           SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  int64_t heads = tensorType(getInput()).getShape()[1];
  grads[0] = SplitHeadsOp::create(b, getLoc(), getInput().getType(), resultGrads[0],
                                  b.getI64IntegerAttr(heads));
  return success();
}

/// The rotation is orthogonal: its gradient rotates back.
LogicalResult RopeOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                     SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = RopeOp::create(b, getLoc(), getType(), resultGrads[0], getPositions(), getThetaAttr(),
                            getInverse() ? UnitAttr() : b.getUnitAttr());
  return success();
}

LogicalResult AttentionOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                          SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  // The probabilities, where the forward keeps them (recompute=none); the
  // gradient of that result is none: it is read by the backward only.
  auto grad = AttentionGradOp::create(b, getLoc(), getQuery().getType(), getKey().getType(),
                                      getValue().getType(), getQuery(), getKey(), getValue(),
                                      resultGrads[0], getProbabilities(), getCausalAttr(),
                                      getScaleAttr(), getQueryOffset(), getHeadTailAttr());
  grads[0] = grad.getQueryGrad();
  grads[1] = grad.getKeyGrad();
  grads[2] = grad.getValueGrad();
  return success();
}

LogicalResult SplitOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                      SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  SmallVector<Value> parts;
  for (auto [grad, result] : llvm::zip(resultGrads, getResults()))
    parts.push_back(gradOrZeros(b, getLoc(), grad, result));
  grads[0] = ConcatOp::create(b, getLoc(), getInput().getType(), parts, getDimAttr());
  return success();
}

LogicalResult ShardingConstraintOp::buildGradients(OpBuilder &, ArrayRef<Value> resultGrads,
                                                   SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = resultGrads[0];
  return success();
}

LogicalResult CrossEntropyOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                             SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value count = CountTokensOp::create(b, loc, getType(), getLabels(), getIgnoreIndexAttr());
  grads[0] = CrossEntropyGradOp::create(b, loc, getLogits().getType(), getLogits(), getLabels(),
                                        resultGrads[0], count, Value(), Value(), Value(),
                                        IntegerAttr(), getIgnoreIndexAttr());
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture-of-experts ops
//===----------------------------------------------------------------------===//

/// The choice of experts is a step function of the logits: only the
/// weights carry a gradient.
LogicalResult MoeRouteOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                         SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dw = gradOrZeros(b, loc, resultGrads[0], getWeights());
  grads[0] = MoeRouteGradOp::create(b, loc, getLogits().getType(), getLogits(), getWeights(),
                                    getExperts(), dw, getNormalize());
  return success();
}

/// A dropped choice's weight is zero whatever it was: its gradient too.
LogicalResult MoeCapacityOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] = MoeCapacityOp::create(b, getLoc(), resultGrads[0], getExperts(), getCapacityAttr(),
                                   getNumExpertsAttr(), getHeadTailAttr());
  return success();
}

/// Dispatch and combine are each other's transposes: a row copied to a
/// slot sends its gradient back from that slot.
LogicalResult MoeDispatchOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dy = resultGrads[0];
  grads[0] = MoeCombineOp::create(b, loc, getInput().getType(), dy, getSlots(), getSources(),
                                  getWeights());
  if (Value w = getWeights())
    grads[3] = MoeWeightGradOp::create(b, loc, w.getType(), getInput(), dy, getSlots());
  return success();
}

LogicalResult MoeCombineOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                           SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dy = resultGrads[0];
  grads[0] = MoeDispatchOp::create(b, loc, getInput().getType(), dy, getSlots(), getSources(),
                                   getWeights());
  if (Value w = getWeights())
    grads[3] = MoeWeightGradOp::create(b, loc, w.getType(), dy, getInput(), getSlots());
  return success();
}

/// As a matmul's, group by group: d lhs = dy rhs_e^T (rhs_e read as
/// stored, the other way round), d rhs_e = lhs_e^T dy_e (or dy_e^T lhs_e
/// for a weight stored [E, F, K]).
LogicalResult GroupedMatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                              SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  Value dy = resultGrads[0];
  bool transposed = getTransposeRhs();
  grads[0] =
      GroupedMatmulOp::create(b, loc, getLhs().getType(), dy, getRhs(), getCounts(), !transposed);
  grads[1] =
      transposed
          ? GroupedWeightGradOp::create(b, loc, getRhs().getType(), dy, getLhs(), getCounts())
          : GroupedWeightGradOp::create(b, loc, getRhs().getType(), getLhs(), dy, getCounts());
  return success();
}

/// One op computes every gradient of the experts, their forward again.
LogicalResult MoeExpertsOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                           SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  auto grad = MoeExpertsGradOp::create(b, getLoc(), getInput().getType(), getWeights().getType(),
                                       getW1().getType(), getW3().getType(), getW2().getType(),
                                       getInput(), getExperts(), getWeights(), getW1(), getW3(),
                                       getW2(), resultGrads[0]);
  grads[0] = grad.getInputGrad();
  grads[2] = grad.getWeightsGrad();
  grads[3] = grad.getW1Grad();
  grads[4] = grad.getW3Grad();
  grads[5] = grad.getW2Grad();
  return success();
}

/// The exchanges are each other's transposes: a row's gradient goes back
/// the way the row came.
LogicalResult MoeAllToAllOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                            SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  if (resultGrads[0])
    grads[0] = MoeAllToAllBackOp::create(b, getLoc(), getRows().getType(), resultGrads[0],
                                         getCounts(), getGridAttr(), getGridAxesAttr());
  return success();
}

LogicalResult MoeAllToAllBackOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                                SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  auto counts = cast<RankedTensorType>(getCounts().getType());
  int64_t members = getRows().getType().getDimSize(0) / getResult().getType().getDimSize(0);
  auto expertCounts =
      RankedTensorType::get({counts.getDimSize(0) / members}, counts.getElementType());
  grads[0] = MoeAllToAllOp::create(b, getLoc(), getRows().getType(), expertCounts, resultGrads[0],
                                   getCounts(), getGridAttr(), getGridAxesAttr())
                 .getResult();
  return success();
}

/// Row 1 counts choices: only the probabilities (row 0) pass a gradient
/// to the logits.
LogicalResult MoeRouterStatsOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                               SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  grads[0] =
      MoeRouterStatsGradOp::create(b, getLoc(), getLogits().getType(), getLogits(), resultGrads[0]);
  return success();
}

/// d stats[0, e] = dy * scale * stats[1, e] and the other way round: the
/// rows swapped (split, concatenated in the other order), times the loss's
/// gradient (a scalar, which broadcasts) and the scale.
LogicalResult MoeBalanceLossOp::buildGradients(OpBuilder &b, ArrayRef<Value> resultGrads,
                                               SmallVectorImpl<Value> &grads) {
  resizeGrads(*this, grads);
  Location loc = getLoc();
  RankedTensorType type = getStats().getType();
  auto rowType = RankedTensorType::get({1, type.getShape()[1]}, type.getElementType());
  auto rows =
      SplitOp::create(b, loc, TypeRange{rowType, rowType}, getStats(), b.getI64IntegerAttr(0));
  Value swapped = ConcatOp::create(b, loc, type, ValueRange{rows.getResult(1), rows.getResult(0)},
                                   b.getI64IntegerAttr(0));
  Value scaled = MulOp::create(b, loc, type, swapped, resultGrads[0]);
  grads[0] = ScaleOp::create(b, loc, type, scaled, getScaleAttr());
  return success();
}

/// A constant has no operands to pass a gradient to.
LogicalResult FillOp::buildGradients(OpBuilder &, ArrayRef<Value>, SmallVectorImpl<Value> &grads) {
  grads.clear();
  return success();
}
