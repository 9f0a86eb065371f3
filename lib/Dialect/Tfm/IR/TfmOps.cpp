//===- TfmOps.cpp - tfm dialect and op verifiers --------------------------===//
//
// Part of pmlir.
//
// Every verifier message names the operand, result or attribute at fault and
// prints the expected and the actual shape or type, so that a user reading a
// diagnostic on generated IR can find the mistake without reading this file.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include <cmath>
#include "pmlir/Dialect/Tfm/IR/ShapeUtils.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace pmlir::tfm;

#include "pmlir/Dialect/Tfm/IR/TfmDialect.cpp.inc"
#include "pmlir/Dialect/Tfm/IR/TfmEnums.cpp.inc"

void TfmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "pmlir/Dialect/Tfm/IR/TfmOps.cpp.inc"
      >();
  registerAttributes();
}

//===----------------------------------------------------------------------===//
// Argument roles
//===----------------------------------------------------------------------===//

std::optional<ArgumentRole> pmlir::tfm::argumentRoleOf(Attribute attr) {
  if (auto role = dyn_cast_or_null<ArgumentRoleAttr>(attr))
    return role.getValue();
  if (auto text = dyn_cast_or_null<StringAttr>(attr))
    return symbolizeArgumentRole(text.getValue());
  return std::nullopt;
}

ArgumentRole pmlir::tfm::argumentRole(FunctionOpInterface func, unsigned index) {
  if (std::optional<ArgumentRole> role = argumentRoleOf(func.getArgAttr(index, kRoleAttr)))
    return *role;
  auto name = func.getArgAttrOfType<StringAttr>(index, kNameAttr);
  if (!name)
    return ArgumentRole::Input;
  if (name.getValue() == "labels")
    return ArgumentRole::Label;
  if (name.getValue() == "input_ids")
    return ArgumentRole::Input;
  auto type = dyn_cast<ShapedType>(func.getArgument(index).getType());
  if (!type || !isa<FloatType>(type.getElementType()))
    return ArgumentRole::Input;
  return ArgumentRole::Param;
}

//===----------------------------------------------------------------------===//
// Layer identity
//===----------------------------------------------------------------------===//

std::string pmlir::tfm::layerStructureKey(LayerOp layer) {
  std::string text;
  llvm::raw_string_ostream os(text);
  NamedAttrList attrs(layer->getAttrDictionary());
  attrs.erase(layer.getIndexAttrName());
  os << layer->getName() << " " << attrs.getDictionary(layer->getContext()) << "|";
  DenseMap<Value, std::string> inside;
  DenseMap<Value, int64_t> outside;
  int64_t count = 0;
  layer.getBody().walk<WalkOrder::PreOrder>([&](Operation *op) {
    os << op->getName() << op->getAttrDictionary() << "(";
    for (Value v : op->getOperands()) {
      if (auto it = inside.find(v); it != inside.end()) {
        os << it->second;
      } else {
        auto [slot, fresh] = outside.try_emplace(v, static_cast<int64_t>(outside.size()));
        os << "^" << slot->second << ":" << v.getType();
      }
      os << ",";
    }
    os << ")->";
    for (OpResult result : op->getResults()) {
      inside[result] = "%" + std::to_string(count) + "." + std::to_string(result.getResultNumber());
      os << result.getType() << ",";
    }
    // Arguments of nested blocks are values of the body too.
    for (Region &region : op->getRegions())
      for (Block &block : region)
        for (BlockArgument arg : block.getArguments()) {
          inside[arg] = "%" + std::to_string(count) + ".b" + std::to_string(arg.getArgNumber());
          os << "[" << arg.getType() << "]";
        }
    ++count;
    os << ";";
  });
  return text;
}

LogicalResult TfmDialect::verifyRegionArgAttribute(Operation *op, unsigned region, unsigned index,
                                                   NamedAttribute attr) {
  if (attr.getName() != kRoleAttr)
    return success();
  if (!argumentRoleOf(attr.getValue())) {
    SmallVector<std::string> names;
    for (uint32_t value = 0; value <= getMaxEnumValForArgumentRole(); ++value)
      if (std::optional<ArgumentRole> role = symbolizeArgumentRole(value))
        names.push_back(stringifyArgumentRole(*role).str());
    return op->emitOpError() << "argument #" << index << ": tfm.role must be one of "
                             << llvm::join(names, ", ") << " (#tfm<role " << names.front()
                             << "> or \"" << names.front() << "\"), got " << attr.getValue();
  }
  return success();
}

LogicalResult TfmDialect::verifyRegionResultAttribute(Operation *op, unsigned region,
                                                      unsigned index, NamedAttribute attr) {
  if (attr.getName() != kUpdatesAttr && attr.getName() != kShardedLikeAttr)
    return success();
  // Both name an argument of the function: its readers index the
  // arguments with them.
  auto function = dyn_cast<FunctionOpInterface>(op);
  auto argument = dyn_cast<IntegerAttr>(attr.getValue());
  if (!function || !argument)
    return op->emitOpError() << "result #" << index << ": " << attr.getName().getValue()
                             << " must be an integer attribute on a function's result, got "
                             << attr.getValue();
  int64_t arguments = static_cast<int64_t>(function.getNumArguments());
  if (argument.getInt() < 0 || argument.getInt() >= arguments)
    return op->emitOpError() << "result #" << index << ": " << attr.getName().getValue()
                             << " names argument #" << argument.getInt()
                             << ", but the function has " << arguments
                             << (arguments == 1 ? " argument" : " arguments");
  return success();
}

//===----------------------------------------------------------------------===//
// Verifier helpers
//===----------------------------------------------------------------------===//

namespace {

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// `what` (e.g. "result" or "operand 'gamma'") must have `expected` shape.
LogicalResult expectShape(Operation *op, StringRef what, ArrayRef<int64_t> expected,
                          ArrayRef<int64_t> actual, StringRef why = "") {
  if (shapesAgree(expected, actual))
    return success();
  InFlightDiagnostic diag = op->emitOpError()
                            << what << " shape: expected " << formatShape(expected);
  if (!why.empty())
    diag << " (" << why << ")";
  return diag << ", got " << formatShape(actual);
}

LogicalResult expectRank(Operation *op, StringRef what, int64_t rank,
                         StringRef layout, ArrayRef<int64_t> actual) {
  if (static_cast<int64_t>(actual.size()) == rank)
    return success();
  return op->emitOpError() << what << ": expected rank " << rank << " "
                           << layout << ", got " << formatShape(actual);
}

/// `what` must have the element type of `reference`, named `referenceName`.
LogicalResult expectElementType(Operation *op, StringRef what, Value actual,
                                StringRef referenceName, Value reference) {
  Type want = tensorType(reference).getElementType();
  Type got = tensorType(actual).getElementType();
  if (want == got)
    return success();
  return op->emitOpError() << what << " element type: expected " << want
                           << " (that of " << referenceName << "), got " << got;
}

} // namespace

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  ArrayRef<int64_t> table = tensorType(getTable()).getShape();
  if (failed(expectRank(*this, "operand 'table'", 2, "[vocab, hidden]", table)))
    return failure();
  if (failed(expectElementType(*this, "result", getResult(), "operand 'table'",
                               getTable())))
    return failure();
  Shape expected(tensorType(getIds()).getShape());
  expected.push_back(table[1]);
  return expectShape(*this, "result", expected,
                     tensorType(getResult()).getShape(),
                     "ids shape followed by hidden");
}

