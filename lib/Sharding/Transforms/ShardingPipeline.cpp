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

std::optional<std::string>
pmlir::unusableShardingPipelineOption(const ShardingPipelineOptions &options) {
  if (options.zero < 0 || options.zero > 3)
    return "zero takes a ZeRO stage, 0 to 3, got " + std::to_string(options.zero);
  if (options.recipe != ShardingPipelineOptions::Recipe::Auto)
    for (auto [given, name] :
         {std::pair<bool, const char *>{options.topology.hasValue(), "topology"},
          {options.memoryBudget.hasValue(), "memory-budget"},
          {options.rankOrder.hasValue(), "rank-order"},
          {options.autoShardingReport.hasValue(), "auto-sharding-report"}})
      if (given)
        return std::string(name) + " is for recipe=auto";
  return std::nullopt;
}

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
    autoOptions.report = options.autoShardingReport;
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
    pins.attention = options.contextAttention;
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

llvm::cl::ValuesClass pmlir::ShardingPipelineOptions::contextLayoutValues() {
  return llvm::cl::values(
      clEnumValN(pmlir::ShardingPipelineOptions::ContextLayout::Contiguous, "contiguous",
                 "each rank one contiguous block"),
      clEnumValN(pmlir::ShardingPipelineOptions::ContextLayout::Balanced, "balanced",
                 "head-tail order: each rank a chunk from the front and one from the back, "
                 "equal causal attention work (pmlir-head-tail-sequence)"));
}
