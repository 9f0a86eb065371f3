//===- Passes.h - pmlir passes ------------------------------------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRANSFORMS_PASSES_H
#define PMLIR_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Transforms/Passes.h.inc"

/// tfm ops with static shapes to linalg, tensor, arith and math.
void populateTfmToLinalgPatterns(mlir::RewritePatternSet &patterns);

#define GEN_PASS_REGISTRATION
#include "pmlir/Transforms/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_TRANSFORMS_PASSES_H