//===----------------------------------------------------------------------===//
// MatmulOp
//===----------------------------------------------------------------------===//

LogicalResult MatmulOp::verify() {
  if (failed(expectElementType(*this, "operand 'rhs'", getRhs(), "operand 'lhs'",
                               getLhs())) ||
      failed(expectElementType(*this, "result", getResult(), "operand 'lhs'",
                               getLhs())))
    return failure();
  std::string error;
  std::optional<Shape> expected = inferMatmulShape(
      tensorType(getLhs()).getShape(), tensorType(getRhs()).getShape(),
      getTransposeLhs(), getTransposeRhs(), error);
  if (!expected)
    return emitOpError() << error;
  return expectShape(*this, "result", *expected,
                     tensorType(getResult()).getShape(), "[batch..., M, N]");
}

//===----------------------------------------------------------------------===//
// Binary elementwise ops
//===----------------------------------------------------------------------===//

static LogicalResult verifyBinaryOp(Operation *op, Value lhs, Value rhs) {
  if (failed(expectElementType(op, "operand 'rhs'", rhs, "operand 'lhs'", lhs)))
    return failure();
  ArrayRef<int64_t> lhsShape = tensorType(lhs).getShape();
  ArrayRef<int64_t> rhsShape = tensorType(rhs).getShape();
  if (isTrailingSuffix(lhsShape, rhsShape))
    return success();
  return op->emitOpError()
         << "operand 'rhs' shape: expected the trailing dimensions of 'lhs' "
         << formatShape(lhsShape) << ", got " << formatShape(rhsShape);
}

LogicalResult AddOp::verify() { return verifyBinaryOp(*this, getLhs(), getRhs()); }
LogicalResult SubOp::verify() { return verifyBinaryOp(*this, getLhs(), getRhs()); }
LogicalResult MulOp::verify() { return verifyBinaryOp(*this, getLhs(), getRhs()); }

//===----------------------------------------------------------------------===//
// Normalization
//===----------------------------------------------------------------------===//

/// Norms normalize the last dimension and scale it by a [hidden] vector.
static LogicalResult verifyNormOp(Operation *op, Value input, Value gamma,
                                  double epsilon) {
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  if (shape.empty())
    return op->emitOpError() << "operand 'input': expected rank >= 1, got "
                             << formatShape(shape);
  if (failed(expectElementType(op, "operand 'gamma'", gamma, "operand 'input'",
                               input)))
    return failure();
  if (failed(expectShape(op, "operand 'gamma'", {shape.back()},
                         tensorType(gamma).getShape(),
                         "the last dimension of 'input'")))
    return failure();
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return op->emitOpError() << "attribute 'epsilon': expected a finite value > 0, got "
                             << epsilon;
  return success();
}

LogicalResult LayerNormOp::verify() {
  return verifyNormOp(*this, getInput(), getGamma(),
                      getEpsilon().convertToDouble());
}

LogicalResult RmsNormOp::verify() {
  return verifyNormOp(*this, getInput(), getGamma(),
                      getEpsilon().convertToDouble());
}

//===----------------------------------------------------------------------===//
// Heads, rope, attention
//===----------------------------------------------------------------------===//

LogicalResult SplitHeadsOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  if (failed(expectRank(*this, "operand 'input'", 3, "[B, S, A*D]", in)) ||
      failed(expectElementType(*this, "result", getResult(), "operand 'input'",
                               getInput())))
    return failure();
  int64_t heads = getHeads();
  int64_t headDim = ShapedType::kDynamic;
  if (!ShapedType::isDynamic(in[2])) {
    if (in[2] % heads != 0)
      return emitOpError() << "attribute 'heads': " << heads
                           << " does not divide the hidden dimension " << in[2]
                           << " of operand 'input'";
    headDim = in[2] / heads;
  }
  return expectShape(*this, "result", {in[0], heads, in[1], headDim},
                     tensorType(getResult()).getShape(), "[B, A, S, D]");
}

LogicalResult MergeHeadsOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  if (failed(expectRank(*this, "operand 'input'", 4, "[B, A, S, D]", in)) ||
      failed(expectElementType(*this, "result", getResult(), "operand 'input'",
                               getInput())))
    return failure();
  int64_t hidden = ShapedType::isDynamic(in[1]) || ShapedType::isDynamic(in[3])
                       ? ShapedType::kDynamic
                       : in[1] * in[3];
  return expectShape(*this, "result", {in[0], in[2], hidden},
                     tensorType(getResult()).getShape(), "[B, S, A*D]");
}

LogicalResult ArangeOp::verify() {
  HeadTailAttr order = getHeadTailAttr();
  int64_t n = tensorType(getResult()).getShape()[0];
  if (order && n > order.getLength())
    return emitOpError() << "attribute 'head_tail': its sequence of " << order.getLength()
                         << " is shorter than the " << n << " positions";
  return success();
}

LogicalResult RopeOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  if (failed(expectRank(*this, "operand 'input'", 4, "[B, A, S, D]", in)))
    return failure();
  if (!ShapedType::isDynamic(in[3]) && in[3] % 2 != 0)
    return emitOpError() << "operand 'input': head dimension must be even to "
                            "rotate halves, got "
                         << in[3] << " in " << formatShape(in);
  if (failed(expectShape(*this, "operand 'positions'", {in[2]},
                         tensorType(getPositions()).getShape(),
                         "[S] of 'input'")))
    return failure();
  // A NaN, infinite or denormal base gives non-finite frequencies.
  double theta = getTheta().convertToDouble();
  if (!(theta > 0.0) || !std::isnormal(theta))
    return emitOpError() << "attribute 'theta': expected a finite normal value > 0, got "
                         << theta;
  return success();
}

