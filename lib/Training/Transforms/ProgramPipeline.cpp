//===- ProgramPipeline.cpp - The program pmlir-run builds from a model ----===//
//
// Part of pmlir.
//
// The passes that turn a global model's entry into the program pmlir-run
// shards and runs, as one builder: pmlir-run and the planner (which
// compiles the plans it prints, to count their collectives) build the same
// program from the same options.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Training/Transforms/Passes.h"

#include "pmlir/Training/Optimizer.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

std::string pmlir::buildProgramPipeline(OpPassManager &pm, const ProgramPipelineOptions &options) {
  bool pipelined = options.schedule.schedule != pipe::ScheduleKind::None;
  std::string name = options.autodiff.entry;
  if (options.gradients || options.train) {
    AutodiffOptions autodiff = options.autodiff;
    autodiff.name = name = training::gradientName(options.autodiff.entry);
    autodiff.keepEntry = false;
    pm.addPass(createAutodiff(autodiff));
  }
  if (pipelined) {
    PipelinePartitionOptions partition;
    partition.entry = name;
    partition.stages = options.schedule.ranks * options.schedule.virtualStages;
    partition.splitPoints = options.splitPoints;
    pm.addPass(createPipelinePartition(partition));
  }
  if (options.train) {
    OptimizerOptions optimizer = options.optimizer;
    optimizer.entry = name;
    optimizer.name = name = training::kTrainStepName.str();
    optimizer.keepEntry = false;
    // A pipelined step accumulates over the pipeline's microbatches.
    if (pipelined)
      optimizer.gradAccum = options.schedule.microbatches;
    pm.addPass(createOptimizer(optimizer));
  } else if (pipelined || options.microbatches > 0) {
    pm.addPass(createMicrobatch(
        MicrobatchOptions{name, pipelined ? options.schedule.microbatches : options.microbatches}));
  }
  if (pipelined)
    pm.addPass(createPipelineSchedule(options.schedule));
  return name;
}
