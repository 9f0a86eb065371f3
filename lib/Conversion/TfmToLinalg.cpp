//===- TfmToLinalg.cpp - Lower tfm ops to linalg on tensors ---------------===//
//
// Part of pmlir.
//
// Each tfm op becomes linalg.generic ops (plus tensor reshapes and slices) on
// static shapes, so that upstream fusion, tiling, vectorization and one-shot
// bufferization apply. Arithmetic is done in the op's element type.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/DialectConversion.h"
#include "llvm/Support/Debug.h"

#include <cmath>

#define DEBUG_TYPE "pmlir-convert-tfm-to-linalg"

namespace pmlir {
#define GEN_PASS_DEF_CONVERTTFMTOLINALG
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

namespace {

using utils::IteratorType;
using BodyBuilder = function_ref<Value(OpBuilder &, Location, ValueRange)>;

RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

Value floatConst(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType) {
  return tensor::EmptyOp::create(b, loc, shape, elementType);
}

Value filled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType, double value) {
  Value init = emptyLike(b, loc, shape, elementType);
  Value fill = floatConst(b, loc, elementType, value);
  return linalg::FillOp::create(b, loc, fill, init).getResult(0);
}

/// A linalg.generic with one tensor result of `resultType` (initialized from
/// `init`, or empty), reading `inputs` through `maps` (the last map is the
/// result's). The body receives the input elements and the result element.
Value generic(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
              ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators, BodyBuilder body,
              Value init = {}) {
  if (!init)
    init = emptyLike(b, loc, resultType.getShape(), resultType.getElementType());
  auto op =
      linalg::GenericOp::create(b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps,
                                iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
                                  linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
                                });
  return op.getResult(0);
}

/// An all-parallel elementwise generic over `resultType`'s shape; each input
/// is read through the map in `maps` at its position.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
                  ArrayRef<AffineMap> inputMaps, BodyBuilder body) {
  unsigned rank = resultType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  return generic(b, loc, resultType, inputs, maps, iterators, body);
}

/// The map (d0, ..., d{rank-1}) -> (the last `n` dims).
AffineMap trailingMap(OpBuilder &b, unsigned rank, unsigned n) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = rank - n; i < rank; ++i)
    exprs.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

/// The map (d0, ..., d{rank-1}) -> (d0, ..., d{rank-2}): a row of the last
/// dimension.
AffineMap rowMap(OpBuilder &b, unsigned rank) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i + 1 < rank; ++i)
    exprs.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

/// Reduces the last dimension of `input` with `combine` starting from
/// `initial`, after mapping each element through `map` (which also sees the
/// row's previously reduced values in `rowInputs`).
Value reduceRows(OpBuilder &b, Location loc, Value input, ValueRange rowInputs, double initial,
                 function_ref<Value(OpBuilder &, Location, Value, ValueRange)> map,
                 function_ref<Value(OpBuilder &, Location, Value, Value)> combine) {
  RankedTensorType type = tensorType(input);
  unsigned rank = type.getRank();
  auto rowType = RankedTensorType::get(type.getShape().drop_back(), type.getElementType());
  Value init = filled(b, loc, rowType.getShape(), type.getElementType(), initial);
  SmallVector<Value> inputs = {input};
  llvm::append_range(inputs, rowInputs);
  SmallVector<AffineMap> maps = {b.getMultiDimIdentityMap(rank)};
  maps.append(rowInputs.size() + 1, rowMap(b, rank));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators.back() = IteratorType::reduction;
  return generic(
      b, loc, rowType, inputs, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value mapped = map(nb, nloc, args[0], args.drop_front().drop_back());
        return combine(nb, nloc, args.back(), mapped);
      },
      init);
}

/// sum over the reduction loops of lhs * rhs, into a zero-filled result.
Value contraction(OpBuilder &b, Location loc, RankedTensorType type, Value lhs, Value rhs,
                  ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators) {
  Value init = filled(b, loc, type.getShape(), type.getElementType(), 0.0);
  return generic(
      b, loc, type, {lhs, rhs}, maps, iterators,
      [](OpBuilder &nb, Location l, ValueRange a) -> Value {
        return arith::AddFOp::create(nb, l, a[2], arith::MulFOp::create(nb, l, a[0], a[1]));
      },
      init);
}

/// The combining add of a row reduction. Reassociation lets LLVM keep
/// several partial sums in vector lanes; without it a sum is one serial
/// chain of scalar adds.
Value addF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(
      b, loc, x, y, arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc));
}
Value maxF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MaximumFOp::create(b, loc, x, y);
}
Value identity(OpBuilder &, Location, Value x, ValueRange) { return x; }

//===----------------------------------------------------------------------===//
// Patterns
//===----------------------------------------------------------------------===//

