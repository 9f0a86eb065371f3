//===- Passes.h - pmlir passes ------------------------------------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRANSFORMS_PASSES_H
#define PMLIR_TRANSFORMS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Transforms/Passes.h.inc"

/// tfm ops with static shapes to linalg, tensor, arith and math.
void populateTfmToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// tfm -> linalg -> bufferization -> loops -> LLVM dialect, for the JIT.
void buildCpuLoweringPipeline(mlir::OpPassManager &pm);

/// The external interface models the CPU pipeline needs (bufferization and
/// deallocation of arith, func, linalg, memref, scf, tensor, cf).
void registerCpuLoweringInterfaces(mlir::DialectRegistry &registry);

/// Registers the pmlir pipelines (pmlir-cpu-pipeline) with the pass registry.
void registerPipelines();

#define GEN_PASS_REGISTRATION
#include "pmlir/Transforms/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_TRANSFORMS_PASSES_H
