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
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-sharding-pipeline"

using namespace mlir;

void pmlir::buildShardingPipeline(OpPassManager &pm, const ShardingPipelineOptions &options) {
  LLVM_DEBUG(llvm::dbgs() << "sharding pipeline: recipe "
                          << (options.recipe == ShardingPipelineOptions::Recipe::Megatron
                                  ? "megatron"
                              : options.recipe == ShardingPipelineOptions::Recipe::Auto ? "auto"
                                                                                        : "none")
                          << ", ZeRO " << options.zero << ", sequence parallel "
                          << options.sequenceParallel << "\n");
  if (options.recipe == ShardingPipelineOptions::Recipe::Megatron)
    pm.addPass(createMegatronRecipe());
  if (options.recipe == ShardingPipelineOptions::Recipe::Auto) {
    AutoShardingOptions autoOptions;
    autoOptions.topology = options.topology;
    autoOptions.memoryBudget = options.memoryBudget;
    autoOptions.rankOrder = options.rankOrder;
    pm.addPass(createAutoSharding(autoOptions));
  }
  if (options.zero > 0)
    pm.addPass(createZero(ZeroOptions{options.zero}));
  if (options.contextLayout == ShardingPipelineOptions::ContextLayout::Balanced)
    pm.addPass(createHeadTailSequence());
  pm.addPass(createShardingPropagation());
  using ContextAttention = ShardingPipelineOptions::ContextAttention;
  if (options.contextAttention != ContextAttention::AllGather) {
    // Propagation again, through the constraints the variant pins.
    ContextParallelAttentionOptions pins;
    pins.attention = options.contextAttention == ContextAttention::Ring ? "ring" : "ulysses";
    pm.addPass(createContextParallelAttention(pins));
    pm.addPass(createShardingPropagation());
  }
  pm.addPass(createPartition());
  if (options.contextAttention == ContextAttention::Ring)
    pm.addPass(createRingAttention());
  if (options.sequenceParallel)
    pm.addPass(createSequenceParallel());
  if (!options.commReport.empty())
    pm.addPass(createCommReport(CommReportOptions{options.commReport}));
  if (!options.memoryReport.empty())
    pm.addPass(createMemoryReport(MemoryReportOptions{options.memoryReport}));
}
