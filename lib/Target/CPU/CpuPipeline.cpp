//===- CpuPipeline.cpp - tfm to the LLVM dialect for CPUs -----------------===//
//
// Part of pmlir.
//
// The entry's C interface, then tfm (one function per distinct layer) ->
// linalg on tensors, shard collectives as runtime calls (the target-neutral
// conversions) -> f32 matmuls marked for BLAS kernels -> elementwise fusion
// around them -> buffers, each freed at its last use
// (buildBufferizationPipeline) -> BLAS calls for f32 matmuls -> the large
// ops outlined for the runtime's threads -> loops (a reduction's running
// values in registers) -> polynomial f32 math ->
// LLVM, the outlined ops called through pmlir_rt_parallel_for. The loops
// are left to LLVM's vectorizers, with the host's target machine (see
// pmlir-run).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "pmlir/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-cpu-pipeline"

using namespace mlir;

std::optional<std::string> pmlir::unusableCpuPipelineOption(const CpuPipelineOptions &options) {
  if (options.precision == Precision::TF32)
    return std::string("precision tf32 is a GPU's: a CPU has no TF32 arithmetic (f32 or bf16)");
  if (options.rank != -1 && !options.predict)
    return std::string("rank names the job's rank whose work predict counts: it needs predict");
  return std::nullopt;
}

void pmlir::buildCpuLoweringPipeline(OpPassManager &pm, const CpuPipelineOptions &options) {
  LLVM_DEBUG(llvm::dbgs() << "CPU pipeline for @" << options.entry << "\n");
  pm.addPass(createPrepareCInterface(PrepareCInterfaceOptions{options.entry}));
  pm.addPass(createOutlineLayers());
  pm.addPass(createConvertTfmToLinalg());
  pm.addPass(createLowerShardToRuntime());
  pm.addPass(createFuseElementwise());
  if (options.precision == Precision::BF16) {
    pm.addPass(createStoreBf16());
    // What does not change between calls (a forward's weights) is rounded
    // by the caller, once.
    if (options.roundArgumentsOnce)
      pm.addPass(createRoundArgumentsOnce(RoundArgumentsOnceOptions{options.entry}));
  }
  pm.addPass(createSelectCpuKernels(SelectCpuKernelsOptions{options.precision}));
  pm.addPass(createCanonicalizerPass());

  buildBufferizationPipeline(pm, options.entry, options.predict, options.rank);

  // Contractions marked with a library call (f32 matmuls) become calls to
  // the BLAS-backed kernels in lib/Runtime/CpuKernels.cpp.
  pm.addPass(createLinalgToLibraryCalls());
  pm.addPass(createOutlineParallelLoops());
  pm.addPass(createLowerReductionsToLoops());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  // bf16 <-> f32 as integer shifts and rounding: x86 has no instructions
  // for them, and LLVM's fallbacks call into a libgcc that may lack them.
  if (options.precision == Precision::BF16)
    pm.addPass(createExpandBf16Conversions());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // f32 transcendentals inline (vectorizable); the rest to intrinsics/libm.
  pm.addPass(createApproximateMath());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createLowerParallelCalls());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}
