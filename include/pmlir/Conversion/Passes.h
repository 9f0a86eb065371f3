//===- Passes.h - Target-neutral conversions ---------------------*- C++ -*-===//
//
// Part of pmlir.
//
// tfm to linalg on tensors, shard collectives to calls of the runtime's one
// ABI, layers outlined, the entry prepared for the C interface, frees moved
// to last uses: what every target's lowering starts from.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_PASSES_H
#define PMLIR_CONVERSION_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Conversion/Passes.h.inc"

/// tfm ops with static shapes to linalg, tensor, arith and math.
void populateTfmToLinalgPatterns(mlir::RewritePatternSet &patterns);

/// Tensors to buffers for every target: one-shot bufferization across
/// function boundaries (identity layouts; the results of `entry` that
/// update its arguments written into them), ownership-based deallocation
/// with each free at its buffer's last use, clones to allocs and copies,
/// sends and receives next to each other as message groups (with
/// `sinkMessages`, also those apart with compute between that leaves their
/// buffers alone: where a send waits for its receive); with `predict`, what pmlir-run --predict
/// reads written on the module: the heaviest point of `entry`'s buffers
/// (pmlir-buffer-peak) and its work on the job's rank `rank`
/// (pmlir-step-work).
void buildBufferizationPipeline(mlir::OpPassManager &pm, llvm::StringRef entry,
                                bool predict = false, int64_t rank = -1, bool sinkMessages = false);

/// The external models bufferization and deallocation need (arith, func,
/// linalg, memref, scf, tensor, cf).
void registerBufferizationInterfaces(mlir::DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "pmlir/Conversion/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_CONVERSION_PASSES_H
