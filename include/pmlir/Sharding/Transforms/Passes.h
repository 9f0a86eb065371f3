//===- Passes.h - Sharding passes and pipeline ------------------*- C++ -*-===//
//
// Part of pmlir.
//
// The sharding passes (Passes.td) and the pipeline that orders them with
// sequence and context parallelism and the reports: a global program with
// tfm.mesh becomes the per-rank program.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_TRANSFORMS_PASSES_H
#define PMLIR_SHARDING_TRANSFORMS_PASSES_H

#include "pmlir/Analysis/Transforms/Passes.h"
#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Parallel/ContextAttention.h"
#include "pmlir/Parallel/Transforms/Passes.h"
#include "pmlir/Pipelining/Schedule.h"
#include "pmlir/Sharding/Auto/Problem.h"
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

#include <optional>
#include <string>

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Sharding/Transforms/Passes.h.inc"

/// How a global program is sharded, as pmlir-sharding-pipeline's options.
struct ShardingPipelineOptions : public mlir::PassPipelineOptions<ShardingPipelineOptions> {
  enum class Recipe { None, Megatron, Auto };
  using ContextAttention = pmlir::ContextAttention;
  enum class ContextLayout { Contiguous, Balanced };
  /// The alternatives of each choice, with their names: every option that
  /// takes one (these, pmlir-compile-pipeline's, pmlir-run's flags) lists
  /// these, so a new alternative is added here alone.
  static llvm::cl::ValuesClass recipeValues();
  static llvm::cl::ValuesClass contextLayoutValues();

  Option<Recipe> recipe{*this, "recipe", llvm::cl::desc("annotate the weights with a recipe first"),
                        llvm::cl::init(Recipe::None), recipeValues()};
  Option<std::string> topology{
      *this, "topology",
      llvm::cl::desc("recipe=auto: a topology preset (cpu, h100, h200) or a JSON file"),
      llvm::cl::init("cpu")};
  Option<std::string> memoryBudget{
      *this, "memory-budget",
      llvm::cl::desc("recipe=auto: bytes a device may hold (default: the device's memory)")};
  Option<std::string> rankOrder{
      *this, "rank-order",
      llvm::cl::desc("recipe=auto: the mesh's rank order, fastest axis first")};
  Option<std::string> autoShardingReport{
      *this, "auto-sharding-report",
      llvm::cl::desc("recipe=auto: write the plan's prediction (time, collectives, peak memory "
                     "a device) to this JSON file")};
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage of a training step (0: none, 1 to 3)"),
                       llvm::cl::init(0)};
  Option<bool> sequenceParallel{
      *this, "sequence-parallel",
      llvm::cl::desc("Megatron's sequence parallelism on the partitioned program"),
      llvm::cl::init(false)};
  Option<ContextAttention> contextAttention{
      *this, "context-attention", llvm::cl::desc("attention over a sequence split on the cp axis"),
      llvm::cl::init(ContextAttention::AllGather), pmlir::contextAttentionValues()};
  Option<ContextLayout> contextLayout{
      *this, "context-layout", llvm::cl::desc("the order of a sequence split on the cp axis"),
      llvm::cl::init(ContextLayout::Contiguous), contextLayoutValues()};
  Option<std::string> commReport{*this, "comm-report",
                                 llvm::cl::desc("write the collectives to this JSON file")};
  Option<std::string> memoryReport{
      *this, "memory-report",
      llvm::cl::desc("write the activation bytes per layer and rank to this JSON file")};
};

/// Recipe, sharding propagation, partition, sequence parallelism and the
/// reports, as the options say: a global program with tfm.mesh becomes the
/// per-rank program.
void buildShardingPipeline(mlir::OpPassManager &pm, const ShardingPipelineOptions &options);

/// Why `options` shard nothing as asked (a ZeRO stage past 3, a topology
/// without recipe=auto to price it), or nullopt: checked when the pipeline
/// is built.
std::optional<std::string> unusableShardingPipelineOption(const ShardingPipelineOptions &options);

#define GEN_PASS_REGISTRATION
#include "pmlir/Sharding/Transforms/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_SHARDING_TRANSFORMS_PASSES_H