/// Fails the match of `op` unless its operands have static shapes: the
/// lowerings compute on static shapes.
LogicalResult staticOperands(Operation *op, PatternRewriter &rewriter) {
  for (Type t : op->getOperandTypes())
    if (auto shaped = dyn_cast<ShapedType>(t); shaped && !shaped.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes are not lowered");
  return success();
}

template <typename Op> struct TfmPattern : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const final {
    if (failed(staticOperands(op, rewriter)))
      return failure();
    Value result = lower(op, rewriter);
    if (!result)
      return failure();
    rewriter.replaceOp(op, result);
    return success();
  }
  virtual Value lower(Op op, PatternRewriter &b) const = 0;
};

template <typename Op, typename ArithOp> struct BinaryLowering : TfmPattern<Op> {
  using TfmPattern<Op>::TfmPattern;
  Value lower(Op op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    unsigned rank = type.getRank();
    unsigned rhsRank = tensorType(op.getRhs()).getRank();
    return elementwise(b, op.getLoc(), type, {op.getLhs(), op.getRhs()},
                       {b.getMultiDimIdentityMap(rank), trailingMap(b, rank, rhsRank)},
                       [](OpBuilder &nb, Location loc, ValueRange args) -> Value {
                         return ArithOp::create(nb, loc, args[0], args[1]);
                       });
  }
};

/// Elementwise ops of one operand whose body is a function of the element.
template <typename Op> struct UnaryLowering : TfmPattern<Op> {
  using TfmPattern<Op>::TfmPattern;
  virtual Value body(Op op, OpBuilder &b, Location loc, Value x) const = 0;
  Value lower(Op op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    return elementwise(
        b, op.getLoc(), type, {op->getOperand(0)}, {b.getMultiDimIdentityMap(type.getRank())},
        [&](OpBuilder &nb, Location loc, ValueRange args) { return body(op, nb, loc, args[0]); });
  }
};

struct ScaleLowering : UnaryLowering<tfm::ScaleOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::ScaleOp op, OpBuilder &b, Location loc, Value x) const override {
    Value c = floatConst(b, loc, x.getType(), op.getFactor().convertToDouble());
    return arith::MulFOp::create(b, loc, x, c);
  }
};

struct GeluLowering : UnaryLowering<tfm::GeluOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::GeluOp op, OpBuilder &b, Location loc, Value x) const override {
    Type t = x.getType();
    Value half = floatConst(b, loc, t, 0.5);
    Value one = floatConst(b, loc, t, 1.0);
    Value inner;
    if (op.getApproximation() == tfm::GeluApproximation::tanh) {
      // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
      Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
      Value poly = arith::AddFOp::create(
          b, loc, x, arith::MulFOp::create(b, loc, floatConst(b, loc, t, 0.044715), x3));
      inner = math::TanhOp::create(
          b, loc,
          arith::MulFOp::create(b, loc, floatConst(b, loc, t, std::sqrt(2.0 / M_PI)), poly));
    } else {
      inner = math::ErfOp::create(
          b, loc, arith::MulFOp::create(b, loc, x, floatConst(b, loc, t, M_SQRT1_2)));
    }
    return arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, half, x),
                                 arith::AddFOp::create(b, loc, one, inner));
  }
};

struct SiluLowering : UnaryLowering<tfm::SiluOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::SiluOp, OpBuilder &b, Location loc, Value x) const override {
    Value one = floatConst(b, loc, x.getType(), 1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, x, arith::AddFOp::create(b, loc, one, e));
  }
};

/// `v` at column (the last loop) `from + j` of a vocabulary of `vocab`, or
/// `fill` past it (in the padding).
Value maskPadding(OpBuilder &b, Location l, Value v, Value from, int64_t vocab, unsigned rank,
                  double fill) {
  Value column = arith::AddIOp::create(b, l, linalg::IndexOp::create(b, l, rank - 1), from);
  Value inside = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, column,
                                       arith::ConstantIndexOp::create(b, l, vocab));
  return arith::SelectOp::create(b, l, inside, v, floatConst(b, l, v.getType(), fill));
}

/// The max over the last dimension; with `from`, over the columns below
/// `vocab` of a block starting at column `from`.
Value rowMax(OpBuilder &b, Location loc, Value x, Value from = {}, int64_t vocab = 0) {
  unsigned rank = tensorType(x).getRank();
  return reduceRows(
      b, loc, x, {}, -INFINITY,
      [&](OpBuilder &nb, Location l, Value v, ValueRange) -> Value {
        if (!from)
          return v;
        return maskPadding(nb, l, v, from, vocab, rank, -INFINITY);
      },
      maxF);
}

/// Per row of the last dimension: the max and the sum of exp(x - max), the
/// numerically safe parts of softmax and logsumexp.
std::pair<Value, Value> rowMaxAndExpSum(OpBuilder &b, Location loc, Value x) {
  Value max = rowMax(b, loc, x);
  Value sum = reduceRows(
      b, loc, x, {max}, 0.0,
      [](OpBuilder &nb, Location l, Value v, ValueRange row) -> Value {
        return math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, v, row[0]));
      },
      addF);
  return {max, sum};
}

