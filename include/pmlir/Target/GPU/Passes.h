//===- Passes.h - The GPU target ---------------------------------*- C++ -*-===//
//
// Part of pmlir.
//
// What only a GPU chooses: which contractions run as cuBLASLt GEMMs, how
// the rest becomes kernels (every loop a parallel loop mapped to blocks and
// threads, buffers in device memory ordered on the rank's stream), and the
// pipeline from tfm to a host program in the LLVM dialect with its kernels
// compiled to a cubin (NVVM, ptxas) and embedded.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TARGET_GPU_PASSES_H
#define PMLIR_TARGET_GPU_PASSES_H

#include "pmlir/Support/Precision.h"
#include "pmlir/Target/GPU/KernelFormat.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace pmlir {

#define GEN_PASS_DECL
#include "pmlir/Target/GPU/Passes.h.inc"

/// What pmlir-gpu-pipeline lowers for, as upstream's GPUToNVVMPipeline's
/// options: the chip and PTX features of the cubin, the GEMMs' precision,
/// where the CUDA toolkit (ptxas, libdevice) is, and how the kernels'
/// loops are cut into blocks.
struct GpuPipelineOptions : public mlir::PassPipelineOptions<GpuPipelineOptions> {
  Option<std::string> entry{*this, "entry",
                            llvm::cl::desc("the function callers enter through its C interface"),
                            llvm::cl::init("forward")};
  Option<std::string> chip{*this, "chip", llvm::cl::desc("the GPU the cubin is for"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{*this, "features",
                               llvm::cl::desc("PTX features (the PTX ISA version)"),
                               llvm::cl::init("+ptx80")};
  Option<Precision> precision{*this, "precision", llvm::cl::desc("the arithmetic"),
                              llvm::cl::init(Precision::F32), precisionValues()};
  Option<bool> roundArgumentsOnce{*this, "round-arguments-once", roundArgumentsOnceHelp(),
                                  llvm::cl::init(true)};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("the CUDA toolkit's directory, for ptxas and libdevice (default: "
                     "$CUDA_HOME, else /usr/local/cuda)"),
      llvm::cl::init("")};
  Option<GpuKernelFormat> format{*this, "format",
                                 llvm::cl::desc("what the kernels are embedded as"),
                                 llvm::cl::init(GpuKernelFormat::Bin), gpuKernelFormatValues()};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("threads a block along a kernel's innermost loop"),
                            llvm::cl::init(256)};
  Option<int> optLevel{*this, "opt-level", llvm::cl::desc("LLVM's optimization level for NVVM"),
                       llvm::cl::init(3)};
  Option<bool> predict{*this, "predict",
                       llvm::cl::desc("write what pmlir-run --predict reads on the module "
                                      "(pmlir-buffer-peak, pmlir-step-work)"),
                       llvm::cl::init(false)};
  Option<int64_t> rank{
      *this, "rank", llvm::cl::desc("with predict: the job's rank the program runs on (-1: none)"),
      llvm::cl::init(-1)};
};

/// The options of the kernel-loop passes, composed in order by
/// buildGpuKernelLoopsPipeline.
struct GpuKernelLoopsOptions : public mlir::PassPipelineOptions<GpuKernelLoopsOptions> {
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("threads a block along a loop's innermost dimension"),
                            llvm::cl::init(256)};
  Option<int64_t> reductionBlocks{
      *this, "reduction-blocks",
      llvm::cl::desc("blocks a reduction into few values is spread over, by slices of each "
                     "value's elements (0: one block a value)"),
      llvm::cl::init(1024)};
  Option<int64_t> scatterRowGroups{
      *this, "scatter-row-groups",
      llvm::cl::desc("groups a scatter into rows splits its rows into, by row index modulo "
                     "the groups (1: every row in one)"),
      llvm::cl::init(32)};
};

/// Every loop and memory access of a bufferized host function as parallel
/// loops mapped to blocks and threads: pmlir-gpu-reduction-kernels,
/// -parallel-loops, -scatter-by-columns, -sink-scalar-reads,
/// -wrap-sequential-work and -tile-and-map, in that order (each expects
/// what the ones before leave).
void buildGpuKernelLoopsPipeline(mlir::OpPassManager &pm,
                                 const GpuKernelLoopsOptions &options = GpuKernelLoopsOptions());

/// tfm -> cuBLASLt calls and kernels -> a host program in the LLVM dialect
/// with its kernels as cubins (gpu.binary), for the JIT: exactly what
/// `pmlir-run --device gpu` compiles.
void buildGpuLoweringPipeline(mlir::OpPassManager &pm,
                              const GpuPipelineOptions &options = GpuPipelineOptions());

/// Why `options` make no GPU program (a block of more threads than CUDA
/// allows, a chip LLVM's NVPTX target does not know, ...), or nullopt:
/// checked when the pipeline is built, before any pass runs.
std::optional<std::string> unusableGpuPipelineOption(const GpuPipelineOptions &options);

/// Why no kernels can be compiled for `chip` ("sm_90"): a name LLVM's
/// NVPTX target does not know (it would compile for a generic processor
/// with a warning a kernel, then fail in ptxas), or nullopt.
std::optional<std::string> unknownGpuChip(llvm::StringRef chip);

/// Why `options` make no kernels, or nullopt.
std::optional<std::string> unusableGpuKernelLoopsOption(const GpuKernelLoopsOptions &options);

/// The toolkit directory `options` names, or $CUDA_HOME, or
/// /usr/local/cuda.
std::string gpuToolkitPath(const GpuPipelineOptions &options);

/// The upstream passes of the GPU pipeline, so that pmlir-opt runs it a
/// pass at a time (linalg to parallel loops, parallel loops to gpu.launch,
/// the GPU dialect's transforms, gpu to NVVM, gpu to LLVM).
void registerGpuPipelinePasses();

/// The dialects and external interfaces the GPU pipeline needs: NVVM's
/// target (serialization to a cubin), the conversions to LLVM of the
/// dialects kernels hold, and the translations of GPU and NVVM to LLVM IR
/// (with the offloading handler that embeds the cubins).
void registerGpuLoweringInterfaces(mlir::DialectRegistry &registry);

#define GEN_PASS_REGISTRATION
#include "pmlir/Target/GPU/Passes.h.inc"

} // namespace pmlir

#endif // PMLIR_TARGET_GPU_PASSES_H
