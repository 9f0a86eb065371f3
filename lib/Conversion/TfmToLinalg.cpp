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

template <typename Op> struct TfmPattern : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const final {
    for (Type t : op->getOperandTypes())
      if (auto shaped = dyn_cast<ShapedType>(t); shaped && !shaped.hasStaticShape())
        return rewriter.notifyMatchFailure(op, "dynamic shapes are not lowered");
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

struct ArangeLowering : TfmPattern<tfm::ArangeOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::ArangeOp op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    Location loc = op.getLoc();
    Value offset = op.getOffset();
    return generic(b, loc, type, {}, {b.getMultiDimIdentityMap(1)}, {IteratorType::parallel},
                   [&](OpBuilder &nb, Location l, ValueRange) -> Value {
                     Value i = linalg::IndexOp::create(nb, l, 0);
                     if (offset)
                       i = arith::AddIOp::create(nb, l, i, offset);
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
          return arith::AddFOp::create(nb, l, arith::MulFOp::create(nb, l, a[0], cos),
                                       arith::MulFOp::create(nb, l, rotated, sin));
        });
  }
};

/// Attention as two batched GEMMs around a masked softmax. The G query
/// heads that share a kv head are rows of one GEMM: q [B, A, S, D] is viewed
/// as [B, K, G*S, D] (a reshape, no copy), so grouped-query attention costs
/// no repeated keys or values.
struct AttentionLowering : TfmPattern<tfm::AttentionOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::AttentionOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType outType = tensorType(op.getResult());
    ArrayRef<int64_t> q = tensorType(op.getQuery()).getShape();
    ArrayRef<int64_t> k = tensorType(op.getKey()).getShape();
    Type t = outType.getElementType();
    int64_t heads = q[1], kvHeads = k[1], group = heads / kvHeads;
    int64_t seq = q[2], offset = k[2] - q[2];

    auto grouped = [&](Value x, int64_t width) -> Value {
      auto split = RankedTensorType::get({q[0], kvHeads, group, seq, width}, t);
      auto rows = RankedTensorType::get({q[0], kvHeads, group * seq, width}, t);
      Value e = tensor::ExpandShapeOp::create(
          b, loc, split, x, ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
      return tensor::CollapseShapeOp::create(b, loc, rows, e,
                                             ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
    };
    // scores[b, kv, g*S + s, t] = q[b, kv*G + g, s] . k[b, kv, t]
    Value scores = matmul(b, loc, grouped(op.getQuery(), q[3]), op.getKey(),
                          /*transposeLhs=*/false, /*transposeRhs=*/true);
    RankedTensorType scoresType = tensorType(scores);
    double scale = op.getScale().convertToDouble();
    bool causal = op.getCausal();
    Value queryOffset = op.getQueryOffset();
    scores = elementwise(
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
          Value masked = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ugt, key, last);
          return arith::SelectOp::create(nb, l, masked, floatConst(nb, l, t, -INFINITY), v);
        });
    Value probs = softmaxRows(b, loc, scores);
    Value out = matmul(b, loc, probs, op.getValue(), false, false);
    // [B, K, G*S, Dv] -> [B, A, S, Dv]
    int64_t dv = outType.getShape()[3];
    auto split = RankedTensorType::get({q[0], kvHeads, group, seq, dv}, t);
    Value e = tensor::ExpandShapeOp::create(b, loc, split, out,
                                            ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}, {4}});
    return tensor::CollapseShapeOp::create(b, loc, outType, e,
                                           ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3}, {4}});
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
                           tensor::TensorDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(getOperation(), target, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace

void pmlir::populateTfmToLinalgPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns
      .add<BinaryLowering<tfm::AddOp, arith::AddFOp>, BinaryLowering<tfm::SubOp, arith::SubFOp>,
           BinaryLowering<tfm::MulOp, arith::MulFOp>, ScaleLowering, GeluLowering, SiluLowering,
           SoftmaxLowering, LayerNormLowering, RmsNormLowering, MatmulLowering, EmbeddingLowering,
           ArangeLowering, SplitHeadsLowering, MergeHeadsLowering, RopeLowering, AttentionLowering,
           SplitLowering, RowMaxLowering, CrossEntropyPartsLowering, CrossEntropyCombineLowering,
           CrossEntropyLowering, InlineLayer>(ctx);
}