/// Softmax over the last dimension: max, sum of exp(x - max), divide.
Value softmaxRows(OpBuilder &b, Location loc, Value x) {
  RankedTensorType type = tensorType(x);
  unsigned rank = type.getRank();
  auto [max, sum] = rowMaxAndExpSum(b, loc, x);
  return elementwise(b, loc, type, {x, max, sum},
                     {b.getMultiDimIdentityMap(rank), rowMap(b, rank), rowMap(b, rank)},
                     [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value e =
                           math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1]));
                       return arith::DivFOp::create(nb, l, e, a[2]);
                     });
}

/// Per row of the last dimension of the tensors `full` (and the per-row
/// values `rows`), the sum of `term` over the row.
Value rowSum(OpBuilder &b, Location loc, ValueRange full, ValueRange rows,
             function_ref<Value(OpBuilder &, Location, ValueRange, ValueRange)> term) {
  RankedTensorType type = tensorType(full.front());
  unsigned rank = type.getRank();
  auto rowType = RankedTensorType::get(type.getShape().drop_back(), type.getElementType());
  Value init = filled(b, loc, rowType.getShape(), type.getElementType(), 0.0);
  SmallVector<Value> inputs(full);
  llvm::append_range(inputs, rows);
  SmallVector<AffineMap> maps(full.size(), b.getMultiDimIdentityMap(rank));
  maps.append(rows.size() + 1, rowMap(b, rank));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  iterators.back() = IteratorType::reduction;
  return generic(
      b, loc, rowType, inputs, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v =
            term(nb, nloc, args.take_front(full.size()), args.drop_front(full.size()).drop_back());
        return addF(nb, nloc, args.back(), v);
      },
      init);
}

/// The gradient of softmax over the last dimension from its output `y`:
/// factor * y * (dy - sum(y * dy)).
Value softmaxGradRows(OpBuilder &b, Location loc, Value y, Value dy, double factor = 1.0) {
  RankedTensorType type = tensorType(y);
  unsigned rank = type.getRank();
  Value dot = rowSum(b, loc, {y, dy}, {}, [](OpBuilder &nb, Location l, ValueRange a, ValueRange) {
    return arith::MulFOp::create(nb, l, a[0], a[1]).getResult();
  });
  return elementwise(
      b, loc, type, {y, dy, dot},
      {b.getMultiDimIdentityMap(rank), b.getMultiDimIdentityMap(rank), rowMap(b, rank)},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value v = arith::MulFOp::create(nb, l, a[0], arith::SubFOp::create(nb, l, a[1], a[2]));
        if (factor == 1.0)
          return v;
        return arith::MulFOp::create(nb, l, v, floatConst(nb, l, v.getType(), factor));
      });
}

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

/// lhs @ rhs over the trailing two dims (batched when lhs has more; a rank-2
/// rhs is shared by every batch element), with optional transposes.
Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs, bool transposeLhs,
             bool transposeRhs) {
  RankedTensorType lhsType = tensorType(lhs), rhsType = tensorType(rhs);
  unsigned rank = lhsType.getRank(), batch = rank - 2;
  ArrayRef<int64_t> l = lhsType.getShape(), r = rhsType.getShape();
  SmallVector<int64_t> shape(l.drop_back(2));
  shape.push_back(transposeLhs ? l[rank - 1] : l[rank - 2]);
  shape.push_back(transposeRhs ? r[r.size() - 2] : r[r.size() - 1]);
  auto type = RankedTensorType::get(shape, lhsType.getElementType());
  // Loops: batch..., m, n, k.
  unsigned loops = batch + 3;
  AffineExpr m = b.getAffineDimExpr(batch), n = b.getAffineDimExpr(batch + 1),
             k = b.getAffineDimExpr(batch + 2);
  SmallVector<AffineExpr> batchDims;
  for (unsigned i = 0; i < batch; ++i)
    batchDims.push_back(b.getAffineDimExpr(i));
  auto map = [&](bool withBatch, AffineExpr x, AffineExpr y) {
    SmallVector<AffineExpr> exprs;
    if (withBatch)
      exprs.append(batchDims);
    exprs.append({x, y});
    return AffineMap::get(loops, 0, exprs, b.getContext());
  };
  bool batchedRhs = rhsType.getRank() > 2;
  SmallVector<AffineMap> maps = {transposeLhs ? map(true, k, m) : map(true, m, k),
                                 transposeRhs ? map(batchedRhs, n, k) : map(batchedRhs, k, n),
                                 map(true, m, n)};
  SmallVector<IteratorType> iterators(loops, IteratorType::parallel);
  iterators.back() = IteratorType::reduction;
  // Which contractions run as library kernels is the target's choice
  // (pmlir-select-cpu-kernels on CPUs).
  return contraction(b, loc, type, lhs, rhs, maps, iterators);
}

