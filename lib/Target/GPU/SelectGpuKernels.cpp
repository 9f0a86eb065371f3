//===- SelectGpuKernels.cpp - f32 matmuls to cuBLASLt GEMMs ---------------===//
//
// Part of pmlir.
//
// The conversion from tfm builds target-neutral contractions; on a GPU the
// GEMMs among them (pmlir/Conversion/Contraction.h) run as cuBLASLt calls
// on the rank's stream, and everything else becomes generated kernels.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "pmlir/Conversion/Contraction.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-select-gpu-kernels"

namespace pmlir {
#define GEN_PASS_DEF_SELECTGPUKERNELS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct SelectGpuKernelsPass : public pmlir::impl::SelectGpuKernelsBase<SelectGpuKernelsPass> {
  using SelectGpuKernelsBase::SelectGpuKernelsBase;

  void runOnOperation() override {
    if (precision != "f32" && precision != "tf32") {
      getOperation()->emitError() << "pmlir-select-gpu-kernels: precision '" << precision
                                  << "' is neither f32 nor tf32";
      return signalPassFailure();
    }
    getOperation()->walk([&](linalg::GenericOp op) {
      std::optional<pmlir::GemmShape> gemm = pmlir::matchGemm(op);
      if (!gemm || !gemm->elementType.isF32())
        return;
      std::string kernel = "pmlir_gpu_matmul_" + precision + "_" + gemm->suffix();
      LLVM_DEBUG(llvm::dbgs() << kernel << " for the contraction at " << op.getLoc() << "\n");
      op.setLibraryCallAttr(StringAttr::get(op.getContext(), kernel));
    });
  }
};

} // namespace