/// The operands of attention and of its gradient: query [B, Hq, S, D], key
/// [B, Hkv, Skv, D], value [B, Hkv, Skv, Dv], grouped heads, scale and
/// offset. Returns the shape of attention's result, [B, Hq, S, Dv].
static FailureOr<Shape> verifyAttentionOperands(Operation *op, Value query, Value key, Value value,
                                                bool causal, double scale, Value queryOffset) {
  ArrayRef<int64_t> q = tensorType(query).getShape();
  ArrayRef<int64_t> k = tensorType(key).getShape();
  ArrayRef<int64_t> v = tensorType(value).getShape();
  if (failed(expectRank(op, "operand 'query'", 4, "[B, Hq, S, D]", q)) ||
      failed(expectRank(op, "operand 'key'", 4, "[B, Hkv, Skv, D]", k)) ||
      failed(expectRank(op, "operand 'value'", 4, "[B, Hkv, Skv, Dv]", v)))
    return failure();
  for (auto [name, other] :
       {std::pair<StringRef, Value>{"operand 'key'", key}, {"operand 'value'", value}})
    if (failed(expectElementType(op, name, other, "operand 'query'", query)))
      return failure();
  if (failed(expectShape(op, "operand 'key'", {q[0], k[1], k[2], q[3]}, k,
                         "batch and head dimension of 'query'")) ||
      failed(expectShape(op, "operand 'value'", {q[0], k[1], k[2], v[3]}, v,
                         "batch, heads and sequence of 'key'")))
    return failure();
  if (!ShapedType::isDynamic(q[1]) && !ShapedType::isDynamic(k[1]) && q[1] % k[1] != 0)
    return op->emitOpError() << "query heads (" << q[1]
                             << ") must be a multiple of key/value heads (" << k[1]
                             << ") for grouped-query attention";
  if (scale == 0.0 || !std::isfinite(scale))
    return op->emitOpError() << "attribute 'scale': expected a finite non-zero value, got "
                             << scale;
  if (queryOffset && !causal)
    return op->emitOpError() << "has a query_offset but is not causal; the offset "
                                "only places the causal mask";
  return Shape{q[0], q[1], q[2], v[3]};
}

/// Attention's probabilities, where present: [B, Hq, S, Skv] of the
/// queries' element type.
static LogicalResult verifyProbabilities(Operation *op, StringRef what, Value probabilities,
                                         Value query, Value key) {
  if (!probabilities)
    return success();
  ArrayRef<int64_t> q = tensorType(query).getShape(), k = tensorType(key).getShape();
  if (failed(expectElementType(op, what, probabilities, "operand 'query'", query)))
    return failure();
  return expectShape(op, what, Shape{q[0], q[1], q[2], k[2]}, tensorType(probabilities).getShape(),
                     "[B, Hq, S, Skv]");
}

/// The probabilities are named where the op has them; the output keeps the
/// plain numbering it has as a one-result op, as models print it.
void AttentionOp::getAsmResultNames(OpAsmSetValueNameFn setNameFn) {
  if (Value probabilities = getProbabilities())
    setNameFn(probabilities, "probabilities");
}

/// The operands and result of an attention or attention block.
template <typename Op> static LogicalResult verifyAttentionResult(Op op) {
  FailureOr<Shape> out =
      verifyAttentionOperands(op, op.getQuery(), op.getKey(), op.getValue(), op.getCausal(),
                              op.getScale().convertToDouble(), op.getQueryOffset());
  if (failed(out) ||
      failed(expectElementType(op, "result", op.getResult(), "operand 'query'", op.getQuery())))
    return failure();
  return expectShape(op, "result", *out, tensorType(op.getResult()).getShape(), "[B, Hq, S, Dv]");
}

/// Attention in head-tail order: causal (the order only moves the mask),
/// over keys of the whole ordered sequence, and queries of the whole
/// sequence or a block of it (`query_offset`).
template <typename Op> static LogicalResult verifyHeadTail(Op op) {
  HeadTailAttr order = op.getHeadTailAttr();
  if (!order)
    return success();
  if (!op.getCausal())
    return op.emitOpError() << "attribute 'head_tail': the order moves a causal mask; the "
                               "attention is not causal";
  int64_t keys = tensorType(op.getKey()).getShape()[2];
  int64_t queries = tensorType(op.getQuery()).getShape()[2];
  if (keys != order.getLength())
    return op.emitOpError() << "attribute 'head_tail': its sequence of " << order.getLength()
                            << " is not the " << keys << " keys";
  if (!op.getQueryOffset() && queries != keys)
    return op.emitOpError() << "attribute 'head_tail': " << queries
                            << " queries without a query_offset are not the sequence of " << keys;
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionResult(*this)) || failed(verifyHeadTail(*this)))
    return failure();
  return verifyProbabilities(*this, "result 'probabilities'", getProbabilities(), getQuery(),
                             getKey());
}

/// A block attention's log-sum-exp: [B, Hq, S] of the queries' element
/// type.
static LogicalResult verifyLse(Operation *op, StringRef what, Value lse, Value query) {
  ArrayRef<int64_t> q = tensorType(query).getShape();
  if (failed(expectElementType(op, what, lse, "operand 'query'", query)))
    return failure();
  return expectShape(op, what, Shape{q[0], q[1], q[2]}, tensorType(lse).getShape(), "[B, Hq, S]");
}

LogicalResult AttentionBlockOp::verify() {
  if (failed(verifyAttentionResult(*this)))
    return failure();
  return verifyLse(*this, "result 'lse'", getLse(), getQuery());
}

LogicalResult AttentionMergeOp::verify() {
  ArrayRef<int64_t> o = tensorType(getLhs()).getShape();
  if (o.empty())
    return emitOpError() << "operand 'lhs': expected rank >= 1 ([..., Dv]), got []";
  if (failed(expectElementType(*this, "operand 'lhs_lse'", getLhsLse(), "operand 'lhs'", getLhs())))
    return failure();
  return expectShape(*this, "operand 'lhs_lse'", o.drop_back(), tensorType(getLhsLse()).getShape(),
                     "'lhs' without its last dimension");
}

//===----------------------------------------------------------------------===//
// SplitOp
//===----------------------------------------------------------------------===//

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  int64_t dim = getDim();
  if (dim >= static_cast<int64_t>(in.size()))
    return emitOpError() << "attribute 'dim': expected < " << in.size()
                         << " (the rank of 'input'), got " << dim;
  int64_t parts = getNumResults();
  if (parts == 0)
    return emitOpError() << "expected at least one result";
  Shape expected(in);
  if (!ShapedType::isDynamic(in[dim])) {
    if (in[dim] % parts != 0)
      return emitOpError() << parts << " results do not divide dimension "
                           << dim << " of operand 'input' " << formatShape(in);
    expected[dim] = in[dim] / parts;
  }
  for (auto [i, result] : llvm::enumerate(getResults())) {
    std::string what = "result #" + std::to_string(i);
    if (failed(expectElementType(*this, what, result, "operand 'input'",
                                 getInput())) ||
        failed(expectShape(*this, what, expected,
                           tensorType(result).getShape())))
      return failure();
  }
  return success();
}

//===----------------------------------------------------------------------===//
// LayerOp
//===----------------------------------------------------------------------===//