struct MatmulLowering : TfmPattern<tfm::MatmulOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::MatmulOp op, PatternRewriter &b) const override {
    return matmul(b, op.getLoc(), op.getLhs(), op.getRhs(), op.getTransposeLhs(),
                  op.getTransposeRhs());
  }
};

struct EmbeddingLowering : TfmPattern<tfm::EmbeddingOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::EmbeddingOp op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    unsigned rank = type.getRank();
    Value table = op.getTable();
    Value offset = op.getRowOffset();
    int64_t rows = tensorType(table).getShape()[0];
    // Ids are checked against the vocabulary before the program runs; a
    // vocab shard (rows_from) gives zeros for the ids other shards hold.
    return elementwise(b, op.getLoc(), type, {op.getIds()}, {rowMap(b, rank)},
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                         Value col = linalg::IndexOp::create(nb, l, rank - 1);
                         if (!offset)
                           return tensor::ExtractOp::create(nb, l, table, ValueRange{row, col});
                         Value local = arith::SubIOp::create(nb, l, row, offset);
                         // Unsigned: a negative local row is a huge one.
                         Value inBlock =
                             arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, local,
                                                   arith::ConstantIndexOp::create(nb, l, rows));
                         Value safe = arith::SelectOp::create(
                             nb, l, inBlock, local, arith::ConstantIndexOp::create(nb, l, 0));
                         Value v = tensor::ExtractOp::create(nb, l, table, ValueRange{safe, col});
                         return arith::SelectOp::create(
                             nb, l, inBlock, v, floatConst(nb, l, type.getElementType(), 0.0));
                       });
  }
};

/// The sequence position of `index` in head-tail order (HeadTailOrder's
/// arithmetic on an index value).
static Value headTailPosition(OpBuilder &b, Location l, Value index, HeadTailOrder order) {
  auto constant = [&](int64_t v) { return arith::ConstantIndexOp::create(b, l, v); };
  Value rank = arith::DivUIOp::create(b, l, index, constant(order.block()));
  Value within = arith::RemUIOp::create(b, l, index, constant(order.block()));
  Value inHead = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, within,
                                       constant(order.head()));
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

struct SplitLowering : OpRewritePattern<tfm::SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::SplitOp op, PatternRewriter &b) const override {
    RankedTensorType in = tensorType(op.getInput());
    if (!in.hasStaticShape())
      return b.notifyMatchFailure(op, "dynamic shapes are not lowered");
    unsigned rank = in.getRank();
    int64_t dim = op.getDim();
    SmallVector<Value> parts;
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      RankedTensorType type = tensorType(result);
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      offsets[dim] = static_cast<int64_t>(i) * type.getShape()[dim];
      parts.push_back(tensor::ExtractSliceOp::create(
          b, op.getLoc(), type, op.getInput(), ValueRange{}, ValueRange{}, ValueRange{},
          b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(type.getShape()),
          b.getDenseI64ArrayAttr(strides)));
    }
    b.replaceOp(op, parts);
    return success();
  }
};

/// Per token of `logits` [..., Vb], columns [from, from + Vb) of a
/// vocabulary of `vocab`: [sum of exp(logit - max) over the columns below
/// `vocab`, logit[label] - max if the label is in the block, else 0]
/// (tfm.cross_entropy_parts). `from` is null for the whole vocabulary.
Value crossEntropyParts(OpBuilder &b, Location loc, Value logits, Value labels, Value max,
                        Value from, int64_t vocab) {
  RankedTensorType type = tensorType(logits);
  Type t = type.getElementType();
  unsigned rank = type.getRank();
  int64_t columns = type.getShape().back();
  Value sum = reduceRows(
      b, loc, logits, {max}, 0.0,
      [&](OpBuilder &nb, Location l, Value v, ValueRange row) -> Value {
        Value e = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, v, row[0]));
        // Padding columns (past the vocabulary) count for nothing.
        return from ? maskPadding(nb, l, e, from, vocab, rank, 0.0) : e;
      },
      addF);
  unsigned tokenRank = rank - 1;
  auto tokensType = RankedTensorType::get(type.getShape().drop_back(), t);
  Value picked = elementwise(
      b, loc, tokensType, {labels, max},
      {b.getMultiDimIdentityMap(tokenRank), b.getMultiDimIdentityMap(tokenRank)},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value column = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        if (from)
          column = arith::SubIOp::create(nb, l, column, from);
        // Unsigned: a label before the block is a huge column. Labels
        // outside the block (ignored ones among them) read column 0.
        Value inBlock = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, column,
                                              arith::ConstantIndexOp::create(nb, l, columns));
        Value safe = arith::SelectOp::create(nb, l, inBlock, column,
                                             arith::ConstantIndexOp::create(nb, l, 0));
        SmallVector<Value> idx;
        for (unsigned i = 0; i < tokenRank; ++i)
          idx.push_back(linalg::IndexOp::create(nb, l, i));
        idx.push_back(safe);
        Value logit = tensor::ExtractOp::create(nb, l, logits, idx);
        return arith::SelectOp::create(nb, l, inBlock, arith::SubFOp::create(nb, l, logit, a[1]),
                                       floatConst(nb, l, t, 0.0));
      });
  SmallVector<int64_t> partsShape(type.getShape().drop_back());
  partsShape.push_back(2);
  auto partsType = RankedTensorType::get(partsShape, t);
  return elementwise(b, loc, partsType, {sum, picked}, {rowMap(b, rank), rowMap(b, rank)},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value first =
                           arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                                 linalg::IndexOp::create(nb, l, rank - 1),
                                                 arith::ConstantIndexOp::create(nb, l, 0));
                       return arith::SelectOp::create(nb, l, first, a[0], a[1]);
                     });
}

