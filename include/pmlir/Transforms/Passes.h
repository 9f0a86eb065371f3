//===- Passes.h - pmlir passes ------------------------------------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRANSFORMS_PASSES_H
#define PMLIR_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pmlir/Transforms/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_TRANSFORMS_PASSES_H
