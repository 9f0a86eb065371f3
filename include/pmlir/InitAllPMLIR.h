//===- InitAllPMLIR.h - Every dialect, pass and pipeline of pmlir -*- C++ -*-===//
//
// Part of pmlir.
//
// The one registry that pmlir-opt, pmlir-run, the fuzzers and the tests
// use: the tfm dialect, the upstream dialects pmlir programs contain or
// lower to, the external interfaces the CPU and GPU pipelines need, and
// every pass and pipeline.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_INITALLPMLIR_H
#define PMLIR_INITALLPMLIR_H

#include "pmlir/Compiler/CompilePipeline.h"
#include "pmlir/Conversion/Passes.h"
#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Transforms/Passes.h"
#include "pmlir/Target/CPU/Passes.h"
#include "pmlir/Target/GPU/Passes.h"
#include "pmlir/Training/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

#include <optional>
#include <string>

namespace pmlir {

/// The dialects of pmlir programs and the interfaces their lowering needs.
inline void registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<tfm::TfmDialect, pipe::PipeDialect, mlir::arith::ArithDialect,
                  mlir::bufferization::BufferizationDialect, mlir::func::FuncDialect,
                  mlir::linalg::LinalgDialect, mlir::math::MathDialect, mlir::memref::MemRefDialect,
                  mlir::scf::SCFDialect, mlir::shard::ShardDialect, mlir::tensor::TensorDialect>();
  registerBufferizationInterfaces(registry);
  registerGpuLoweringInterfaces(registry);
}

/// Registers a pipeline whose options are checked when it is built: an
/// option that makes no program is refused by name before any pass runs.
template <typename Options>
void registerCheckedPipeline(llvm::StringRef argument, llvm::StringRef description,
                             void (*build)(mlir::OpPassManager &, const Options &),
                             std::optional<std::string> (*unusable)(const Options &)) {
  mlir::registerPassPipeline(
      argument, description,
      [=](mlir::OpPassManager &pm, llvm::StringRef text,
          llvm::function_ref<mlir::LogicalResult(const llvm::Twine &)> onError) {
        Options options;
        if (mlir::failed(options.parseFromString(text)))
          return mlir::failure();
        if (std::optional<std::string> problem = unusable(options))
          return onError(argument + ": " + *problem);
        build(pm, options);
        return mlir::success();
      },
      [](llvm::function_ref<void(const mlir::detail::PassOptions &)> describe) {
        describe(Options());
      });
}

/// The one place pipelines are registered. pmlir-compile-pipeline
/// (lib/Compiler/CompilePipeline.cpp) orders a job's phases, as pmlir-run
/// and pmlir-plan build it, so that they run what pmlir-opt prints; each
/// phase's own pipeline is built by a function with an options struct beside
/// it: buildShardingPipeline (lib/Transforms/Sharding/ShardingPipeline.cpp),
/// buildCpuLoweringPipeline (lib/Target/CPU/CpuPipeline.cpp) and
/// buildGpuLoweringPipeline and buildGpuKernelLoopsPipeline
/// (lib/Target/GPU/GpuPipeline.cpp); each checks its options when it is
/// built (registerCheckedPipeline).
inline void registerAllPipelines() {
  registerCompilePipeline();
  registerCheckedPipeline<CpuPipelineOptions>(
      "pmlir-cpu-pipeline",
      "lowers tfm to the LLVM dialect for CPU execution, as pmlir-run compiles it "
      "(see CpuPipeline.cpp)",
      buildCpuLoweringPipeline, unusableCpuPipelineOption);
  registerCheckedPipeline<GpuPipelineOptions>(
      "pmlir-gpu-pipeline",
      "lowers tfm to a host program in the LLVM dialect with cuBLASLt calls and its kernels "
      "compiled to cubins, as pmlir-run --device gpu compiles it (see GpuPipeline.cpp)",
      buildGpuLoweringPipeline, unusableGpuPipelineOption);
  registerCheckedPipeline<GpuKernelLoopsOptions>(
      "pmlir-gpu-kernel-loops",
      "makes every loop and memory access of host functions a parallel loop mapped to "
      "blocks and threads, as the GPU pipeline does after bufferization: the kernel-loop "
      "passes in order (see GpuPipeline.cpp)",
      buildGpuKernelLoopsPipeline, unusableGpuKernelLoopsOption);
  registerCheckedPipeline<ShardingPipelineOptions>(
      "pmlir-sharding-pipeline",
      "shards a global program with tfm.mesh into the per-rank program: [recipe], "
      "propagation, partition, [sequence parallelism], [comm report]",
      buildShardingPipeline, unusableShardingPipelineOption);
}

/// Every pmlir pass and pipeline, and upstream's generic transforms
/// (canonicalize, cse, inline, ...) and the GPU pipeline's passes next to
/// them.
inline void registerAllPasses() {
  mlir::registerTransformsPasses();
  registerShardingPasses();
  registerParallelPasses();
  registerPipeliningPasses();
  registerTrainingPasses();
  registerAnalysisPasses();
  registerPMLIRConversionPasses();
  registerPMLIRTargetCPUPasses();
  registerPMLIRTargetGPUPasses();
  registerGpuPipelinePasses();
  registerAllPipelines();
}

} // namespace pmlir

#endif // PMLIR_INITALLPMLIR_H