/// The mean over tokens whose label is not `ignore` of log(parts[..., 0]) -
/// parts[..., 1] (tfm.cross_entropy_combine).
Value crossEntropyCombine(OpBuilder &b, Location loc, Value parts, Value labels, int64_t ignore) {
  RankedTensorType type = tensorType(parts);
  Type t = type.getElementType();
  unsigned tokenRank = type.getRank() - 1;
  auto scalar = RankedTensorType::get({}, t);
  Type labelType = tensorType(labels).getElementType();
  // Sum over tokens of the loss and the count of counted tokens; the token
  // loops are reductions, the parts' last dimension is read by index.
  AffineMap tokens = b.getMultiDimIdentityMap(tokenRank);
  AffineMap toScalar = AffineMap::get(tokenRank, 0, {}, b.getContext());
  SmallVector<IteratorType> iters(tokenRank, IteratorType::reduction);
  auto totals = linalg::GenericOp::create(
      b, loc, TypeRange{scalar, scalar}, ValueRange{labels},
      ValueRange{filled(b, loc, {}, t, 0.0), filled(b, loc, {}, t, 0.0)},
      SmallVector<AffineMap>{tokens, toScalar, toScalar}, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value counted = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::ne, a[0],
            arith::ConstantOp::create(nb, l, nb.getIntegerAttr(labelType, ignore)));
        SmallVector<Value> idx;
        for (unsigned i = 0; i < tokenRank; ++i)
          idx.push_back(linalg::IndexOp::create(nb, l, i));
        idx.push_back(arith::ConstantIndexOp::create(nb, l, 0));
        Value sum = tensor::ExtractOp::create(nb, l, parts, idx);
        idx.back() = arith::ConstantIndexOp::create(nb, l, 1);
        Value picked = tensor::ExtractOp::create(nb, l, parts, idx);
        Value loss = arith::SubFOp::create(nb, l, math::LogOp::create(nb, l, sum), picked);
        Value zeroF = floatConst(nb, l, t, 0.0);
        Value oneF = floatConst(nb, l, t, 1.0);
        Value lossSum = arith::AddFOp::create(nb, l, a[1],
                                              arith::SelectOp::create(nb, l, counted, loss, zeroF));
        Value count = arith::AddFOp::create(nb, l, a[2],
                                            arith::SelectOp::create(nb, l, counted, oneF, zeroF));
        linalg::YieldOp::create(nb, l, ValueRange{lossSum, count});
      });
  return generic(b, loc, scalar, {totals.getResult(0), totals.getResult(1)},
                 SmallVector<AffineMap>(3, AffineMap::get(0, 0, b.getContext())), {},
                 [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   return arith::DivFOp::create(nb, l, a[0], a[1]);
                 });
}

struct RowMaxLowering : TfmPattern<tfm::RowMaxOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::RowMaxOp op, PatternRewriter &b) const override {
    return rowMax(b, op.getLoc(), op.getInput(), op.getVocabFrom(), op.getVocab().value_or(0));
  }
};

struct CrossEntropyPartsLowering : TfmPattern<tfm::CrossEntropyPartsOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyPartsOp op, PatternRewriter &b) const override {
    return crossEntropyParts(b, op.getLoc(), op.getLogits(), op.getLabels(), op.getMax(),
                             op.getVocabFrom(), op.getVocab());
  }
};

struct CrossEntropyCombineLowering : TfmPattern<tfm::CrossEntropyCombineOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyCombineOp op, PatternRewriter &b) const override {
    return crossEntropyCombine(b, op.getLoc(), op.getParts(), op.getLabels(), op.getIgnoreIndex());
  }
};

