//===- Pipelines.cpp - Every pass pipeline pmlir registers -----------------===//
//
// Part of pmlir.
//
// The one place pipelines are registered (InitAllPMLIR.h calls it for every
// tool). Each pipeline is built by a function with an options struct beside
// its phase: buildShardingPipeline (Sharding/ShardingPipeline.cpp) and
// buildCpuLoweringPipeline (Lowering/CpuPipeline.cpp), which pmlir-run
// calls too, so that it runs what pmlir-opt prints.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Transforms/Passes.h"

#include "mlir/Pass/PassRegistry.h"

using namespace mlir;

void pmlir::registerPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "pmlir-cpu-pipeline",
      "lowers tfm to the LLVM dialect for CPU execution, as pmlir-run compiles it "
      "(see CpuPipeline.cpp)",
      buildCpuLoweringPipeline);
  PassPipelineRegistration<ShardingPipelineOptions>(
      "pmlir-sharding-pipeline",
      "shards a global program with tfm.mesh into the per-rank program: [recipe], "
      "propagation, partition, [sequence parallelism], [comm report]",
      buildShardingPipeline);
}
