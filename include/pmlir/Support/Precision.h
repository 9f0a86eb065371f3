//===- Precision.h - The arithmetic of a program ------------------*- C++ -*-===//
//
// Part of pmlir.
//
// One enum for the precision every layer takes (pmlir-run's --precision,
// pmlir-compile-pipeline, the CPU and GPU pipelines, GEMM selection), with
// its names and their descriptions in one place: a new precision is added
// here and handled where it computes.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_PRECISION_H
#define PMLIR_SUPPORT_PRECISION_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"

#include <optional>

namespace pmlir {

/// The arithmetic of a program: f32; tf32 (on a GPU: f32 GEMMs on tensor
/// cores, fp32 sums); bf16 (tensors between kernels and GEMM operands stored
/// in bf16; arithmetic, GEMM sums and statistics in f32: pmlir-store-bf16).
enum class Precision { F32, TF32, BF16 };

/// The name options and messages use: "f32", "tf32", "bf16".
inline llvm::StringRef precisionName(Precision precision) {
  switch (precision) {
  case Precision::F32:
    return "f32";
  case Precision::TF32:
    return "tf32";
  case Precision::BF16:
    return "bf16";
  }
  llvm_unreachable("a precision without a name");
}

/// The precision named `name` (precisionName's), or nullopt.
inline std::optional<Precision> parsePrecision(llvm::StringRef name) {
  for (Precision p : {Precision::F32, Precision::TF32, Precision::BF16})
    if (precisionName(p) == name)
      return p;
  return std::nullopt;
}

/// The alternatives of a `precision` option, each with its name.
inline llvm::cl::ValuesClass precisionValues() {
  return llvm::cl::values(
      clEnumValN(Precision::F32, "f32", "(the default)"),
      clEnumValN(Precision::TF32, "tf32", "a GPU's f32 GEMMs on tensor cores, fp32 sums"),
      clEnumValN(Precision::BF16, "bf16",
                 "tensors between kernels and GEMM operands stored in bf16; arithmetic, GEMM "
                 "sums and statistics in f32"));
}

/// The help of the pipelines' `round-arguments-once` option, which goes
/// with their `precision`.
inline llvm::cl::desc roundArgumentsOnceHelp() {
  return llvm::cl::desc("with precision=bf16: the entry takes the bf16 forms of its read-only "
                        "arguments, rounded once by its caller, and shares one rounding of each "
                        "argument it updates (pmlir-round-arguments-once), instead of rounding "
                        "them in each function that reads them");
}

} // namespace pmlir

#endif // PMLIR_SUPPORT_PRECISION_H