/// The whole vocabulary is one block.
struct CrossEntropyLowering : TfmPattern<tfm::CrossEntropyOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value logits = op.getLogits();
    Value parts = crossEntropyParts(b, loc, logits, op.getLabels(), rowMax(b, loc, logits), Value(),
                                    tensorType(logits).getShape().back());
    return crossEntropyCombine(b, loc, parts, op.getLabels(), op.getIgnoreIndex());
  }
};

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

struct FillLowering : TfmPattern<tfm::FillOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::FillOp op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    if (!type.hasStaticShape())
      return Value();
    return filled(b, op.getLoc(), type.getShape(), type.getElementType(),
                  op.getValue().convertToDouble());
  }
};

/// Collapses the leading dimensions of `x` into one: [a, b, ..., w] ->
/// [a*b*..., w] (a view).
Value collapseLeading(OpBuilder &b, Location loc, Value x) {
  RankedTensorType type = tensorType(x);
  int64_t rank = type.getRank();
  if (rank == 2)
    return x;
  ReassociationIndices leading;
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < rank; ++d) {
    leading.push_back(d);
    rows *= type.getShape()[d];
  }
  auto collapsed = RankedTensorType::get({rows, type.getShape().back()}, type.getElementType());
  return tensor::CollapseShapeOp::create(b, loc, collapsed, x,
                                         ArrayRef<ReassociationIndices>{leading, {rank - 1}});
}

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

struct ConcatLowering : TfmPattern<tfm::ConcatOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::ConcatOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType out = tensorType(op.getResult());
    unsigned rank = out.getRank();
    int64_t dim = op.getDim();
    Value result = emptyLike(b, loc, out.getShape(), out.getElementType());
    for (auto [i, input] : llvm::enumerate(op.getInputs())) {
      ArrayRef<int64_t> shape = tensorType(input).getShape();
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      offsets[dim] = static_cast<int64_t>(i) * shape[dim];
      result = tensor::InsertSliceOp::create(b, loc, input, result, ValueRange{}, ValueRange{},
                                             ValueRange{}, b.getDenseI64ArrayAttr(offsets),
                                             b.getDenseI64ArrayAttr(shape),
                                             b.getDenseI64ArrayAttr(strides));
    }
    return result;
  }
};

/// Elementwise gradients of activations: dx = f'(x) * dy.
template <typename Op> struct ActivationGradLowering : TfmPattern<Op> {
  using TfmPattern<Op>::TfmPattern;
  virtual Value derivative(Op op, OpBuilder &b, Location loc, Value x) const = 0;
  Value lower(Op op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    return elementwise(b, op.getLoc(), type, {op.getInput(), op.getGrad()}, {id, id},
                       [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                         return arith::MulFOp::create(nb, loc, derivative(op, nb, loc, a[0]), a[1]);
                       });
  }
};

struct GeluGradLowering : ActivationGradLowering<tfm::GeluGradOp> {
  using ActivationGradLowering::ActivationGradLowering;
  Value derivative(tfm::GeluGradOp op, OpBuilder &b, Location loc, Value x) const override {
    Type t = x.getType();
    auto c = [&](double v) { return floatConst(b, loc, t, v); };
    auto mul = [&](Value u, Value v) { return arith::MulFOp::create(b, loc, u, v).getResult(); };
    auto add = [&](Value u, Value v) { return arith::AddFOp::create(b, loc, u, v).getResult(); };
    Value x2 = mul(x, x);
    if (op.getApproximation() == tfm::GeluApproximation::tanh) {
      // d/dx 0.5 x (1 + tanh(u)), u = k (x + a x^3):
      // 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) k (1 + 3 a x^2).
      double k = std::sqrt(2.0 / M_PI), a = 0.044715;
      Value u = mul(c(k), add(x, mul(c(a), mul(x2, x))));
      Value th = math::TanhOp::create(b, loc, u);
      Value left = mul(c(0.5), add(c(1.0), th));
      Value sech2 = arith::SubFOp::create(b, loc, c(1.0), mul(th, th));
      Value du = mul(c(k), add(c(1.0), mul(c(3 * a), x2)));
      return add(left, mul(mul(c(0.5), x), mul(sech2, du)));
    }
    // 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
    Value cdf =
        mul(c(0.5), add(c(1.0), math::ErfOp::create(b, loc, mul(x, c(M_SQRT1_2))).getResult()));
    Value pdf = mul(math::ExpOp::create(b, loc, mul(x2, c(-0.5))).getResult(),
                    c(1.0 / std::sqrt(2.0 * M_PI)));
    return add(cdf, mul(x, pdf));
  }
};

