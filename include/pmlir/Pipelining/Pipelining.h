//===- Pipelining.h - Cutting tfm programs into pipeline stages -*- C++ -*-===//
//
// Part of pmlir.
//
// The engine behind pmlir-pipeline-partition and pmlir-pipeline-lower:
// cutting a global program (a forward function or pmlir-autodiff's gradient
// function) at tfm.layer boundaries into stages of pipe.fragment ops, and
// turning a sharded program with fragments and a pipe.schedule into the
// program of one pipeline rank.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PIPELINING_PIPELINING_H
#define PMLIR_PIPELINING_PIPELINING_H

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Pipelining/Schedule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <vector>

namespace pmlir::pipeline {

/// The values `op` reads: its operands and what its regions use from
/// above.
llvm::SmallVector<mlir::Value> valuesReadBy(mlir::Operation *op);

struct StagePartitionOptions {
  /// Stages to cut into (pipeline ranks x virtual stages).
  int64_t stages = 1;
  /// Where stages 1, 2, ... start: the index of their first forward
  /// tfm.layer. Empty: balanced by the layers' FLOPs, with the ops before
  /// the first layer (embeddings) counted in stage 0 and those after the
  /// last one (final norm, LM head, loss) in the last stage.
  std::vector<int64_t> splitPoints;
};

/// The stage of each forward tfm.layer of `func` (in order) that `options`
/// gives; fails with a diagnostic on more stages than layers or bad split
/// points.
mlir::FailureOr<std::vector<int64_t>> assignLayersToStages(mlir::func::FuncOp func,
                                                           const StagePartitionOptions &options);

/// Cuts `func` into options.stages stages: every op that depends on the
/// inputs goes into the pipe.fragment of its stage and kind (F for the
/// forward, B for the backward of a gradient function), values crossing
/// stages go through pipe.transfer, and a parameter gradient summed from
/// several stages (a tied embedding) becomes a pipe.stage_sum. A forward's
/// results go to stage 0 through transfers (inference returns the logits
/// on the first pipeline rank), a scalar one (a loss) to every stage
/// through a stage sum. Ops that
/// depend on parameters alone (positions, masks, the loss seed) stay
/// outside the fragments: each rank that needs them computes them.
mlir::LogicalResult partitionIntoStages(mlir::func::FuncOp func,
                                        const StagePartitionOptions &options);

/// Rewrites the forward `func` to run once per microbatch of a batch
/// stacked along a new leading dimension of its inputs ([microbatches, B,
/// ...]): its body is repeated per microbatch (fragments name theirs), and
/// each result is that of the whole batch, tensors joined along their
/// first dimension ([microbatches * B, ...]) and scalars averaged. Fails
/// with a diagnostic on a gradient function (the training step accumulates
/// those), a function already repeated, or one without inputs.
mlir::LogicalResult repeatOverMicrobatches(mlir::func::FuncOp func, int64_t microbatches);

/// Splits each backward (B) fragment of `func` into the two actions of
/// zero-bubble schedules: I, the ops that the gradients sent to earlier
/// stages need, and W, the rest (the weight gradients). A backward
/// tfm.layer splits alike into two backward layers of its index, and what
/// W reads of I leaves the I fragment as a result.
mlir::LogicalResult splitBackwardFragments(mlir::func::FuncOp func);

/// Builds, from `func` (cut into stages, repeated per microbatch and
/// sharded) and the module's pipe.schedule, the program of pipeline rank
/// `rank` on the grid's axis `axis`: its fragments in its schedule's order,
/// each transfer a shard.send on the producing rank and a shard.recv on the
/// consuming one, each stage sum a shard.all_reduce over `axis`. Arguments
/// and results the rank does not use or make are dropped. The running sums
/// of gradients over microbatches are made as their terms are, one
/// microbatch's gradients live at a time. With `markWork`,
/// pipe.work_begin and pipe.work_end mark each fragment's work for the
/// trace.
mlir::LogicalResult lowerToPipelineRank(mlir::func::FuncOp func, int64_t rank, llvm::StringRef axis,
                                        bool markWork = false);

/// The fragments that read `op`'s results (`op` top-level in a pipelined
/// function), directly or through ops outside fragments (reshards): where
/// a transfer's value is received for.
llvm::SmallVector<pipe::FragmentOp> fragmentsReading(mlir::Operation *op);

/// Per pipeline rank of `schedule`, the ops of `func` (cut into stages,
/// repeated per microbatch, with the schedule's fragments) that the rank
/// runs, nested ones included, in the order it runs them: its fragments
/// in its schedule's order, each transfer sent at the schedule's SEND (else
/// after its fragment) and received at its reader's RECV (else before its
/// first reader), the stage sums after the schedule's actions on every
/// rank, the ops of the arguments alone before their first reader on each
/// rank that reads them, every other op on each rank that holds all it
/// reads as soon as the last of it is made, and the return last. This is
/// the order lowerToPipelineRank builds each rank's program in, read on
/// the global program: what a rank holds at once (pmlir-auto-sharding's
/// memory) follows it. Fails, naming the fragment, where a fragment is no
/// action of the schedule.
mlir::FailureOr<std::vector<std::vector<mlir::Operation *>>>
rankTimelines(mlir::func::FuncOp func, const pipe::Schedule &schedule);

} // namespace pmlir::pipeline

#endif // PMLIR_PIPELINING_PIPELINING_H
