//===- CompilePipeline.h - The one pipeline from a model to a rank's code -*- C++ -*-===//
//
// Part of pmlir.
//
// pmlir-compile-pipeline: every pass a job runs, in order, from one typed
// options struct, in phases that can be started and stopped at, as IREE's
// compile phases:
//
//   global   the model as written (tfm at global shapes)
//   program  the program a job runs: the entry, its gradient function, or a
//            training step of it; cut into pipeline stages and scheduled
//   sharded  the mesh attached, sharded (recipe, propagation, partition,
//            sequence and context parallelism): the SPMD program
//   rank     one pipeline rank's program (the same as sharded without a
//            pipeline schedule)
//   lowered  the LLVM dialect for the target (CPU: BLAS calls and loops;
//            GPU: cuBLASLt calls and cubins)
//
// pmlir-run, pmlir-plan and pmlir-run --check build through it, so that
// `pmlir-opt --pmlir-compile-pipeline="..."` prints what pmlir-run runs.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_COMPILER_COMPILEPIPELINE_H
#define PMLIR_COMPILER_COMPILEPIPELINE_H

#include "pmlir/Sharding/Transforms/Passes.h"
#include "pmlir/Support/CompileTarget.h"
#include "pmlir/Support/Precision.h"
#include "pmlir/Target/GPU/KernelFormat.h"
#include "pmlir/Training/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace pmlir {

/// The phases of pmlir-compile-pipeline, in order.
enum class CompilePhase { Global, Program, Sharded, Rank, Lowered };

/// What a job runs: the entry, the gradient of its loss, or a training step.
enum class ProgramKind { Forward, Gradients, Train };

struct CompilePipelineOptions : public mlir::PassPipelineOptions<CompilePipelineOptions> {
  using Recipe = ShardingPipelineOptions::Recipe;
  using ContextAttention = ShardingPipelineOptions::ContextAttention;
  using ContextLayout = ShardingPipelineOptions::ContextLayout;

  //===--- Phases ---===//
  Option<CompilePhase> from{*this, "from",
                            llvm::cl::desc("the phase the input is at (its passes are skipped)"),
                            llvm::cl::init(CompilePhase::Global),
                            llvm::cl::values(clEnumValN(CompilePhase::Global, "global", ""),
                                             clEnumValN(CompilePhase::Program, "program", ""),
                                             clEnumValN(CompilePhase::Sharded, "sharded", ""),
                                             clEnumValN(CompilePhase::Rank, "rank", ""))};
  Option<CompilePhase> to{
      *this, "to", llvm::cl::desc("the phase to stop after"), llvm::cl::init(CompilePhase::Lowered),
      llvm::cl::values(
          clEnumValN(CompilePhase::Program, "program",
                     "the job's program (forward, gradients or training step; stages)"),
          clEnumValN(CompilePhase::Sharded, "sharded", "the SPMD program on the mesh"),
          clEnumValN(CompilePhase::Rank, "rank", "one pipeline rank's program"),
          clEnumValN(CompilePhase::Lowered, "lowered", "the LLVM dialect for the target"))};

  //===--- The program ---===//
  Option<std::string> entry{*this, "entry", llvm::cl::desc("the model's function"),
                            llvm::cl::init("forward")};
  Option<ProgramKind> program{
      *this, "program", llvm::cl::desc("what the job runs"), llvm::cl::init(ProgramKind::Forward),
      llvm::cl::values(
          clEnumValN(ProgramKind::Forward, "forward", "the entry itself"),
          clEnumValN(ProgramKind::Gradients, "gradients",
                     "the loss and the gradient of each parameter (@<entry>_grad)"),
          clEnumValN(ProgramKind::Train, "train", "an AdamW training step (@train_step)"))};
  Option<training::Recompute> recompute{
      *this, "recompute", llvm::cl::desc("what the backward pass recomputes"),
      llvm::cl::init(training::Recompute::Selective), training::recomputeValues()};
  Option<double> lr{*this, "lr", llvm::cl::desc("AdamW's learning rate"), llvm::cl::init(1e-3)};
  Option<double> beta1{*this, "beta1", llvm::cl::desc("AdamW's beta1"), llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::desc("AdamW's beta2"), llvm::cl::init(0.999)};
  Option<double> eps{*this, "eps", llvm::cl::desc("AdamW's epsilon"), llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::desc("AdamW's weight decay"),
                             llvm::cl::init(0.01)};
  Option<double> maxGradNorm{*this, "max-grad-norm",
                             llvm::cl::desc("clip the gradients to this global norm (0: none)"),
                             llvm::cl::init(0)};
  Option<int64_t> gradAccum{
      *this, "grad-accum",
      llvm::cl::desc("microbatches a training step accumulates over (without a pipeline "
                     "schedule)"),
      llvm::cl::init(1)};

