//===- TfmInterfaces.cpp - Costs and saved values of tfm ops --------------===//
//
// Part of pmlir.
//
// The FLOPs of each op and what a backward pass keeps of it (the sharding
// rules are in ShardingRules.cpp).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

using namespace mlir;
using namespace pmlir::tfm;

#include "pmlir/Dialect/Tfm/IR/TfmInterfaces.cpp.inc"

/// The product of static dimensions in double (no overflow on huge
/// shapes); 0 with a dynamic one, which callers report apart.
static double product(ArrayRef<int64_t> dims) {
  double n = 1;
  for (int64_t d : dims) {
    if (ShapedType::isDynamic(d))
      return 0;
    n *= static_cast<double>(d);
  }
  return n;
}

double MatmulOp::getFlops() {
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  int64_t k = getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
  return 2.0 * product(out) * product({k});
}

void MatmulOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getLhs(), "matmul_inputs"});
  saved.push_back({getRhs(), "matmul_inputs"});
}

double AttentionOp::getFlops() {
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  double scores = product({q[0], q[1], q[2], k[2]});
  return 2.0 * scores * product({q[3]}) + 2.0 * scores * product({v[3]});
}

void AttentionOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  for (Value v : {getQuery(), getKey(), getValue()})
    saved.push_back({v, "attention_inputs"});
}

int64_t AttentionOp::getSavedInternalBytes() {
  // The softmax probabilities [B, A, S, S_k], as Megatron keeps them.
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  int64_t width = getQuery().getType().getElementTypeBitWidth() / 8;
  return q[0] * q[1] * q[2] * k[2] * width;
}

void LayerNormOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getInput(), "norm_inputs"});
}

void RmsNormOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getInput(), "norm_inputs"});
}

void GeluOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getInput(), "activation_inputs"});
}

void SiluOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getInput(), "activation_inputs"});
}

void MulOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getLhs(), "activation_inputs"});
  saved.push_back({getRhs(), "activation_inputs"});
}

double WeightGradOp::getFlops() {
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  return 2.0 * product(lhs) * product({getRhs().getType().getShape().back()});
}

double AttentionGradOp::getFlops() {
  // Scores recomputed, then dV, dP, dQ and dK: five GEMMs of the forward's
  // two sizes (2.5 times its FLOPs).
  ArrayRef<int64_t> q = getQuery().getType().getShape();
  ArrayRef<int64_t> k = getKey().getType().getShape();
  ArrayRef<int64_t> v = getValue().getType().getShape();
  double scores = product({q[0], q[1], q[2], k[2]});
  return 2.0 * scores * (3.0 * product({q[3]}) + 2.0 * product({v[3]}));
}

void MoeRouteOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getLogits(), "router_logits"});
  saved.push_back({getWeights(), "router_choices"});
  saved.push_back({getExperts(), "router_choices"});
}

void MoeCombineOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getInput(), "expert_outputs"});
  if (getWeights())
    saved.push_back({getWeights(), "router_choices"});
}

/// Every row goes through exactly one group's GEMM: the FLOPs of one
/// [N, K] x [K, F] product, however the rows fall into groups.
double GroupedMatmulOp::getFlops() {
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  return 2.0 * product(lhs) * product({getResult().getType().getShape().back()});
}

void GroupedMatmulOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getLhs(), "matmul_inputs"});
  saved.push_back({getRhs(), "matmul_inputs"});
}

/// Every routed row goes through its expert's three [H] x [H, F] products.
double MoeExpertsOp::getFlops() {
  ArrayRef<int64_t> routing = getExperts().getType().getShape();
  ArrayRef<int64_t> w1 = getW1().getType().getShape();
  return 6.0 * product(routing) * product(w1.drop_front());
}

/// Its backward keeps the operands alone and computes the experts again.
void MoeExpertsOp::getSavedForBackward(SmallVectorImpl<SavedValue> &saved) {
  saved.push_back({getInput(), "matmul_inputs"});
  saved.push_back({getExperts(), "router_choices"});
  saved.push_back({getWeights(), "router_choices"});
}

/// The three products again, and two for each of their operands'
/// gradients: nine in all.
double MoeExpertsGradOp::getFlops() {
  ArrayRef<int64_t> routing = getExperts().getType().getShape();
  ArrayRef<int64_t> w1 = getW1().getType().getShape();
  return 18.0 * product(routing) * product(w1.drop_front());
}

double GroupedWeightGradOp::getFlops() {
  ArrayRef<int64_t> lhs = getLhs().getType().getShape();
  return 2.0 * product(lhs) * product({getRhs().getType().getShape().back()});
}