struct SiluGradLowering : ActivationGradLowering<tfm::SiluGradOp> {
  using ActivationGradLowering::ActivationGradLowering;
  Value derivative(tfm::SiluGradOp, OpBuilder &b, Location loc, Value x) const override {
    // sigmoid(x) (1 + x (1 - sigmoid(x)))
    Value one = floatConst(b, loc, x.getType(), 1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    Value sig = arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
    Value inner = arith::AddFOp::create(
        b, loc, one, arith::MulFOp::create(b, loc, x, arith::SubFOp::create(b, loc, one, sig)));
    return arith::MulFOp::create(b, loc, sig, inner);
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

/// A scatter-add of the gradient's rows into a zeroed table, one token at a
/// time: each token's row is added to the table row of its id (ids outside
/// a vocab-parallel block add nothing). Bufferization makes the loop's
/// table one buffer updated in place.
struct EmbeddingGradLowering : TfmPattern<tfm::EmbeddingGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::EmbeddingGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType tableType = tensorType(op.getResult());
    int64_t rows = tableType.getShape()[0], hidden = tableType.getShape()[1];
    Type t = tableType.getElementType();
    Value grad = collapseLeading(b, loc, op.getGrad());
    RankedTensorType idsType = tensorType(op.getIds());
    int64_t tokens = idsType.getNumElements();
    Value ids = op.getIds();
    if (idsType.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < idsType.getRank(); ++d)
        all.push_back(d);
      ids = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({tokens}, idsType.getElementType()), ids,
          ArrayRef<ReassociationIndices>{all});
    }
    Value table = filled(b, loc, {rows, hidden}, t, 0.0);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value offset = op.getRowOffset();
    auto rowType = RankedTensorType::get({1, hidden}, t);
    auto loop = scf::ForOp::create(
        b, loc, zero, arith::ConstantIndexOp::create(b, loc, tokens), one, ValueRange{table},
        [&](OpBuilder &nb, Location l, Value token, ValueRange acc) {
          Value id = tensor::ExtractOp::create(nb, l, ids, ValueRange{token});
          Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), id);
          if (offset)
            row = arith::SubIOp::create(nb, l, row, offset);
          // Unsigned: a negative local row is a huge one.
          Value inBlock = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, row,
                                                arith::ConstantIndexOp::create(nb, l, rows));
          auto added = scf::IfOp::create(
              nb, l, inBlock,
              [&](OpBuilder &tb, Location tl) {
                SmallVector<OpFoldResult> at = {row, tb.getIndexAttr(0)};
                SmallVector<OpFoldResult> size = {tb.getIndexAttr(1), tb.getIndexAttr(hidden)};
                SmallVector<OpFoldResult> unit = {tb.getIndexAttr(1), tb.getIndexAttr(1)};
                SmallVector<OpFoldResult> from = {token, tb.getIndexAttr(0)};
                Value target =
                    tensor::ExtractSliceOp::create(tb, tl, rowType, acc[0], at, size, unit);
                Value source =
                    tensor::ExtractSliceOp::create(tb, tl, rowType, grad, from, size, unit);
                AffineMap id = tb.getMultiDimIdentityMap(2);
                auto sum = linalg::GenericOp::create(
                    tb, tl, TypeRange{rowType}, ValueRange{source}, ValueRange{target},
                    SmallVector<AffineMap>{id, id},
                    SmallVector<IteratorType>(2, IteratorType::parallel),
                    [](OpBuilder &gb, Location gl, ValueRange a) {
                      linalg::YieldOp::create(
                          gb, gl, arith::AddFOp::create(gb, gl, a[1], a[0]).getResult());
                    });
                Value updated =
                    tensor::InsertSliceOp::create(tb, tl, sum.getResult(0), acc[0], at, size, unit);
                scf::YieldOp::create(tb, tl, updated);
              },
              [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, acc[0]); });
          scf::YieldOp::create(nb, l, added.getResult(0));
        });
    return loop.getResult(0);
  }
};

struct CountTokensLowering : TfmPattern<tfm::CountTokensOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CountTokensOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType labels = tensorType(op.getLabels());
    unsigned rank = labels.getRank();
    auto scalar = tensorType(op.getResult());
    Type t = scalar.getElementType();
    Type labelType = labels.getElementType();
    int64_t ignore = op.getIgnoreIndex();
    return generic(
        b, loc, scalar, {op.getLabels()},
        {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, {}, b.getContext())},
        SmallVector<IteratorType>(rank, IteratorType::reduction),
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value counted = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ne, a[0],
              arith::ConstantOp::create(nb, l, nb.getIntegerAttr(labelType, ignore)));
          Value add = arith::SelectOp::create(nb, l, counted, floatConst(nb, l, t, 1.0),
                                              floatConst(nb, l, t, 0.0));
          return arith::AddFOp::create(nb, l, a[1], add);
        },
        filled(b, loc, {}, t, 0.0));
  }
};

