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
    getOperation()->walk([&](linalg::GenericOp op) {
      std::optional<pmlir::GemmShape> gemm = pmlir::matchGemm(op);
      if (!gemm)
        return;
      // An f32 GEMM computes in the mode `precision` asks (f32 but for
      // tf32); bf16 operands are named by their types.
      std::string types = gemm->types();
      if (types == "f32" && precision == pmlir::Precision::TF32)
        types = "tf32";
      // None in the runtime's GEMM family (RuntimeAbi.def): a kernel loop.
      std::string kernel = gemm->kernel(pmlir::rt::abi::GemmFamily::Gpu, types);
      if (kernel.empty())
        return;
      LLVM_DEBUG(llvm::dbgs() << kernel << " for the contraction at " << op.getLoc() << "\n");
      op.setLibraryCallAttr(StringAttr::get(op.getContext(), kernel));
    });
  }
};

} // namespace
