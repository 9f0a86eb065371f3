//===- ExpertBlock.cpp - tfm.moe_experts as the ops it is made of ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/ExpertBlock.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

using namespace mlir;
using namespace pmlir::tfm;

namespace {

RankedTensorType tensorOf(ArrayRef<int64_t> shape, Type element) {
  return RankedTensorType::get(shape, element);
}

ArrayRef<int64_t> shapeOf(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }

} // namespace

Value pmlir::tfm::buildExperts(OpBuilder &b, Location loc, const ExpertOperands &in,
                               int64_t numExperts, const ExpertExchange *exchange,
                               SmallVectorImpl<Operation *> *ops) {
  auto note = [&](Operation *op) {
    if (ops)
      ops->push_back(op);
    return op;
  };
  auto inputType = cast<RankedTensorType>(in.input.getType());
  Type element = inputType.getElementType();
  Type i64 = b.getI64Type();
  ArrayRef<int64_t> routing = shapeOf(in.experts);
  int64_t hidden = inputType.getShape().back(), ffn = shapeOf(in.w1)[1];
  int64_t pairs = 1;
  for (int64_t d : routing)
    pairs *= d;

  auto sorted =
      MoeSortOp::create(b, loc, tensorOf(routing, i64), tensorOf({pairs}, i64),
                        tensorOf({numExperts}, i64), in.experts, b.getI64IntegerAttr(numExperts));
  note(sorted);
  Value slots = sorted.getSlots(), sources = sorted.getSources();
  Value rows = note(MoeDispatchOp::create(b, loc, tensorOf({pairs, hidden}, element), in.input,
                                          slots, sources, /*weights=*/Value()))
                   ->getResult(0);
  // The rows the experts here compute: this device's own, or under expert
  // parallelism the rows every member sends to its experts.
  Value groupRows = rows, counts = sorted.getCounts();
  if (exchange) {
    int64_t n = exchange->members;
    auto sent = MoeAllToAllOp::create(b, loc, tensorOf({n * pairs, hidden}, element),
                                      tensorOf({numExperts / n}, i64), rows, sorted.getCounts(),
                                      exchange->grid, exchange->gridAxes);
    note(sent);
    groupRows = sent.getResult();
    counts = sent.getExpertCounts();
  }
  int64_t groupPairs = shapeOf(groupRows)[0];
  auto grouped = [&](Value lhs, Value w, int64_t out) -> Value {
    return note(GroupedMatmulOp::create(b, loc, tensorOf({groupPairs, out}, element), lhs, w,
                                        counts, /*transpose_rhs=*/true))
        ->getResult(0);
  };
  Value gate = note(SiluOp::create(b, loc, grouped(groupRows, in.w1, ffn)))->getResult(0);
  Value up = grouped(groupRows, in.w3, ffn);
  Value product = note(MulOp::create(b, loc, gate.getType(), gate, up))->getResult(0);
  Value down = grouped(product, in.w2, hidden);
  if (exchange)
    down = note(MoeAllToAllBackOp::create(b, loc, tensorOf({pairs, hidden}, element), down,
                                          sorted.getCounts(), exchange->grid, exchange->gridAxes))
               ->getResult(0);
  return note(MoeCombineOp::create(b, loc, inputType, down, slots, sources, in.weights))
      ->getResult(0);
}

FailureOr<SmallVector<Value>> pmlir::tfm::buildExpertsGradients(OpBuilder &b, Location loc,
                                                                const ExpertOperands &in,
                                                                Value resultGrad,
                                                                int64_t numExperts,
                                                                const ExpertExchange *exchange) {
  SmallVector<Operation *> ops;
  Value result = buildExperts(b, loc, in, numExperts, exchange, &ops);
  // Reverse mode over the ops just built, each by its own gradient.
  DenseMap<Value, Value> grads;
  grads[result] = resultGrad;
  for (Operation *op : llvm::reverse(ops)) {
    SmallVector<Value> resultGrads;
    for (Value r : op->getResults())
      resultGrads.push_back(grads.lookup(r));
    if (llvm::none_of(resultGrads, [](Value g) { return bool(g); }))
      continue;
    auto differentiable = dyn_cast<AutodiffOpInterface>(op);
    if (!differentiable)
      return op->emitOpError() << "has no gradient, which tfm.moe_experts_grad needs";
    SmallVector<Value> operandGrads;
    if (failed(differentiable.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads)) {
      if (!grad)
        continue;
      Value &sum = grads[operand];
      sum = sum ? AddOp::create(b, loc, operand.getType(), sum, grad).getResult() : grad;
    }
  }
  SmallVector<Value> out;
  for (Value v : {in.input, in.weights, in.w1, in.w3, in.w2}) {
    Value g = grads.lookup(v);
    // A weight no row reached (no token chose an expert here) has a zero
    // gradient; the grouped weight gradient gives one anyway.
    out.push_back(g ? g : FillOp::create(b, loc, v.getType(), b.getF64FloatAttr(0.0)).getResult());
  }
  return out;
}