LogicalResult LayerOp::verify() {
  auto yield = cast<YieldOp>(getBody().front().getTerminator());
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError() << "body yields (" << yield.getValues().getTypes()
                         << ") but the layer returns (" << getResultTypes()
                         << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

LogicalResult CrossEntropyOp::verify() {
  ArrayRef<int64_t> logits = tensorType(getLogits()).getShape();
  if (logits.empty())
    return emitOpError() << "operand 'logits': expected rank >= 1 ([..., V]), "
                            "got []";
  if (failed(expectShape(*this, "operand 'labels'", logits.drop_back(),
                         tensorType(getLabels()).getShape(),
                         "'logits' without its last dimension")))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'logits'",
                           getLogits());
}

LogicalResult RowMaxOp::verify() {
  ArrayRef<int64_t> input = tensorType(getInput()).getShape();
  if (input.empty())
    return emitOpError() << "operand 'input': expected rank >= 1, got []";
  if (failed(expectShape(*this, "result", input.drop_back(), tensorType(getResult()).getShape(),
                         "'input' without its last dimension")))
    return failure();
  if (static_cast<bool>(getVocabFrom()) != getVocab().has_value())
    return emitOpError() << "takes 'vocab_from' and 'vocab' together";
  return expectElementType(*this, "result", getResult(), "operand 'input'", getInput());
}

LogicalResult CrossEntropyPartsOp::verify() {
  ArrayRef<int64_t> logits = tensorType(getLogits()).getShape();
  if (logits.empty())
    return emitOpError() << "operand 'logits': expected rank >= 1 ([..., V]), got []";
  ArrayRef<int64_t> tokens = logits.drop_back();
  if (failed(expectShape(*this, "operand 'labels'", tokens, tensorType(getLabels()).getShape(),
                         "'logits' without its last dimension")) ||
      failed(expectShape(*this, "operand 'max'", tokens, tensorType(getMax()).getShape(),
                         "'logits' without its last dimension")))
    return failure();
  Shape result(tokens);
  result.push_back(2);
  if (failed(expectShape(*this, "result", result, tensorType(getResult()).getShape(),
                         "per token: the exp sum and the label's logit")))
    return failure();
  if (!getVocabFrom() && !ShapedType::isDynamic(logits.back()) &&
      logits.back() != static_cast<int64_t>(getVocab()))
    return emitOpError() << "attribute 'vocab' is " << getVocab() << ", but the logits hold "
                         << logits.back() << " columns and no 'vocab_from' makes them a block";
  if (failed(expectElementType(*this, "operand 'max'", getMax(), "operand 'logits'",
                               getLogits())))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'logits'", getLogits());
}

LogicalResult CrossEntropyCombineOp::verify() {
  ArrayRef<int64_t> parts = tensorType(getParts()).getShape();
  if (parts.empty() || (!ShapedType::isDynamic(parts.back()) && parts.back() != 2))
    return emitOpError() << "operand 'parts': expected shape [..., 2], got "
                         << formatShape(parts);
  if (failed(expectShape(*this, "operand 'labels'", parts.drop_back(),
                         tensorType(getLabels()).getShape(),
                         "'parts' without its last dimension")))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'parts'", getParts());
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

LogicalResult WeightGradOp::verify() {
  ArrayRef<int64_t> lhs = tensorType(getLhs()).getShape();
  ArrayRef<int64_t> rhs = tensorType(getRhs()).getShape();
  if (lhs.size() < 2)
    return emitOpError() << "operand 'lhs': expected rank >= 2 ([batch..., M, K]), got "
                         << formatShape(lhs);
  if (failed(expectElementType(*this, "operand 'rhs'", getRhs(), "operand 'lhs'", getLhs())) ||
      failed(expectElementType(*this, "result", getResult(), "operand 'lhs'", getLhs())))
    return failure();
  Shape expected(lhs.drop_back());
  expected.push_back(rhs.empty() ? ShapedType::kDynamic : rhs.back());
  if (rhs.size() != lhs.size())
    return emitOpError() << "operand 'rhs': expected rank " << lhs.size()
                         << " ([batch..., M, N], the rank of 'lhs'), got " << formatShape(rhs);
  if (failed(expectShape(*this, "operand 'rhs'", expected, rhs,
                         "the batch and row dimensions of 'lhs', then N")))
    return failure();
  return expectShape(*this, "result", {lhs.back(), rhs.back()}, tensorType(getResult()).getShape(),
                     "[K, N]");
}

LogicalResult SumLeadingOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  ArrayRef<int64_t> out = tensorType(getResult()).getShape();
  if (failed(expectElementType(*this, "result", getResult(), "operand 'input'", getInput())))
    return failure();
  if (out.size() <= in.size() && isTrailingSuffix(in, out))
    return success();
  return emitOpError() << "result shape: expected trailing dimensions of 'input' "
                       << formatShape(in) << ", got " << formatShape(out);
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "expected at least one operand";
  Value first = getInputs().front();
  ArrayRef<int64_t> in = tensorType(first).getShape();
  int64_t dim = getDim();
  if (dim >= static_cast<int64_t>(in.size()))
    return emitOpError() << "attribute 'dim': expected < " << in.size()
                         << " (the rank of the operands), got " << dim;
  for (auto [i, input] : llvm::enumerate(getInputs()))
    if (input.getType() != first.getType())
      return emitOpError() << "operand #" << i << ": expected " << first.getType()
                           << " (the type of operand #0), got " << input.getType();
  Shape expected(in);
  if (!ShapedType::isDynamic(in[dim]))
    expected[dim] = in[dim] * static_cast<int64_t>(getInputs().size());
  if (failed(expectElementType(*this, "result", getResult(), "operand #0", first)))
    return failure();
  return expectShape(*this, "result", expected, tensorType(getResult()).getShape(),
                     "the operands joined along 'dim'");
}

LogicalResult LayerNormGradOp::verify() {
  return verifyNormOp(*this, getInput(), getGamma(), getEpsilon().convertToDouble());
}

LogicalResult RmsNormGradOp::verify() {
  return verifyNormOp(*this, getInput(), getGamma(), getEpsilon().convertToDouble());
}

/// The gamma gradient of a norm: [H] from input and grad of one shape.
static LogicalResult verifyNormWeightGrad(Operation *op, Value input, Value grad, Value result,
                                          double epsilon) {
  ArrayRef<int64_t> shape = tensorType(input).getShape();
  if (shape.empty())
    return op->emitOpError() << "operand 'input': expected rank >= 1, got []";
  if (input.getType() != grad.getType())
    return op->emitOpError() << "operand 'grad': expected " << input.getType()
                             << " (the type of 'input'), got " << grad.getType();
  if (failed(expectElementType(op, "result", result, "operand 'input'", input)) ||
      failed(expectShape(op, "result", {shape.back()}, tensorType(result).getShape(),
                         "the last dimension of 'input'")))
    return failure();
  if (!(epsilon > 0.0) || !std::isfinite(epsilon))
    return op->emitOpError() << "attribute 'epsilon': expected a finite value > 0, got " << epsilon;
  return success();
}

LogicalResult LayerNormWeightGradOp::verify() {
  return verifyNormWeightGrad(*this, getInput(), getGrad(), getResult(),
                              getEpsilon().convertToDouble());
}

