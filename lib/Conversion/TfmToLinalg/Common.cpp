//===- Common.cpp - What the tfm-to-linalg lowerings share -----------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;

namespace pmlir::tfm_to_linalg {

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

Value generic(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
              ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators, BodyBuilder body,
              Value init) {
  if (!init)
    init = emptyLike(b, loc, resultType.getShape(), resultType.getElementType());
  auto op =
      linalg::GenericOp::create(b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps,
                                iterators, [&](OpBuilder &nb, Location nloc, ValueRange args) {
                                  linalg::YieldOp::create(nb, nloc, body(nb, nloc, args));
                                });
  return op.getResult(0);
}

Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
                  ArrayRef<AffineMap> inputMaps, BodyBuilder body) {
  unsigned rank = resultType.getRank();
  SmallVector<AffineMap> maps(inputMaps);
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<IteratorType> iterators(rank, IteratorType::parallel);
  return generic(b, loc, resultType, inputs, maps, iterators, body);
}

AffineMap trailingMap(OpBuilder &b, unsigned rank, unsigned n) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = rank - n; i < rank; ++i)
    exprs.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

AffineMap rowMap(OpBuilder &b, unsigned rank) {
  SmallVector<AffineExpr> exprs;
  for (unsigned i = 0; i + 1 < rank; ++i)
    exprs.push_back(b.getAffineDimExpr(i));
  return AffineMap::get(rank, 0, exprs, b.getContext());
}

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

Value addF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::AddFOp::create(
      b, loc, x, y, arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::reassoc));
}

Value maxF(OpBuilder &b, Location loc, Value x, Value y) {
  return arith::MaximumFOp::create(b, loc, x, y);
}

LogicalResult staticOperands(Operation *op, PatternRewriter &rewriter) {
  for (Type t : op->getOperandTypes())
    if (auto shaped = dyn_cast<ShapedType>(t); shaped && !shaped.hasStaticShape())
      return rewriter.notifyMatchFailure(op, "dynamic shapes are not lowered");
  return success();
}

Value maskPadding(OpBuilder &b, Location l, Value v, Value from, int64_t vocab, unsigned rank,
                  double fill) {
  Value column = arith::AddIOp::create(b, l, linalg::IndexOp::create(b, l, rank - 1), from);
  Value inside = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, column,
                                       arith::ConstantIndexOp::create(b, l, vocab));
  return arith::SelectOp::create(b, l, inside, v, floatConst(b, l, v.getType(), fill));
}

Value rowMax(OpBuilder &b, Location loc, Value x, Value from, int64_t vocab) {
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

Value softmaxGradRows(OpBuilder &b, Location loc, Value y, Value dy, double factor) {
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

} // namespace pmlir::tfm_to_linalg