  //===--- Pipeline parallelism ---===//
  Option<pipe::ScheduleKind> pipelineSchedule{
      *this, "pipeline-schedule",
      llvm::cl::desc("stages on the mesh's pp axis, run in this schedule"),
      llvm::cl::init(pipe::ScheduleKind::None), pipe::scheduleKindValues()};
  Option<std::string> pipelineCsv{
      *this, "pipeline-csv",
      llvm::cl::desc("pipeline-schedule=csv: torch.distributed.pipelining's CSV")};
  Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("microbatches a pipelined step or forward runs over (0: one); without a "
                     "schedule, a forward is repeated over them (pmlir-microbatch) where this "
                     "is above 0"),
      llvm::cl::init(0)};
  Option<int64_t> virtualStages{*this, "virtual-stages", llvm::cl::desc("stages per pipeline rank"),
                                llvm::cl::init(1)};
  ListOption<int64_t> pipelineSplit{
      *this, "pipeline-split",
      llvm::cl::desc("the first layer of stages 1, 2, ... (default: balanced by FLOPs)")};
  Option<int64_t> pipelineRank{*this, "pipeline-rank",
                               llvm::cl::desc("the pipeline rank (pp coordinate) compiled"),
                               llvm::cl::init(0)};
  Option<bool> trace{*this, "trace",
                     llvm::cl::desc("time each pipeline fragment and transfer for --trace"),
                     llvm::cl::init(false)};

  //===--- The mesh and sharding ---===//
  Option<std::string> mesh{
      *this, "mesh",
      llvm::cl::desc("shard over this mesh (\"dp=2,tp=2\"; pmlir-attach-mesh; empty: the "
                     "program is not sharded)")};
  Option<std::string> rankOrder{*this, "rank-order",
                                llvm::cl::desc("the mesh's axes, fastest first")};
  Option<Recipe> recipe{*this, "recipe", llvm::cl::desc("annotate the weights with a recipe first"),
                        llvm::cl::init(Recipe::None), ShardingPipelineOptions::recipeValues()};
  Option<std::string> topology{*this, "topology",
                               llvm::cl::desc("recipe=auto: a topology preset or a JSON file"),
                               llvm::cl::init("cpu")};
  Option<std::string> memoryBudget{*this, "memory-budget",
                                   llvm::cl::desc("recipe=auto: bytes a device may hold")};
  Option<std::string> autoShardingReport{
      *this, "auto-sharding-report",
      llvm::cl::desc("recipe=auto: write the plan's prediction (time, collectives, peak memory "
                     "a device) to this JSON file")};
  Option<int64_t> zero{*this, "zero", llvm::cl::desc("ZeRO stage of a training step (0 to 3)"),
                       llvm::cl::init(0)};
  Option<bool> sequenceParallel{*this, "sequence-parallel",
                                llvm::cl::desc("Megatron's sequence parallelism"),
                                llvm::cl::init(false)};
  Option<ContextAttention> contextAttention{
      *this, "context-attention", llvm::cl::desc("attention over a sequence split on cp"),
      llvm::cl::init(ContextAttention::AllGather), pmlir::contextAttentionValues()};
  Option<ContextLayout> contextLayout{
      *this, "context-layout", llvm::cl::desc("the order of a sequence split on cp"),
      llvm::cl::init(ContextLayout::Contiguous), ShardingPipelineOptions::contextLayoutValues()};
  Option<bool> verifySpmd{
      *this, "verify-spmd",
      llvm::cl::desc("prove that every rank's collectives and messages match (pmlir-verify-spmd)"),
      llvm::cl::init(true)};
  Option<std::string> commReport{*this, "comm-report",
                                 llvm::cl::desc("write the rank's collectives to this JSON file")};
  Option<std::string> memoryReport{*this, "memory-report",
                                   llvm::cl::desc("write the activation bytes to this JSON file")};

  //===--- The target ---===//
  Option<CompileTarget> target{
      *this, "target", llvm::cl::desc("where the program runs"), llvm::cl::init(CompileTarget::Cpu),
      llvm::cl::values(clEnumValN(CompileTarget::Cpu, "cpu", "pmlir-cpu-pipeline"),
                       clEnumValN(CompileTarget::Gpu, "gpu", "pmlir-gpu-pipeline"))};
  Option<Precision> precision{*this, "precision", llvm::cl::desc("the arithmetic"),
                              llvm::cl::init(Precision::F32), precisionValues()};
  Option<bool> roundArgumentsOnce{*this, "round-arguments-once", roundArgumentsOnceHelp(),
                                  llvm::cl::init(true)};
  Option<bool> predict{
      *this, "predict",
      llvm::cl::desc("write what pmlir-run --predict reads on the module: the bytes "
                     "the entry's buffers hold at their heaviest point (pmlir-buffer-peak) and "
                     "its work in program order (pmlir-step-work)"),
      llvm::cl::init(false)};
  Option<int64_t> rank{*this, "rank",
                       llvm::cl::desc("with predict: the job's rank the program runs on, whose "
                                      "coordinates give the peers its transfers compute "
                                      "(-1: none computed)"),
                       llvm::cl::init(-1)};
  Option<std::string> chip{*this, "chip", llvm::cl::desc("target=gpu: the GPU"),
                           llvm::cl::init("sm_90")};
  Option<GpuKernelFormat> gpuFormat{*this, "gpu-format",
                                    llvm::cl::desc("target=gpu: what the kernels are embedded as"),
                                    llvm::cl::init(GpuKernelFormat::Bin), gpuKernelFormatValues()};
};

/// The function the program phase ends in: @train_step, @<entry>_grad or
/// @<entry>.
std::string compiledEntryName(const CompilePipelineOptions &options);

/// Adds the passes of the phases after `options.from` up to `options.to`;
/// fails with `error` set on options that make no job (a malformed mesh, a
/// pipeline schedule without a pp axis, phases out of order).
mlir::LogicalResult buildCompilePipeline(mlir::OpPassManager &pm,
                                         const CompilePipelineOptions &options, std::string &error);

/// The reports `options` ask for (comm, memory), which end the rank phase:
/// pmlir-run writes them from one rank alone.
void addReportPasses(mlir::OpPassManager &pm, const CompilePipelineOptions &options);

void registerCompilePipeline();

} // namespace pmlir

#endif // PMLIR_COMPILER_COMPILEPIPELINE_H