LogicalResult RmsNormWeightGradOp::verify() {
  return verifyNormWeightGrad(*this, getInput(), getGrad(), getResult(),
                              getEpsilon().convertToDouble());
}

LogicalResult EmbeddingGradOp::verify() {
  ArrayRef<int64_t> table = tensorType(getResult()).getShape();
  if (failed(expectRank(*this, "result", 2, "[vocab, hidden]", table)) ||
      failed(expectElementType(*this, "result", getResult(), "operand 'grad'", getGrad())))
    return failure();
  Shape expected(tensorType(getIds()).getShape());
  expected.push_back(table[1]);
  return expectShape(*this, "operand 'grad'", expected, tensorType(getGrad()).getShape(),
                     "ids shape followed by hidden");
}

/// An attention gradient's query, key and value gradients have their
/// operands' types.
template <typename Op> static LogicalResult verifyGradientTypes(Op op) {
  for (auto [name, grad, operand] : {std::tuple<StringRef, Value, Value>{
                                         "result 'query_grad'", op.getQueryGrad(), op.getQuery()},
                                     {"result 'key_grad'", op.getKeyGrad(), op.getKey()},
                                     {"result 'value_grad'", op.getValueGrad(), op.getValue()}})
    if (grad.getType() != operand.getType())
      return op.emitOpError() << name << ": expected " << operand.getType()
                              << " (the type of its operand), got " << grad.getType();
  return success();
}

LogicalResult AttentionGradOp::verify() {
  FailureOr<Shape> out =
      verifyAttentionOperands(*this, getQuery(), getKey(), getValue(), getCausal(),
                              getScale().convertToDouble(), getQueryOffset());
  if (failed(out) ||
      failed(
          expectElementType(*this, "operand 'grad'", getGrad(), "operand 'query'", getQuery())) ||
      failed(expectShape(*this, "operand 'grad'", *out, tensorType(getGrad()).getShape(),
                         "attention's result, [B, Hq, S, Dv]")) ||
      failed(verifyProbabilities(*this, "operand 'probabilities'", getProbabilities(), getQuery(),
                                 getKey())))
    return failure();
  if (failed(verifyGradientTypes(*this)))
    return failure();
  return verifyHeadTail(*this);
}

LogicalResult AttentionBlockGradOp::verify() {
  FailureOr<Shape> out =
      verifyAttentionOperands(*this, getQuery(), getKey(), getValue(), getCausal(),
                              getScale().convertToDouble(), getQueryOffset());
  if (failed(out))
    return failure();
  for (auto [name, v] : {std::pair<StringRef, Value>{"operand 'grad'", getGrad()},
                         {"operand 'output'", getOutput()}})
    if (failed(expectElementType(*this, name, v, "operand 'query'", getQuery())) ||
        failed(expectShape(*this, name, *out, tensorType(v).getShape(),
                           "attention's result, [B, Hq, S, Dv]")))
      return failure();
  if (failed(verifyLse(*this, "operand 'lse'", getLse(), getQuery())))
    return failure();
  return verifyGradientTypes(*this);
}

LogicalResult CrossEntropyGradOp::verify() {
  ArrayRef<int64_t> logits = tensorType(getLogits()).getShape();
  if (logits.empty())
    return emitOpError() << "operand 'logits': expected rank >= 1 ([..., V]), got []";
  ArrayRef<int64_t> tokens = logits.drop_back();
  if (failed(expectShape(*this, "operand 'labels'", tokens, tensorType(getLabels()).getShape(),
                         "'logits' without its last dimension")))
    return failure();
  if (getResult().getType() != getLogits().getType())
    return emitOpError() << "result: expected " << getLogits().getType()
                         << " (the type of 'logits'), got " << getResult().getType();
  if (bool(getMax()) != bool(getParts()))
    return emitOpError() << "takes 'max' and 'parts' together or not at all";
  if (getMax()) {
    Shape parts(tokens);
    parts.push_back(2);
    if (failed(expectShape(*this, "operand 'max'", tokens, tensorType(getMax()).getShape(),
                           "'logits' without its last dimension")) ||
        failed(expectShape(*this, "operand 'parts'", parts, tensorType(getParts()).getShape(),
                           "per token: the exp sum and the label's logit")))
      return failure();
  }
  if (getVocabFrom() && !getMax())
    return emitOpError() << "has 'vocab_from' without 'max' and 'parts': a block of the "
                            "vocabulary needs the whole vocabulary's max and exp sum";
  return success();
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

LogicalResult MicrobatchOp::verify() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  if (in.empty())
    return emitOpError() << "operand 'input': expected rank >= 1 ([K, ...]), got []";
  if (failed(expectElementType(*this, "result", getResult(), "operand 'input'", getInput())) ||
      failed(expectShape(*this, "result", in.drop_front(), tensorType(getResult()).getShape(),
                         "'input' without its first dimension")))
    return failure();
  if (!ShapedType::isDynamic(in[0]) && static_cast<int64_t>(getIndex()) >= in[0])
    return emitOpError() << "attribute 'index': expected < " << in[0]
                         << " (the microbatches of 'input'), got " << getIndex();
  return success();
}

LogicalResult AdamWOp::verify() {
  auto finiteAtLeast = [&](StringRef name, double v, double low) -> LogicalResult {
    if (v >= low && std::isfinite(v))
      return success();
    return emitOpError() << "attribute '" << name << "': expected a finite value >= " << low
                         << ", got " << v;
  };
  for (auto [name, v] : {std::pair<StringRef, double>{"lr", getLr().convertToDouble()},
                         {"eps", getEps().convertToDouble()},
                         {"weight_decay", getWeightDecay().convertToDouble()}})
    if (failed(finiteAtLeast(name, v, 0.0)))
      return failure();
  for (auto [name, v] : {std::pair<StringRef, double>{"beta1", getBeta1().convertToDouble()},
                         {"beta2", getBeta2().convertToDouble()}})
    if (!(v >= 0.0 && v < 1.0))
      return emitOpError() << "attribute '" << name << "': expected a value in [0, 1), got " << v;
  double scale = getGradScale().convertToDouble();
  if (!(scale > 0.0) || !std::isfinite(scale))
    return emitOpError() << "attribute 'grad_scale': expected a finite value > 0, got " << scale;
  if (bool(getGradNorm()) != bool(getMaxGradNormAttr()))
    return emitOpError() << "clips by 'grad_norm' to 'max_grad_norm': it takes both or neither";
  if (getMaxGradNorm()) {
    double max = getMaxGradNorm()->convertToDouble();
    if (!(max > 0.0) || !std::isfinite(max))
      return emitOpError() << "attribute 'max_grad_norm': expected a finite value > 0, got " << max;
  }
  return success();
}

#define GET_OP_CLASSES
#include "pmlir/Dialect/Tfm/IR/TfmOps.cpp.inc"

