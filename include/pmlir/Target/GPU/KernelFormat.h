//===- KernelFormat.h - What a GPU program's kernels are embedded as -*- C++ -*-===//
//
// Part of pmlir.
//
// One enum for the form the GPU pipeline embeds its kernels in, taken by
// pmlir-gpu-pipeline's `format` and pmlir-compile-pipeline's `gpu-format`,
// with its names in one place.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TARGET_GPU_KERNELFORMAT_H
#define PMLIR_TARGET_GPU_KERNELFORMAT_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"

namespace pmlir {

/// What the kernels of a GPU program are embedded as: a cubin (ptxas at
/// compile time), PTX (compiled by the driver when loaded), or NVVM left
/// unserialized (no CUDA toolkit needed; nothing to run, what --predict
/// reads).
enum class GpuKernelFormat { Bin, Isa, Nvvm };

/// The name options use: "bin", "isa", "nvvm" (for Bin and Isa, also the
/// compilation target of upstream's gpu-module-to-binary).
inline llvm::StringRef gpuKernelFormatName(GpuKernelFormat format) {
  switch (format) {
  case GpuKernelFormat::Bin:
    return "bin";
  case GpuKernelFormat::Isa:
    return "isa";
  case GpuKernelFormat::Nvvm:
    return "nvvm";
  }
  llvm_unreachable("a kernel format without a name");
}

/// The alternatives of a kernel-format option, each with its name.
inline llvm::cl::ValuesClass gpuKernelFormatValues() {
  return llvm::cl::values(
      clEnumValN(GpuKernelFormat::Bin, "bin", "a cubin, by ptxas (the default)"),
      clEnumValN(GpuKernelFormat::Isa, "isa", "PTX, compiled by the driver when loaded"),
      clEnumValN(GpuKernelFormat::Nvvm, "nvvm",
                 "not serialized: the gpu.modules stay in the NVVM dialect (no CUDA toolkit)"));
}

} // namespace pmlir

#endif // PMLIR_TARGET_GPU_KERNELFORMAT_H
