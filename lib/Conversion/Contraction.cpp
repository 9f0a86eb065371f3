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

/// `v` with an arith.extf (or an arith.truncf, `truncated`) looked through.
Value through(Value v, bool truncated = false) {
  if (!truncated)
    if (auto ext = v.getDefiningOp<arith::ExtFOp>())
      return ext.getIn();
  if (truncated)
    if (auto trunc = v.getDefiningOp<arith::TruncFOp>())
      return trunc.getIn();
  return v;
}

} // namespace

std::string pmlir::GemmShape::types() const {
  if (inputType.isF32() && resultType.isF32())
    return "f32";
  if (inputType.isBF16() && resultType.isBF16())
    return "bf16";
  if (inputType.isBF16() && resultType.isF32())
    return "bf16f32";
  return "";
}

std::string pmlir::GemmShape::kernel(rt::abi::GemmFamily family, llvm::StringRef types) const {
  if (!rt::abi::hasGemmKernel(family, types, outRank, rhsRank))
    return "";
  return rt::abi::gemmKernelName(family, types, outRank, rhsRank, lhsTransposed, rhsTransposed);
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
  shape.resultType = out.getElementType();
  shape.inputType = cast<ShapedType>(op.getDpsInputs()[0].getType()).getElementType();
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
  if (cast<ShapedType>(op.getDpsInputs()[1].getType()).getElementType() != shape.inputType)
    return std::nullopt;
  // out += lhs * rhs, in either order of the factors, each value possibly
  // extended to the type of the arithmetic and the sum truncated to the
  // result's.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = through(yield.getValues()[0], /*truncated=*/true).getDefiningOp<arith::AddFOp>();
  if (!add)
    return std::nullopt;
  Value acc = body.getArgument(2);
  Value lhs = through(add.getLhs()), rhs = through(add.getRhs());
  Value product = lhs == acc ? add.getRhs() : rhs == acc ? add.getLhs() : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul)
    return std::nullopt;
  Value x = through(mul.getLhs()), y = through(mul.getRhs());
  if (!((x == body.getArgument(0) && y == body.getArgument(1)) ||
        (x == body.getArgument(1) && y == body.getArgument(0))))
    return std::nullopt;
  // Nothing else: the body's ops are those matched (the multiply, the add,
  // the yield, and the extensions and truncation seen through).
  size_t matched = 3 + (x != mul.getLhs()) + (y != mul.getRhs()) +
                   (add.getLhs() != lhs || add.getRhs() != rhs) +
                   (yield.getValues()[0] != add.getResult());
  if (body.getOperations().size() != matched)
    return std::nullopt;
  return shape;
}
