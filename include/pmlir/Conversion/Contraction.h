//===- Contraction.h - GEMMs among the contractions of tfm's lowering -*- C++ -*-===//
//
// Part of pmlir.
//
// pmlir-convert-tfm-to-linalg builds matmuls and attention's products as
// target-neutral contraction generics. Which of them run as a library GEMM
// (BLAS on CPUs, cuBLASLt on GPUs) is each target's choice; the shape of a
// GEMM is one question, answered here for every target.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_CONTRACTION_H
#define PMLIR_CONVERSION_CONTRACTION_H

#include "pmlir/Runtime/RuntimeAbi.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

#include <optional>
#include <string>

namespace pmlir {

/// A generic computing out(batch..., m, n) += lhs * rhs over k: the loops
/// batch..., m, n, k; lhs indexed (batch..., m, k) or transposed; rhs
/// (k, n) or (n, k), with the batch or shared by it; a multiply-add body,
/// in one element type or (pmlir-store-bf16's GEMMs) on bf16 operands
/// extended to f32, the sum rounded to bf16 or kept in f32.
struct GemmShape {
  /// The element type of both operands, and of the result.
  mlir::Type inputType, resultType;
  unsigned outRank, rhsRank;
  bool lhsTransposed, rhsTransposed;

  /// The kernel of the runtime's GEMM `family` (RuntimeAbi.def) on
  /// operands and result of `types` ("f32", "tf32", "bf16", "bf16f32") for
  /// this shape, "pmlir_matmul_f32_r32_t00"; "" where the family has none
  /// (types or ranks it lacks): the contraction then stays a loop nest.
  std::string kernel(rt::abi::GemmFamily family, llvm::StringRef types) const;

  /// The operand and result types as a kernel names them: "f32" (f32
  /// operands and result), "bf16" (bf16 operands and result, f32 sums),
  /// "bf16f32" (bf16 operands, f32 result), or "" for the others.
  std::string types() const;
};

/// The GEMM `op` computes, or nullopt (another generic, or one that names a
/// library call already).
std::optional<GemmShape> matchGemm(mlir::linalg::GenericOp op);

} // namespace pmlir

#endif // PMLIR_CONVERSION_CONTRACTION_H
