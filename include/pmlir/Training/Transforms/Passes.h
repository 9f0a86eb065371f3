//===- Passes.h - Training passes and program -------------------*- C++ -*-===//
//
// Part of pmlir.
//
// The training passes (Passes.td) and the pipeline that builds the program
// pmlir-run runs from a model: the entry, its gradients or a training step,
// cut into pipeline stages where a schedule asks.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRAINING_TRANSFORMS_PASSES_H
#define PMLIR_TRAINING_TRANSFORMS_PASSES_H

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Pipelining/Schedule.h"
#include "pmlir/Pipelining/Transforms/Passes.h"
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
#include "pmlir/Training/Transforms/Passes.h.inc"

/// The program pmlir-run builds from a global model's entry before it is
/// sharded: the entry itself, its gradient function (gradients), or a
/// training step of that (train, over optimizer.gradAccum microbatches);
/// with a schedule, cut into stages repeated over the microbatches (a
/// forward by pmlir-microbatch, a training step's gradient function by the
/// step itself) and scheduled on the pipeline ranks.
struct ProgramPipelineOptions {
  /// entry and recompute are read; the gradient function is @entry_grad.
  AutodiffOptions autodiff;
  bool gradients = false;
  bool train = false;
  /// The step's hyperparameters and gradAccum (without pipelining).
  OptimizerOptions optimizer;
  /// Pipelined where schedule.schedule is not None: ranks, microbatches,
  /// virtual stages and the schedule.
  PipelineScheduleOptions schedule{/*schedule=*/pipe::ScheduleKind::None};
  /// Without a schedule, a forward repeated over this many microbatches
  /// (pmlir-microbatch; 0: not), as the pipelined forward over the
  /// schedule's (a step accumulates over optimizer.gradAccum instead).
  int64_t microbatches = 0;
  /// The first layer of stages 1, 2, ... (empty: balanced by FLOPs).
  llvm::SmallVector<int64_t> splitPoints;
};

/// Adds the passes that build the program `options` describe; returns the
/// name of the function it ends in (train_step, @entry_grad, or @entry).
std::string buildProgramPipeline(mlir::OpPassManager &pm, const ProgramPipelineOptions &options);

#define GEN_PASS_REGISTRATION
#include "pmlir/Training/Transforms/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_TRAINING_TRANSFORMS_PASSES_H
