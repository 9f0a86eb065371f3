//===- ShardingPipeline.cpp - A global program to the per-rank program ----===//
//
// Part of pmlir.
//
// The passes pmlir-run runs on a global program with a mesh, in order, as
// one pipeline pmlir-opt can run too (pmlir-sharding-pipeline).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

void pmlir::buildShardingPipeline(OpPassManager &pm, const ShardingPipelineOptions &options) {
  if (options.recipe == ShardingPipelineOptions::Recipe::Megatron)
    pm.addPass(createMegatronRecipe());
  pm.addPass(createShardingPropagation());
  pm.addPass(createPartition());
  if (options.sequenceParallel)
    pm.addPass(createSequenceParallel());
  if (!options.commReport.empty())
    pm.addPass(createCommReport(CommReportOptions{options.commReport}));
  if (!options.memoryReport.empty())
    pm.addPass(createMemoryReport(MemoryReportOptions{options.memoryReport}));
}
