//===- Bf16Rounding.cpp - The generic that rounds a tensor to bf16 --------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Bf16Rounding.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;

RankedTensorType pmlir::f32Tensor(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.getElementType().isF32() ? tensor : RankedTensorType();
}

Value pmlir::buildBf16Rounding(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, v);
  Value empty = tensor::EmptyOp::create(b, loc, sizes, b.getBF16Type());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  auto rounding = linalg::GenericOp::create(
      b, loc, TypeRange{empty.getType()}, ValueRange{v}, ValueRange{empty},
      SmallVector<AffineMap>{id, id},
      SmallVector<utils::IteratorType>(type.getRank(), utils::IteratorType::parallel),
      [](OpBuilder &nb, Location l, ValueRange args) {
        linalg::YieldOp::create(
            nb, l, ValueRange{arith::TruncFOp::create(nb, l, nb.getBF16Type(), args[0])});
      });
  return rounding.getResult(0);
}

bool pmlir::isBf16Rounding(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 1 || op.getNumDpsInits() != 1 || op.getLibraryCall())
    return false;
  auto out = dyn_cast<RankedTensorType>(op.getResult(0).getType());
  if (!out || !out.getElementType().isBF16() || !f32Tensor(op.getDpsInputs()[0].getType()) ||
      !op.getDpsInits()[0].getDefiningOp<tensor::EmptyOp>())
    return false;
  if (!llvm::all_of(op.getIndexingMapsArray(), [](AffineMap m) { return m.isIdentity(); }) ||
      !llvm::all_of(op.getIteratorTypesArray(),
                    [](utils::IteratorType t) { return t == utils::IteratorType::parallel; }))
    return false;
  Block *body = op.getBody();
  auto trunc = dyn_cast<arith::TruncFOp>(&body->front());
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  return trunc && trunc->getNextNode() == yield && trunc.getIn() == body->getArgument(0) &&
         yield->getNumOperands() == 1 && yield->getOperand(0) == trunc.getResult();
}
