//===- Contraction.cpp - GEMMs among the contractions of tfm's lowering ---===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Contraction.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;

namespace {

/// Whether `map` gives the dimensions `dims` (loop indices), in order.
bool gives(AffineMap map, ArrayRef<unsigned> dims) {
  if (map.getNumResults() != dims.size())
    return false;
  for (auto [expr, d] : llvm::zip(map.getResults(), dims)) {
    auto dim = dyn_cast<AffineDimExpr>(expr);
    if (!dim || dim.getPosition() != d)
      return false;
  }
  return true;
}

} // namespace

std::string pmlir::GemmShape::suffix() const {
  return "r" + std::to_string(outRank) + std::to_string(rhsRank) + "_t" +
         (lhsTransposed ? "1" : "0") + (rhsTransposed ? "1" : "0");
}

std::optional<pmlir::GemmShape> pmlir::matchGemm(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || op.getLibraryCall())
    return std::nullopt;
  auto out = dyn_cast<ShapedType>(op.getDpsInits()[0].getType());
  if (!out || out.getRank() < 2)
    return std::nullopt;
  unsigned loops = op.getNumLoops(), batch = loops - 3;
  if (loops != out.getRank() + 1)
    return std::nullopt;
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned i = 0; i < loops; ++i)
    if ((iterators[i] == utils::IteratorType::reduction) != (i == loops - 1))
      return std::nullopt;
  SmallVector<unsigned> batchDims;
  for (unsigned i = 0; i < batch; ++i)
    batchDims.push_back(i);
  auto with = [&](SmallVector<unsigned> dims, bool withBatch) {
    SmallVector<unsigned> all = withBatch ? batchDims : SmallVector<unsigned>();
    all.append(dims);
    return all;
  };
  unsigned m = batch, n = batch + 1, k = batch + 2;
  SmallVector<AffineMap> maps = op.getIndexingMapsArray();
  if (!gives(maps[2], with({m, n}, true)))
    return std::nullopt;
  GemmShape shape;
  shape.elementType = out.getElementType();
  shape.outRank = out.getRank();
  shape.rhsRank = maps[1].getNumResults();
  if (gives(maps[0], with({m, k}, true)))
    shape.lhsTransposed = false;
  else if (gives(maps[0], with({k, m}, true)))
    shape.lhsTransposed = true;
  else
    return std::nullopt;
  bool rhsBatched = shape.rhsRank > 2;
  if (gives(maps[1], with({k, n}, rhsBatched)))
    shape.rhsTransposed = false;
  else if (gives(maps[1], with({n, k}, rhsBatched)))
    shape.rhsTransposed = true;
  else
    return std::nullopt;
  for (Value input : op.getDpsInputs())
    if (cast<ShapedType>(input.getType()).getElementType() != shape.elementType)
      return std::nullopt;
  // out += lhs * rhs, in either order of the factors.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || body.getOperations().size() != 3)
    return std::nullopt;
  Value acc = body.getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getRhs() == acc ? add.getLhs() : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul || !((mul.getLhs() == body.getArgument(0) && mul.getRhs() == body.getArgument(1)) ||
                (mul.getLhs() == body.getArgument(1) && mul.getRhs() == body.getArgument(0))))
    return std::nullopt;
  return shape;
}
