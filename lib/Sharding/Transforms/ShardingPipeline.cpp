//===- ShardingPipeline.cpp - A global program to the per-rank program ----===//
//
// Part of pmlir.
//
// The passes pmlir-run runs on a global program with a mesh, in order, as
// one pipeline pmlir-opt can run too (pmlir-sharding-pipeline).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

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

llvm::cl::ValuesClass pmlir::ShardingPipelineOptions::recipeValues() {
  return llvm::cl::values(
      clEnumValN(pmlir::ShardingPipelineOptions::Recipe::None, "none",
                 "the program's own annotations"),
      clEnumValN(pmlir::ShardingPipelineOptions::Recipe::Megatron, "megatron",
                 "Megatron-LM's tensor parallelism on tp, batch on dp, sequence on cp"),
      clEnumValN(pmlir::ShardingPipelineOptions::Recipe::Auto, "auto",
                 "pmlir-auto-sharding: an integer program over every op's strategies on the "
                 "topology"));
}

llvm::cl::ValuesClass pmlir::ShardingPipelineOptions::contextAttentionValues() {
  return llvm::cl::values(
      clEnumValN(pmlir::ShardingPipelineOptions::ContextAttention::AllGather, "allgather",
                 "keys and values all-gathered over cp"),
      clEnumValN(pmlir::ShardingPipelineOptions::ContextAttention::Ring, "ring",
                 "key/value blocks passed around cp, online softmax (pmlir-ring-attention)"),
      clEnumValN(pmlir::ShardingPipelineOptions::ContextAttention::Ulysses, "ulysses",
                 "heads split over cp, all-to-all in and out"));
}

llvm::cl::ValuesClass pmlir::ShardingPipelineOptions::contextLayoutValues() {
  return llvm::cl::values(
      clEnumValN(pmlir::ShardingPipelineOptions::ContextLayout::Contiguous, "contiguous",
                 "each rank one contiguous block"),
      clEnumValN(pmlir::ShardingPipelineOptions::ContextLayout::Balanced, "balanced",
                 "head-tail order: each rank a chunk from the front and one from the back, "
                 "equal causal attention work (pmlir-head-tail-sequence)"));
}