//===----------------------------------------------------------------------===//
// ShardingConstraintOp
//===----------------------------------------------------------------------===//

LogicalResult ShardingConstraintOp::verify() {
  int64_t rank = tensorType(getInput()).getRank();
  if (getSharding().getRank() != rank)
    return emitOpError("sharding has ")
           << getSharding().getRank() << " dimensions for a tensor of rank " << rank;
  return success();
}

//===----------------------------------------------------------------------===//
// Mixture-of-experts ops
//===----------------------------------------------------------------------===//

namespace {

/// The number of elements of `shape`, or kDynamic with a dynamic dimension.
int64_t elementCount(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (ShapedType::isDynamic(d))
      return ShapedType::kDynamic;
    n *= d;
  }
  return n;
}

/// `what` must be `[..., X]` with rank >= 1; `layout` names the dimensions.
LogicalResult expectRankAtLeastOne(Operation *op, StringRef what, StringRef layout,
                                   ArrayRef<int64_t> shape) {
  if (!shape.empty())
    return success();
  return op->emitOpError() << what << ": expected rank >= 1 (" << layout << "), got []";
}

/// A routing's `slots` [..., k] and `sources` [N], N its element count, as
/// tfm.moe_sort makes them.
LogicalResult verifyRouting(Operation *op, Value slots, Value sources) {
  ArrayRef<int64_t> slotShape = tensorType(slots).getShape();
  if (failed(expectRankAtLeastOne(op, "operand 'slots'", "[..., k]", slotShape)))
    return failure();
  return expectShape(op, "operand 'sources'", {elementCount(slotShape)},
                     tensorType(sources).getShape(), "the element count of 'slots'");
}

/// Optional routing `weights` [..., k]: the shape of `slots`, the element
/// type of `reference`.
LogicalResult verifyRoutingWeights(Operation *op, Value weights, Value slots, Value reference,
                                   StringRef referenceName) {
  if (!weights)
    return success();
  if (failed(expectShape(op, "operand 'weights'", tensorType(slots).getShape(),
                         tensorType(weights).getShape(), "that of 'slots'")))
    return failure();
  return expectElementType(op, "operand 'weights'", weights, referenceName, reference);
}

} // namespace

