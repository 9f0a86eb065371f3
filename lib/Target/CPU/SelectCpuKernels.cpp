//===- SelectCpuKernels.cpp - f32 matmuls to the CPU's BLAS kernels --------===//
//
// Part of pmlir.
//
// The conversion from tfm builds target-neutral contractions; which of them
// a CPU runs through BLAS (lib/Runtime/CpuKernels.cpp) is this target's
// choice: the f32 GEMMs (pmlir/Conversion/Contraction.h).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "pmlir/Conversion/Contraction.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-select-cpu-kernels"

namespace pmlir {
#define GEN_PASS_DEF_SELECTCPUKERNELS
#include "pmlir/Target/CPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The BLAS kernel of a contraction generic, or "" where the runtime's
/// GEMM family (RuntimeAbi.def) has none for its types and ranks (it stays
/// a loop nest): pmlir_matmul_<types>_r<out rank><rhs rank>_t<A><B>.
std::string kernelOf(linalg::GenericOp op) {
  std::optional<pmlir::GemmShape> gemm = pmlir::matchGemm(op);
  return gemm ? gemm->kernel(pmlir::rt::abi::GemmFamily::Cpu, gemm->types()) : "";
}

struct SelectCpuKernelsPass : public pmlir::impl::SelectCpuKernelsBase<SelectCpuKernelsPass> {
  using SelectCpuKernelsBase::SelectCpuKernelsBase;

  void runOnOperation() override {
    if (precision == pmlir::Precision::TF32) {
      getOperation()->emitError() << "pmlir-select-cpu-kernels: precision '"
                                  << pmlir::precisionName(precision)
                                  << "' is neither f32 nor bf16 (a CPU has no TF32 arithmetic)";
      return signalPassFailure();
    }
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
