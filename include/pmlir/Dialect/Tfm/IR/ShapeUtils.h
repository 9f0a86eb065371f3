//===- ShapeUtils.h - Shape rules shared by tfm verifiers ---------*- C++ -*-===//
//
// Part of pmlir.
//
// Shape arithmetic of the tfm ops, kept apart from the ops so that verifiers,
// builders and later passes (sharding rules, lowering) agree on one
// definition, and so that it is unit-tested on its own.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_SHAPEUTILS_H
#define PMLIR_DIALECT_TFM_IR_SHAPEUTILS_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace pmlir::tfm {

using Shape = llvm::SmallVector<int64_t, 4>;

/// Prints a shape as "[2, 8, ?]" ('?' for a dynamic dimension).
std::string formatShape(llvm::ArrayRef<int64_t> shape);

/// Two dimensions agree when they are equal or either is dynamic.
bool dimsAgree(int64_t a, int64_t b);
bool shapesAgree(llvm::ArrayRef<int64_t> a, llvm::ArrayRef<int64_t> b);

/// Whether `suffix` equals the trailing dimensions of `shape` (the broadcast
/// rule of tfm.add/sub/mul: a bias [H] or a table [S, H] against [B, S, H]).
bool isTrailingSuffix(llvm::ArrayRef<int64_t> shape,
                      llvm::ArrayRef<int64_t> suffix);

/// The result shape of tfm.matmul, or std::nullopt with `error` set to a
/// sentence naming the operand and the mismatch.
std::optional<Shape> inferMatmulShape(llvm::ArrayRef<int64_t> lhs,
                                      llvm::ArrayRef<int64_t> rhs,
                                      bool transposeLhs, bool transposeRhs,
                                      std::string &error);

} // namespace pmlir::tfm

#endif // PMLIR_DIALECT_TFM_IR_SHAPEUTILS_H
