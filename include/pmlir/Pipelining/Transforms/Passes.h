//===- Passes.h - Pipeline parallelism passes -------------------*- C++ -*-===//
//
// Part of pmlir.
//
// The passes of pipeline parallelism (Passes.td): stages, microbatches,
// schedules and one pipeline rank's program. The engine is
// pmlir/Pipelining/Pipelining.h, the schedules pmlir/Pipelining/Schedule.h.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PIPELINING_TRANSFORMS_PASSES_H
#define PMLIR_PIPELINING_TRANSFORMS_PASSES_H

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
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
#include "pmlir/Pipelining/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "pmlir/Pipelining/Transforms/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_PIPELINING_TRANSFORMS_PASSES_H