/// (softmax(logits) - onehot(label)) * grad / count per counted token, in a
/// vocabulary block with the whole vocabulary's max and exp sum where the
/// op has them; padding columns and ignored tokens get 0.
struct CrossEntropyGradLowering : TfmPattern<tfm::CrossEntropyGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value logits = op.getLogits();
    RankedTensorType type = tensorType(logits);
    unsigned rank = type.getRank();
    Type t = type.getElementType();
    Value from = op.getVocabFrom();
    int64_t vocab = op.getVocab() ? static_cast<int64_t>(*op.getVocab()) : type.getShape().back();
    Value max = op.getMax(), sum;
    if (max) {
      // The exp sums are the first entries of the summed parts.
      SmallVector<int64_t> tokens(type.getShape().drop_back());
      SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
          strides(rank, b.getIndexAttr(1));
      for (int64_t d : tokens)
        sizes.push_back(b.getIndexAttr(d));
      sizes.push_back(b.getIndexAttr(1));
      auto slice = tensor::ExtractSliceOp::create(b, loc, RankedTensorType::get(tokens, t),
                                                  op.getParts(), offsets, sizes, strides);
      sum = slice.getResult();
    } else {
      std::tie(max, sum) = rowMaxAndExpSum(b, loc, logits);
    }
    AffineMap id = b.getMultiDimIdentityMap(rank), row = rowMap(b, rank);
    AffineMap scalar = AffineMap::get(rank, 0, {}, b.getContext());
    Type labelType = tensorType(op.getLabels()).getElementType();
    int64_t ignore = op.getIgnoreIndex();
    return elementwise(
        b, loc, type, {logits, max, sum, op.getLabels(), op.getGrad(), op.getCount()},
        {id, row, row, row, scalar, scalar}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value p = arith::DivFOp::create(
              nb, l, math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1])), a[2]);
          Value column = linalg::IndexOp::create(nb, l, rank - 1);
          if (from)
            column = arith::AddIOp::create(nb, l, column, from);
          Value label = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[3]);
          Value isLabel = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, column, label);
          Value d = arith::SubFOp::create(nb, l, p,
                                          arith::SelectOp::create(nb, l, isLabel,
                                                                  floatConst(nb, l, t, 1.0),
                                                                  floatConst(nb, l, t, 0.0)));
          d = arith::MulFOp::create(nb, l, d, arith::DivFOp::create(nb, l, a[4], a[5]));
          Value counted = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ne, a[3],
              arith::ConstantOp::create(nb, l, nb.getIntegerAttr(labelType, ignore)));
          Value inVocab = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, column,
                                                arith::ConstantIndexOp::create(nb, l, vocab));
          Value keep = arith::AndIOp::create(nb, l, counted, inVocab);
          return arith::SelectOp::create(nb, l, keep, d, floatConst(nb, l, t, 0.0));
        });
  }
};

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

struct SqrtLowering : UnaryLowering<tfm::SqrtOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::SqrtOp, OpBuilder &b, Location loc, Value x) const override {
    return math::SqrtOp::create(b, loc, x);
  }
};

struct SumSquaresLowering : TfmPattern<tfm::SumSquaresOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::SumSquaresOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType in = tensorType(op.getInput());
    RankedTensorType out = tensorType(op.getResult());
    unsigned rank = in.getRank();
    return generic(
        b, loc, out, {op.getInput()},
        {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, {}, b.getContext())},
        SmallVector<IteratorType>(rank, IteratorType::reduction),
        [](OpBuilder &nb, Location l, ValueRange a) {
          return addF(nb, l, a[1], arith::MulFOp::create(nb, l, a[0], a[0]));
        },
        filled(b, loc, {}, out.getElementType(), 0.0));
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
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect, math::MathDialect,
                           scf::SCFDialect, tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void pmlir::populateTfmToLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<BinaryLowering<tfm::AddOp, arith::AddFOp>, BinaryLowering<tfm::SubOp, arith::SubFOp>,
               BinaryLowering<tfm::MulOp, arith::MulFOp>, ScaleLowering, GeluLowering, SiluLowering,
               SoftmaxLowering, LayerNormLowering, RmsNormLowering, MatmulLowering,
               EmbeddingLowering, ArangeLowering, SplitHeadsLowering, MergeHeadsLowering,
               RopeLowering, AttentionLowering, AttentionBlockLowering, AttentionMergeLowering,
               AttentionBlockGradLowering, SplitLowering, RowMaxLowering, CrossEntropyPartsLowering,
               CrossEntropyCombineLowering, CrossEntropyLowering, InlineLayer, FillLowering,
               WeightGradLowering, SumLeadingLowering, ConcatLowering, GeluGradLowering,
               SiluGradLowering, SoftmaxGradLowering, LayerNormGradLowering, RmsNormGradLowering,
               LayerNormWeightGradLowering, RmsNormWeightGradLowering, EmbeddingGradLowering,
               AttentionGradLowering, CountTokensLowering, CrossEntropyGradLowering, SqrtLowering,
               SumSquaresLowering, MicrobatchLowering, AdamWLowering>(ctx);
}
