//===- Passes.h - Sequence and context parallelism --------------*- C++ -*-===//
//
// Part of pmlir.
//
// The passes of sequence and context parallelism on partitioned programs
// (Passes.td).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PARALLEL_TRANSFORMS_PASSES_H
#define PMLIR_PARALLEL_TRANSFORMS_PASSES_H

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Parallel/ContextAttention.h"
#include "pmlir/Pipelining/Schedule.h"
#include "pmlir/Training/Autodiff.h"

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

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Parallel/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pmlir/Parallel/Transforms/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_PARALLEL_TRANSFORMS_PASSES_H