LogicalResult MoeRouteOp::verify() {
  ArrayRef<int64_t> logits = tensorType(getLogits()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'logits'", "[..., E]", logits)))
    return failure();
  int64_t k = static_cast<int64_t>(getTopK());
  if (!ShapedType::isDynamic(logits.back()) && k > logits.back())
    return emitOpError() << "attribute 'top_k' is " << k << ", more than the " << logits.back()
                         << " experts of 'logits' (its last dimension)";
  Shape chosen(logits.drop_back());
  chosen.push_back(k);
  if (failed(expectShape(*this, "result 'weights'", chosen, tensorType(getWeights()).getShape(),
                         "'logits' with top_k for its last dimension")) ||
      failed(expectShape(*this, "result 'experts'", chosen, tensorType(getExperts()).getShape(),
                         "'logits' with top_k for its last dimension")))
    return failure();
  return expectElementType(*this, "result 'weights'", getWeights(), "operand 'logits'",
                           getLogits());
}

LogicalResult MoeSortOp::verify() {
  ArrayRef<int64_t> experts = tensorType(getExperts()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'experts'", "[..., k]", experts)))
    return failure();
  if (failed(expectShape(*this, "result 'slots'", experts, tensorType(getSlots()).getShape(),
                         "that of 'experts'")) ||
      failed(expectShape(*this, "result 'sources'", {elementCount(experts)},
                         tensorType(getSources()).getShape(), "the element count of 'experts'")))
    return failure();
  return expectShape(*this, "result 'counts'", {static_cast<int64_t>(getNumExperts())},
                     tensorType(getCounts()).getShape(), "[num_experts]");
}

/// A routing of sequences, `[..., S, k]`, as a capacity counts places in
/// (one count per sequence and expert of `numExperts`); with a head-tail
/// `order`, of its length.
LogicalResult expectSequences(Operation *op, StringRef what, ArrayRef<int64_t> shape,
                              HeadTailAttr order, int64_t numExperts) {
  if (shape.size() < 2)
    return op->emitOpError() << what
                             << ": expected rank >= 2 ([..., S, k]: a capacity holds per "
                                "sequence), got "
                             << formatShape(shape);
  if (order && shape[shape.size() - 2] != order.getLength())
    return op->emitOpError() << "attribute 'head_tail': its sequence of " << order.getLength()
                             << " is not the " << shape[shape.size() - 2] << " tokens of " << what;
  int64_t sequences = 1, places = 0;
  for (int64_t d : shape.drop_back(2))
    if (ShapedType::isDynamic(d) || llvm::MulOverflow(sequences, d, sequences))
      return success();
  if (llvm::MulOverflow(sequences, numExperts, places))
    return op->emitOpError() << what << ": its " << sequences << " sequences times " << numExperts
                             << " experts overflow a count of places";
  return success();
}

LogicalResult MoeExpertCountsOp::verify() {
  ArrayRef<int64_t> experts = tensorType(getExperts()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'experts'", "[..., k]", experts)) ||
      ((getCapacity() || getHeadTail()) &&
       failed(expectSequences(*this, "operand 'experts'", experts, getHeadTailAttr(),
                              static_cast<int64_t>(getNumExperts())))))
    return failure();
  return expectShape(*this, "result 'counts'", {static_cast<int64_t>(getNumExperts())},
                     tensorType(getCounts()).getShape(), "[num_experts]");
}

LogicalResult MoeCapacityOp::verify() {
  ArrayRef<int64_t> experts = tensorType(getExperts()).getShape();
  if (failed(expectSequences(*this, "operand 'experts'", experts, getHeadTailAttr(),
                             static_cast<int64_t>(getNumExperts()))))
    return failure();
  return expectShape(*this, "operand 'weights'", experts, tensorType(getWeights()).getShape(),
                     "that of 'experts'");
}

LogicalResult StepMetricOp::verify() {
  auto type = tensorType(getValue());
  if (type.getRank() != 1 || type.isDynamicDim(0))
    return emitOpError() << "takes a value of static shape [n], not " << type;
  return success();
}

LogicalResult MoeDispatchOp::verify() {
  if (failed(verifyRouting(*this, getSlots(), getSources())))
    return failure();
  ArrayRef<int64_t> input = tensorType(getInput()).getShape();
  ArrayRef<int64_t> slots = tensorType(getSlots()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'input'", "[..., H]", input)))
    return failure();
  Shape tokens(slots.drop_back());
  tokens.push_back(input.back());
  if (failed(expectShape(*this, "operand 'input'", tokens, input,
                         "the tokens of 'slots' followed by hidden")))
    return failure();
  if (failed(verifyRoutingWeights(*this, getWeights(), getSlots(), getInput(), "operand 'input'")))
    return failure();
  if (failed(expectShape(*this, "result", {elementCount(slots), input.back()},
                         tensorType(getResult()).getShape(), "[N, H]: a row per routed pair")))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'input'", getInput());
}

LogicalResult MoeCombineOp::verify() {
  if (failed(verifyRouting(*this, getSlots(), getSources())))
    return failure();
  ArrayRef<int64_t> input = tensorType(getInput()).getShape();
  ArrayRef<int64_t> slots = tensorType(getSlots()).getShape();
  if (failed(expectRank(*this, "operand 'input'", 2, "[N, H]", input)) ||
      failed(expectShape(*this, "operand 'input'", {elementCount(slots), input[1]}, input,
                         "[N, H]: a row per element of 'slots'")))
    return failure();
  if (failed(verifyRoutingWeights(*this, getWeights(), getSlots(), getInput(), "operand 'input'")))
    return failure();
  Shape tokens(slots.drop_back());
  tokens.push_back(input[1]);
  if (failed(expectShape(*this, "result", tokens, tensorType(getResult()).getShape(),
                         "the tokens of 'slots' followed by hidden")))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'input'", getInput());
}

LogicalResult GroupedMatmulOp::verify() {
  ArrayRef<int64_t> lhs = tensorType(getLhs()).getShape();
  ArrayRef<int64_t> rhs = tensorType(getRhs()).getShape();
  if (failed(expectRank(*this, "operand 'lhs'", 2, "[N, K]", lhs)) ||
      failed(expectRank(*this, "operand 'rhs'", 3,
                        getTransposeRhs() ? "[E, F, K] (transpose_rhs)" : "[E, K, F]", rhs)))
    return failure();
  int64_t k = getTransposeRhs() ? rhs[2] : rhs[1], f = getTransposeRhs() ? rhs[1] : rhs[2];
  if (!dimsAgree(k, lhs[1]))
    return emitOpError() << "operand 'rhs' shape " << formatShape(rhs) << ": its "
                         << (getTransposeRhs() ? "last" : "middle") << " dimension must be "
                         << lhs[1] << " (the K of 'lhs' " << formatShape(lhs) << "), got " << k;
  if (failed(expectShape(*this, "operand 'counts'", {rhs[0]}, tensorType(getCounts()).getShape(),
                         "[E]: a count per weight of 'rhs'")) ||
      failed(
          expectShape(*this, "result", {lhs[0], f}, tensorType(getResult()).getShape(), "[N, F]")))
    return failure();
  if (failed(expectElementType(*this, "operand 'rhs'", getRhs(), "operand 'lhs'", getLhs())))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'lhs'", getLhs());
}

LogicalResult MoeRouteGradOp::verify() {
  ArrayRef<int64_t> logits = tensorType(getLogits()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'logits'", "[..., E]", logits)))
    return failure();
  ArrayRef<int64_t> weights = tensorType(getWeights()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'weights'", "[..., k]", weights)))
    return failure();
  Shape chosen(logits.drop_back());
  chosen.push_back(weights.back());
  if (failed(expectShape(*this, "operand 'weights'", chosen, weights,
                         "the tokens of 'logits' followed by k")) ||
      failed(expectShape(*this, "operand 'experts'", chosen, tensorType(getExperts()).getShape(),
                         "that of 'weights'")) ||
      failed(expectShape(*this, "operand 'weights_grad'", chosen,
                         tensorType(getWeightsGrad()).getShape(), "that of 'weights'")) ||
      failed(expectShape(*this, "result", logits, tensorType(getResult()).getShape(),
                         "that of 'logits'")))
    return failure();
  for (auto [name, v] : {std::pair<StringRef, Value>{"operand 'weights'", getWeights()},
                         {"operand 'weights_grad'", getWeightsGrad()},
                         {"result", getResult()}})
    if (failed(expectElementType(*this, name, v, "operand 'logits'", getLogits())))
      return failure();
  return success();
}

LogicalResult MoeWeightGradOp::verify() {
  ArrayRef<int64_t> tokens = tensorType(getTokens()).getShape();
  ArrayRef<int64_t> rows = tensorType(getRows()).getShape();
  ArrayRef<int64_t> slots = tensorType(getSlots()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'slots'", "[..., k]", slots)) ||
      failed(expectRank(*this, "operand 'rows'", 2, "[N, H]", rows)))
    return failure();
  Shape expected(slots.drop_back());
  expected.push_back(rows[1]);
  if (failed(expectShape(*this, "operand 'tokens'", expected, tokens,
                         "the tokens of 'slots' followed by the H of 'rows'")) ||
      failed(expectShape(*this, "operand 'rows'", {elementCount(slots), rows[1]}, rows,
                         "[N, H]: a row per element of 'slots'")) ||
      failed(expectShape(*this, "result", slots, tensorType(getResult()).getShape(),
                         "that of 'slots'")))
    return failure();
  if (failed(
          expectElementType(*this, "operand 'rows'", getRows(), "operand 'tokens'", getTokens())))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'tokens'", getTokens());
}

LogicalResult GroupedWeightGradOp::verify() {
  ArrayRef<int64_t> lhs = tensorType(getLhs()).getShape();
  ArrayRef<int64_t> rhs = tensorType(getRhs()).getShape();
  ArrayRef<int64_t> counts = tensorType(getCounts()).getShape();
  if (failed(expectRank(*this, "operand 'lhs'", 2, "[N, K]", lhs)) ||
      failed(expectRank(*this, "operand 'rhs'", 2, "[N, F]", rhs)) ||
      failed(expectRank(*this, "operand 'counts'", 1, "[E]", counts)) ||
      failed(
          expectShape(*this, "operand 'rhs'", {lhs[0], rhs[1]}, rhs, "the rows of 'lhs' by F")) ||
      failed(expectShape(*this, "result", {counts[0], lhs[1], rhs[1]},
                         tensorType(getResult()).getShape(), "[E, K, F]")))
    return failure();
  if (failed(expectElementType(*this, "operand 'rhs'", getRhs(), "operand 'lhs'", getLhs())))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'lhs'", getLhs());
}

namespace {

/// The operands of a tfm.moe_experts (or its gradient): tokens [..., H],
/// a routing [..., k], expert weights w1, w3 [E, F, H] and w2 [E, H, F].
LogicalResult verifyExperts(Operation *op, Value input, Value experts, Value weights, Value w1,
                            Value w3, Value w2) {
  ArrayRef<int64_t> x = tensorType(input).getShape();
  ArrayRef<int64_t> routing = tensorType(experts).getShape();
  if (failed(expectRankAtLeastOne(op, "operand 'input'", "[..., H]", x)) ||
      failed(expectRankAtLeastOne(op, "operand 'experts'", "[..., k]", routing)))
    return failure();
  Shape chosen(x.drop_back());
  chosen.push_back(routing.back());
  if (failed(expectShape(op, "operand 'experts'", chosen, routing,
                         "the tokens of 'input' followed by k")) ||
      failed(expectShape(op, "operand 'weights'", chosen, tensorType(weights).getShape(),
                         "that of 'experts'")))
    return failure();
  ArrayRef<int64_t> gate = tensorType(w1).getShape();
  if (failed(expectRank(op, "operand 'w1'", 3, "[E, F, H]", gate)) ||
      failed(expectShape(op, "operand 'w1'", {gate[0], gate[1], x.back()}, gate,
                         "[E, F, H], H that of 'input'")) ||
      failed(expectShape(op, "operand 'w3'", gate, tensorType(w3).getShape(), "that of 'w1'")) ||
      failed(expectShape(op, "operand 'w2'", {gate[0], x.back(), gate[1]},
                         tensorType(w2).getShape(), "[E, H, F] of 'w1'")))
    return failure();
  if (!ShapedType::isDynamic(gate[0]) && routing.back() > gate[0])
    return op->emitOpError() << "routes each token to " << routing.back() << " experts of 'w1''s "
                             << gate[0] << " (top-k must not exceed the experts)";
  for (auto [name, v] : {std::pair<StringRef, Value>{"operand 'weights'", weights},
                         {"operand 'w1'", w1},
                         {"operand 'w3'", w3},
                         {"operand 'w2'", w2}})
    if (failed(expectElementType(op, name, v, "operand 'input'", input)))
      return failure();
  return success();
}

/// tfm.moe_all_to_all's and its inverse's operands: `sent` rows [R, H] on
/// each device, received rows [n * R, H], counts [E] with n dividing E;
/// sets `members` to n.
LogicalResult verifyExpertExchange(Operation *op, Value sent, Value received, Value counts,
                                   StringRef sentName, StringRef receivedName, int64_t &members) {
  ArrayRef<int64_t> c = tensorType(counts).getShape();
  ArrayRef<int64_t> rows = tensorType(sent).getShape();
  ArrayRef<int64_t> all = tensorType(received).getShape();
  if (failed(expectRank(op, "operand 'counts'", 1, "[E]: this device's count per expert", c)) ||
      failed(expectRank(op, sentName, 2, "[R, H]", rows)) ||
      failed(expectRank(op, receivedName, 2, "[n * R, H]", all)))
    return failure();
  members = ShapedType::kDynamic;
  if (llvm::any_of(llvm::concat<const int64_t>(c, rows, all), ShapedType::isDynamic))
    return success();
  if (rows[0] == 0 || all[0] % rows[0] != 0 || all[1] != rows[1])
    return op->emitOpError() << receivedName << " shape " << formatShape(all) << ": expected [n * "
                             << rows[0] << ", " << rows[1] << "] (n devices' rows, " << sentName
                             << " being " << formatShape(rows) << ")";
  members = all[0] / rows[0];
  if (c[0] % members != 0)
    return op->emitOpError() << "operand 'counts' shape " << formatShape(c) << ": the " << members
                             << " devices must hold equal blocks of the " << c[0] << " experts";
  return expectElementType(op, receivedName, received, sentName, sent);
}

} // namespace

LogicalResult MoeExpertsOp::verify() {
  if (failed(
          verifyExperts(*this, getInput(), getExperts(), getWeights(), getW1(), getW3(), getW2())))
    return failure();
  return expectShape(*this, "result", tensorType(getInput()).getShape(),
                     tensorType(getResult()).getShape(), "that of 'input'");
}

LogicalResult MoeExpertsGradOp::verify() {
  if (failed(
          verifyExperts(*this, getInput(), getExperts(), getWeights(), getW1(), getW3(), getW2())))
    return failure();
  for (auto [name, grad, of] :
       {std::tuple<StringRef, Value, Value>{"operand 'result_grad'", getResultGrad(), getInput()},
        {"result 'input_grad'", getInputGrad(), getInput()},
        {"result 'weights_grad'", getWeightsGrad(), getWeights()},
        {"result 'w1_grad'", getW1Grad(), getW1()},
        {"result 'w3_grad'", getW3Grad(), getW3()},
        {"result 'w2_grad'", getW2Grad(), getW2()}})
    if (failed(expectShape(*this, name, tensorType(of).getShape(), tensorType(grad).getShape(),
                           "that of the value it is the gradient of")))
      return failure();
  return success();
}

LogicalResult MoeAllToAllOp::verify() {
  int64_t members;
  if (failed(verifyExpertExchange(*this, getRows(), getResult(), getCounts(), "operand 'rows'",
                                  "result", members)))
    return failure();
  int64_t experts = tensorType(getCounts()).getShape()[0];
  int64_t local = ShapedType::isDynamic(members) ? ShapedType::kDynamic : experts / members;
  return expectShape(*this, "result 'expert_counts'", {local},
                     tensorType(getExpertCounts()).getShape(), "[E / n]: this device's experts");
}

LogicalResult MoeAllToAllBackOp::verify() {
  int64_t members;
  return verifyExpertExchange(*this, getResult(), getRows(), getCounts(), "result",
                              "operand 'rows'", members);
}

LogicalResult MoeRouterStatsOp::verify() {
  ArrayRef<int64_t> logits = tensorType(getLogits()).getShape();
  ArrayRef<int64_t> experts = tensorType(getExperts()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'logits'", "[..., E]", logits)) ||
      failed(expectRankAtLeastOne(*this, "operand 'experts'", "[..., k]", experts)))
    return failure();
  Shape chosen(logits.drop_back());
  chosen.push_back(experts.back());
  if (failed(expectShape(*this, "operand 'experts'", chosen, experts,
                         "the tokens of 'logits' followed by k")) ||
      failed(expectShape(*this, "result", {2, logits.back()}, tensorType(getResult()).getShape(),
                         "[2, E]: the probability sums, the choice counts")))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'logits'", getLogits());
}

LogicalResult MoeBalanceLossOp::verify() {
  ArrayRef<int64_t> stats = tensorType(getStats()).getShape();
  if (failed(expectRank(*this, "operand 'stats'", 2, "[2, E]", stats)) ||
      failed(expectShape(*this, "operand 'stats'", {2, stats[1]}, stats,
                         "[2, E]: the probability sums, the choice counts")))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'stats'", getStats());
}

LogicalResult MoeRouterStatsGradOp::verify() {
  ArrayRef<int64_t> logits = tensorType(getLogits()).getShape();
  if (failed(expectRankAtLeastOne(*this, "operand 'logits'", "[..., E]", logits)) ||
      failed(expectShape(*this, "operand 'stats_grad'", {2, logits.back()},
                         tensorType(getStatsGrad()).getShape(), "[2, E]")) ||
      failed(expectShape(*this, "result", logits, tensorType(getResult()).getShape(),
                         "that of 'logits'")))
    return failure();
  if (failed(expectElementType(*this, "operand 'stats_grad'", getStatsGrad(), "operand 'logits'",
                               getLogits())))
    return failure();
  return expectElementType(*this, "result", getResult(), "operand 'logits'", getLogits());
}
