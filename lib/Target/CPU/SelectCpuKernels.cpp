//===- SelectCpuKernels.cpp - f32 matmuls to the CPU's BLAS kernels --------===//
//
// Part of pmlir.
//
// The conversion from tfm builds target-neutral contractions; which of them
// a CPU runs through BLAS (lib/Runtime/CpuKernels.cpp) is this target's
// choice, made here from the op's structure: the loops batch..., m, n, k,
// the operands' maps and a multiply-add body.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-select-cpu-kernels"

namespace pmlir {
#define GEN_PASS_DEF_SELECTCPUKERNELS
#include "pmlir/Target/CPU/Passes.h.inc"
} // namespace pmlir

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

/// The BLAS kernel of a contraction generic, or "" where it is none:
/// pmlir_matmul_f32_r<lhs rank><rhs rank>_t<lhs transposed><rhs transposed>.
std::string kernelOf(linalg::GenericOp op) {
  if (op.getNumDpsInputs() != 2 || op.getNumDpsInits() != 1 || op.getLibraryCall())
    return "";
  auto out = dyn_cast<RankedTensorType>(op.getDpsInits()[0].getType());
  if (!out || !out.getElementType().isF32() || out.getRank() < 2)
    return "";
  unsigned loops = op.getNumLoops(), batch = loops - 3;
  if (loops != out.getRank() + 1)
    return "";
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  for (unsigned i = 0; i < loops; ++i)
    if ((iterators[i] == utils::IteratorType::reduction) != (i == loops - 1))
      return "";
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
    return "";
  bool lhsT;
  if (gives(maps[0], with({m, k}, true)))
    lhsT = false;
  else if (gives(maps[0], with({k, m}, true)))
    lhsT = true;
  else
    return "";
  bool rhsT, rhsBatched = maps[1].getNumResults() > 2;
  if (gives(maps[1], with({k, n}, rhsBatched)))
    rhsT = false;
  else if (gives(maps[1], with({n, k}, rhsBatched)))
    rhsT = true;
  else
    return "";
  // out += lhs * rhs, in either order of the factors.
  Block &body = op.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto add = yield.getValues()[0].getDefiningOp<arith::AddFOp>();
  if (!add || body.getOperations().size() != 3)
    return "";
  Value acc = body.getArgument(2);
  Value product = add.getLhs() == acc ? add.getRhs() : add.getRhs() == acc ? add.getLhs() : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : arith::MulFOp();
  if (!mul || !((mul.getLhs() == body.getArgument(0) && mul.getRhs() == body.getArgument(1)) ||
                (mul.getLhs() == body.getArgument(1) && mul.getRhs() == body.getArgument(0))))
    return "";
  return "pmlir_matmul_f32_r" + std::to_string(out.getRank()) +
         std::to_string(maps[1].getNumResults()) + "_t" + (lhsT ? "1" : "0") + (rhsT ? "1" : "0");
}

struct SelectCpuKernelsPass : public pmlir::impl::SelectCpuKernelsBase<SelectCpuKernelsPass> {
  void runOnOperation() override {
    getOperation()->walk([&](linalg::GenericOp op) {
      std::string kernel = kernelOf(op);
      if (kernel.empty())
        return;
      LLVM_DEBUG(llvm::dbgs() << kernel << " for the contraction at " << op.getLoc() << "\n");
      op.setLibraryCallAttr(StringAttr::get(op.getContext(), kernel));
    });
  }
};

} // namespace
