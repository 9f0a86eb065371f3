//===- CompilePipeline.cpp - The one pipeline from a model to a rank's code ===//
//
// Part of pmlir.
//
// The only place that orders the passes of a job: each phase is built by
// its own builder (the program, sharding, and target pipelines), and this
// file decides which of them run, with which options, in which order.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Compiler/CompilePipeline.h"

#include "pmlir/Conversion/Passes.h"
#include "pmlir/Support/Mesh.h"
#include "pmlir/Support/OutputFile.h"
#include "pmlir/Target/CPU/Passes.h"
#include "pmlir/Target/GPU/Passes.h"
#include "pmlir/Training/Optimizer.h"

#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-compile-pipeline"

using namespace mlir;

namespace pmlir {

std::string compiledEntryName(const CompilePipelineOptions &options) {
  switch (options.program) {
  case ProgramKind::Train:
    return training::kTrainStepName.str();
  case ProgramKind::Gradients:
    return training::gradientName(options.entry);
  case ProgramKind::Forward:
    return options.entry;
  }
  llvm_unreachable("a program kind");
}

namespace {

bool pipelined(const CompilePipelineOptions &options) {
  return options.pipelineSchedule != pipe::ScheduleKind::None;
}

ProgramPipelineOptions programOptionsOf(const CompilePipelineOptions &o, int64_t pipelineRanks) {
  ProgramPipelineOptions program;
  program.autodiff.entry = o.entry;
  program.autodiff.recompute = o.recompute;
  program.gradients = o.program == ProgramKind::Gradients;
  program.train = o.program == ProgramKind::Train;
  OptimizerOptions &optimizer = program.optimizer;
  optimizer.lr = o.lr;
  optimizer.beta1 = o.beta1;
  optimizer.beta2 = o.beta2;
  optimizer.eps = o.eps;
  optimizer.weightDecay = o.weightDecay;
  optimizer.maxGradNorm = o.maxGradNorm;
  optimizer.gradAccum = o.gradAccum;
  if (pipelined(o)) {
    program.schedule.schedule = o.pipelineSchedule;
    program.schedule.ranks = pipelineRanks;
    program.schedule.microbatches = std::max<int64_t>(1, o.microbatches);
    program.schedule.virtualStages = o.virtualStages;
    program.schedule.csvFile = o.pipelineCsv;
    // NCCL's send waits for its receive; MPI's does not, but the CPU runs
    // the messages in the same order, so that its tests check the order
    // GPUs run.
    program.schedule.meetingTransfers = true;
    program.splitPoints.assign(o.pipelineSplit.begin(), o.pipelineSplit.end());
  } else {
    program.microbatches = o.microbatches;
  }
  return program;
}

/// The sharding pipeline's options of a job's sharded phase (an option
/// assigned counts as given: those left at their defaults are not).
void fillShardingOptions(const CompilePipelineOptions &o, ShardingPipelineOptions &sharding) {
  sharding.recipe = o.recipe;
  if (o.topology.hasValue())
    sharding.topology = o.topology;
  if (o.memoryBudget.hasValue())
    sharding.memoryBudget = o.memoryBudget;
  if (o.autoShardingReport.hasValue())
    sharding.autoShardingReport = o.autoShardingReport;
  sharding.zero = o.zero;
  sharding.sequenceParallel = o.sequenceParallel;
  sharding.contextAttention = o.contextAttention;
  sharding.contextLayout = o.contextLayout;
}

void addShardingPasses(OpPassManager &pm, const CompilePipelineOptions &o) {
  AttachMeshOptions attach;
  attach.mesh = o.mesh;
  attach.rankOrder = o.rankOrder;
  pm.addPass(createAttachMesh(attach));
  ShardingPipelineOptions sharding;
  fillShardingOptions(o, sharding);
  buildShardingPipeline(pm, sharding);
  // Before any rank runs it: every rank's program, pipeline ranks
  // included, issues matching collectives.
  if (o.verifySpmd) {
    VerifySpmdOptions verify;
    verify.axis = "pp";
    pm.addPass(createVerifySpmd(verify));
  }
}

/// The options both targets' pipelines take, of a job's lowered phase.
template <typename TargetOptions>
void fillLoweringOptions(const CompilePipelineOptions &o, TargetOptions &target) {
  target.entry = compiledEntryName(o);
  target.precision = o.precision;
  target.roundArgumentsOnce = o.roundArgumentsOnce;
  target.predict = o.predict;
  target.rank = o.rank;
}

/// The GPU pipeline's options of a job's lowered phase.
void fillGpuOptions(const CompilePipelineOptions &o, GpuPipelineOptions &gpu) {
  fillLoweringOptions(o, gpu);
  gpu.chip = o.chip;
  gpu.format = o.gpuFormat;
}

void addLoweringPasses(OpPassManager &pm, const CompilePipelineOptions &o) {
  if (o.target == CompileTarget::Gpu) {
    GpuPipelineOptions gpu;
    fillGpuOptions(o, gpu);
    buildGpuLoweringPipeline(pm, gpu);
    return;
  }
  CpuPipelineOptions cpu;
  fillLoweringOptions(o, cpu);
  buildCpuLoweringPipeline(pm, cpu);
}

/// The options of the phases that run which would change nothing, or make
/// no program: refused by name rather than ignored or clamped. An option
/// of a phase that does not run is not looked at (pmlir-run lowers with
/// its job's options).
std::optional<std::string> unusableOption(const CompilePipelineOptions &o, int64_t pipelineRanks,
                                          llvm::function_ref<bool(CompilePhase)> runs) {
  bool train = o.program == ProgramKind::Train;
  if (runs(CompilePhase::Program)) {
    if (o.gradAccum < 1)
      return "grad-accum must be at least 1, got " + std::to_string(o.gradAccum);
    if (o.gradAccum != 1 && !train)
      return std::string("grad-accum splits a training step: it needs program=train");
    if (o.gradAccum != 1 && pipelined(o))
      return std::string("grad-accum splits a training step without a pipeline; a pipelined "
                         "step splits by microbatches");
    for (auto [given, name] : {std::pair<bool, const char *>{o.lr.hasValue(), "lr"},
                               {o.beta1.hasValue(), "beta1"},
                               {o.beta2.hasValue(), "beta2"},
                               {o.eps.hasValue(), "eps"},
                               {o.weightDecay.hasValue(), "weight-decay"},
                               {o.maxGradNorm.hasValue(), "max-grad-norm"}})
      if (given && !train)
        return std::string(name) +
               " is AdamW's, which a training step runs: it needs program=train";
    if (o.recompute.hasValue() && o.program == ProgramKind::Forward)
      return std::string("recompute says what a backward pass recomputes: it needs program=train "
                         "or program=gradients");
    if (o.microbatches < 0)
      return "microbatches must be 0 (one) or more, got " + std::to_string(o.microbatches);
    if (o.microbatches > 0 && train && !pipelined(o))
      return std::string("microbatches splits a pipelined step or a forward; a training step "
                         "without a pipeline splits by grad-accum");
    if (o.virtualStages < 1)
      return "virtual-stages must be at least 1, got " + std::to_string(o.virtualStages);
    if ((o.pipelineSchedule == pipe::ScheduleKind::Csv) != !o.pipelineCsv.empty())
      return std::string(o.pipelineCsv.empty()
                             ? "pipeline-schedule=csv reads its actions from pipeline-csv"
                             : "pipeline-csv gives the actions of pipeline-schedule=csv");
    if (!pipelined(o))
      for (auto [unused, name] :
           {std::pair<bool, const char *>{o.virtualStages != 1, "virtual-stages"},
            {!o.pipelineSplit.empty(), "pipeline-split"}})
        if (unused)
          return std::string(name) + " is for pipeline-schedule";
  }
  if (runs(CompilePhase::Sharded)) {
    ShardingPipelineOptions sharding;
    fillShardingOptions(o, sharding);
    if (std::optional<std::string> unusable = unusableShardingPipelineOption(sharding))
      return unusable;
    if (o.zero != 0 && !train)
      return std::string("zero shards a training step's model state: it needs program=train");
    bool meshed = !o.mesh.empty();
    for (auto [unused, name] :
         {std::pair<bool, const char *>{o.recipe != CompilePipelineOptions::Recipe::None, "recipe"},
          {o.zero != 0, "zero"},
          {o.sequenceParallel, "sequence-parallel"},
          {o.contextAttention != CompilePipelineOptions::ContextAttention::AllGather,
           "context-attention"},
          {o.contextLayout != CompilePipelineOptions::ContextLayout::Contiguous, "context-layout"}})
      if (unused && !meshed)
        return std::string(name) + " shards over a mesh: it needs mesh";
  }
  if (runs(CompilePhase::Rank)) {
    if (pipelined(o) && (o.pipelineRank < 0 || o.pipelineRank >= pipelineRanks))
      return "pipeline-rank " + std::to_string(o.pipelineRank) + " is not one of the mesh's " +
             std::to_string(pipelineRanks) + " pipeline ranks (0 to " +
             std::to_string(pipelineRanks - 1) + ")";
    if (!o.commReport.empty() && o.commReport != "-" &&
        (o.commReport == o.memoryReport || sameFile(o.commReport, o.memoryReport)))
      return "comm-report and memory-report name the same file '" + o.commReport +
             "': the second would replace the first";
    if (!pipelined(o))
      for (auto [unused, name] :
           {std::pair<bool, const char *>{o.pipelineRank != 0, "pipeline-rank"},
            {o.trace, "trace"}})
        if (unused)
          return std::string(name) + " is for pipeline-schedule";
  }
  if (runs(CompilePhase::Lowered)) {
    if (o.target != CompileTarget::Gpu)
      for (auto [unused, name] : {std::pair<bool, const char *>{o.chip.hasValue(), "chip"},
                                  {o.gpuFormat.hasValue(), "gpu-format"}})
        if (unused)
          return std::string(name) + " is for target=gpu";
    if (o.target == CompileTarget::Gpu) {
      GpuPipelineOptions gpu;
      fillGpuOptions(o, gpu);
      return unusableGpuPipelineOption(gpu);
    }
    CpuPipelineOptions cpu;
    fillLoweringOptions(o, cpu);
    return unusableCpuPipelineOption(cpu);
  }
  return std::nullopt;
}

} // namespace

void addReportPasses(OpPassManager &pm, const CompilePipelineOptions &o) {
  if (!o.commReport.empty())
    pm.addPass(createCommReport(CommReportOptions{o.commReport}));
  if (!o.memoryReport.empty())
    pm.addPass(createMemoryReport(MemoryReportOptions{o.memoryReport}));
}

LogicalResult buildCompilePipeline(OpPassManager &pm, const CompilePipelineOptions &o,
                                   std::string &error) {
  // A phase's passes run when the input is before it and the output at or
  // after it.
  auto runs = [&](CompilePhase phase) { return o.from < phase && phase <= o.to; };
  if (o.to < o.from) {
    error = "pmlir-compile-pipeline: phase 'to' comes before phase 'from'";
    return failure();
  }
  // Without a mesh the program runs unsharded (on one process, or the same
  // on every rank). A pipeline's stages go to the ranks of the mesh's pp
  // axis.
  bool sharded = !o.mesh.empty();
  int64_t pipelineRanks = 1;
  if (sharded) {
    std::optional<Mesh> mesh = Mesh::parse(o.mesh, o.rankOrder, error);
    if (!mesh) {
      error = "pmlir-compile-pipeline: mesh '" + o.mesh + "': " + error;
      return failure();
    }
    if (int pp = mesh->axisIndex("pp"); pp >= 0)
      pipelineRanks = mesh->axisSizes()[pp];
    if (pipelineRanks > 1 && !pipelined(o) &&
        (runs(CompilePhase::Sharded) || runs(CompilePhase::Rank))) {
      error = "pmlir-compile-pipeline: mesh axis 'pp' splits the program into pipeline stages: "
              "it needs pipeline-schedule";
      return failure();
    }
    if (mesh->axisIndex("pp") < 0 && pipelined(o)) {
      error = "pmlir-compile-pipeline: pipeline-schedule needs a pp axis in the mesh";
      return failure();
    }
  } else if (pipelined(o)) {
    error = "pmlir-compile-pipeline: pipeline-schedule needs a mesh with a pp axis";
    return failure();
  }
  if (std::optional<std::string> unusable = unusableOption(o, pipelineRanks, runs)) {
    error = "pmlir-compile-pipeline: " + *unusable;
    return failure();
  }
  LLVM_DEBUG(llvm::dbgs() << "compile pipeline for @" << compiledEntryName(o) << ", phases "
                          << static_cast<int>(o.from.getValue()) << " to "
                          << static_cast<int>(o.to.getValue()) << "\n");
  if (runs(CompilePhase::Program))
    buildProgramPipeline(pm, programOptionsOf(o, pipelineRanks));
  if (runs(CompilePhase::Sharded) && sharded)
    addShardingPasses(pm, o);
  if (runs(CompilePhase::Rank)) {
    if (pipelined(o)) {
      PipelineLowerOptions lower;
      lower.entry = compiledEntryName(o);
      lower.rank = o.pipelineRank;
      lower.axis = "pp";
      lower.trace = o.trace;
      pm.addPass(createPipelineLower(lower));
    }
    addReportPasses(pm, o);
  }
  if (runs(CompilePhase::Lowered))
    addLoweringPasses(pm, o);
  return success();
}

void registerCompilePipeline() {
  registerPassPipeline(
      "pmlir-compile-pipeline",
      "every pass of a job, in phases (global, program, sharded, rank, lowered): the program "
      "(forward, gradients, training step; pipeline stages and schedule), the mesh and its "
      "sharding, one pipeline rank, the target; what pmlir-run compiles (see "
      "CompilePipeline.cpp)",
      [](OpPassManager &pm, StringRef text, function_ref<LogicalResult(const Twine &)> onError) {
        CompilePipelineOptions options;
        if (failed(options.parseFromString(text)))
          return failure();
        std::string error;
        if (failed(buildCompilePipeline(pm, options, error)))
          return onError(error);
        return success();
      },
      [](function_ref<void(const detail::PassOptions &)> describe) {
        describe(CompilePipelineOptions());
      });
}

} // namespace pmlir
