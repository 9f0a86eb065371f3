//===- Bf16Rounding.h - The generic that rounds a tensor to bf16 -*- C++ -*-===//
//
// Part of pmlir.
//
// pmlir-store-bf16 rounds a GEMM's f32 operand (a weight, a reduction's
// result) by one elementwise generic, and pmlir-round-arguments-once moves
// those of the entry's weights to the caller: one builder and one matcher
// of that generic, so that the second finds what the first makes.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_BF16ROUNDING_H
#define PMLIR_CONVERSION_BF16ROUNDING_H

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace pmlir {

/// `type` where it is a ranked tensor of f32, else null.
mlir::RankedTensorType f32Tensor(mlir::Type type);

/// A rounding of the f32 tensor `v` to bf16 (to nearest, ties to even),
/// built at `b`'s insertion point: an elementwise generic over identity
/// maps into a tensor.empty, its body one arith.truncf.
mlir::Value buildBf16Rounding(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v);

/// Whether `op` is such a rounding and does nothing else.
bool isBf16Rounding(mlir::linalg::GenericOp op);

} // namespace pmlir

#endif // PMLIR_CONVERSION_BF16ROUNDING_H
