//===- Calibration.h - What this host's CPU kernels take --------*- C++ -*-===//
//
// Part of pmlir.
//
// The measurements behind pmlir-run --predict's `cpu` device profile that
// need no compiler: a GEMM kernel of the runtime (CpuKernels.cpp) timed on
// operands of the shapes a program calls it with, on the threads set for
// the run; a copy's rate. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_RUNTIME_CALIBRATION_H
#define PMLIR_RUNTIME_CALIBRATION_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::rt {

/// The time of a measurement on a quiet host, from repeated samples: the
/// second fastest (a shared host's slow moments only make samples slower;
/// the fastest alone may be an outlier).
double quietSeconds(std::vector<double> samples);

/// A call of a CPU GEMM kernel ("pmlir_matmul_f32_r32_t00") on operands
/// of these shapes.
struct GemmCall {
  std::string kernel;
  std::vector<int64_t> lhs, rhs, out;
};

/// The seconds of one call of each of `calls` on contiguous operands, on
/// the threads set for the run: after a warm-up, each is called once a
/// pass over all of them, `passes` times, and its quiet time taken (a slow
/// moment of the host costs one pass, not one kernel's every call).
/// nullopt for a kernel the runtime does not have, shapes that do not fit
/// its ranks, or operands of more than a quarter of the host's memory.
std::vector<std::optional<double>> timeGemmKernels(const std::vector<GemmCall> &calls,
                                                   int passes = 7);

/// What the measurements hold for: this host's CPU model, its vector
/// level and the GEMM kernels OpenBLAS runs on it.
std::string calibrationHost();

/// The FLOP rate of the f32 GEMM kernel on square matrices of `size`, on
/// the threads set for the run: the profile's peak.
double gemmPeakFlopsPerSecond(int64_t size = 1024);

/// The bytes a memcpy of a buffer far larger than the caches reads a
/// second (memref.copy's rate).
double copyBytesPerSecond();

} // namespace pmlir::rt

#endif // PMLIR_RUNTIME_CALIBRATION_H
