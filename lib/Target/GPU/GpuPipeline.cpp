//===- GpuPipeline.cpp - tfm to a host program with embedded cubins -------===//
//
// Part of pmlir.
//
// Shaped like upstream's GPUToNVVMPipeline, in three stages:
// - common (target-neutral, as the CPU's): the entry's C interface, one
//   function per distinct layer, tfm -> linalg on tensors, collectives as
//   runtime calls, elementwise fusion around the GEMMs, tensors stored in
//   bf16 (precision bf16), the GEMMs marked for cuBLASLt, buffers freed at
//   their last use, the marked GEMMs as calls;
// - kernels: every other loop a parallel loop mapped to blocks and threads
//   (pmlir-gpu-kernel-loops), made a gpu.launch and outlined into a
//   gpu.module; host buffers on the device, ordered on the rank's stream
//   (pmlir-gpu-host-buffers); the kernels to NVVM for `chip`;
// - host: the host functions to the LLVM dialect, the launches to the
//   runtime's mgpu* calls (gpu-to-llvm), and each gpu.module to a cubin by
//   ptxas (or PTX), embedded as a gpu.binary that the LLVM IR translation
//   loads in a global constructor.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "pmlir/Conversion/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Debug.h"

#include <cstdlib>

#define DEBUG_TYPE "pmlir-gpu-pipeline"

using namespace mlir;

std::string pmlir::gpuToolkitPath(const GpuPipelineOptions &options) {
  if (!options.toolkit.empty())
    return options.toolkit;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

void pmlir::buildGpuKernelLoopsPipeline(OpPassManager &pm, const GpuKernelLoopsOptions &options) {
  pm.addPass(createGpuReductionKernels(
      GpuReductionKernelsOptions{options.blockSize, options.reductionBlocks}));
  pm.addPass(createGpuParallelLoops());
  pm.addPass(createGpuScatterByColumns(GpuScatterByColumnsOptions{options.scatterRowGroups}));
  pm.addPass(createGpuSinkScalarReads());
  pm.addPass(createGpuWrapSequentialWork());
  pm.addPass(createGpuTileAndMap(GpuTileAndMapOptions{options.blockSize}));
}

void pmlir::buildGpuLoweringPipeline(OpPassManager &pm, const GpuPipelineOptions &options) {
  LLVM_DEBUG(llvm::dbgs() << "GPU pipeline for @" << options.entry << " on " << options.chip
                          << "\n");
  // Common.
  pm.addPass(createPrepareCInterface(PrepareCInterfaceOptions{options.entry}));
  pm.addPass(createOutlineLayers());
  pm.addPass(createConvertTfmToLinalg());
  pm.addPass(createLowerShardToRuntime());
  pm.addPass(createFuseElementwise(FuseElementwiseOptions{/*transposes=*/true}));
  if (options.precision == Precision::BF16) {
    pm.addPass(createStoreBf16());
    // What does not change between calls (a forward's weights) is rounded
    // by the caller, once.
    if (options.roundArgumentsOnce)
      pm.addPass(createRoundArgumentsOnce(RoundArgumentsOnceOptions{options.entry}));
  }
  pm.addPass(createSelectGpuKernels(SelectGpuKernelsOptions{options.precision}));
  pm.addPass(createGpuSplitReductions());
  pm.addPass(createCanonicalizerPass());
  // NCCL's send waits for its receive: messages apart join one group.
  buildBufferizationPipeline(pm, options.entry, /*predict=*/false, /*rank=*/-1,
                             /*sinkMessages=*/true);
  // --predict: the buffers' heaviest point now; the work once the kernels
  // are made (a kernel launch each, not a loop nest each).
  if (options.predict)
    pm.addPass(createBufferPeak(BufferPeakOptions{options.entry}));
  pm.addPass(createLinalgToLibraryCalls());

  // Kernels.
  GpuKernelLoopsOptions kernelLoops;
  kernelLoops.blockSize = options.blockSize;
  buildGpuKernelLoopsPipeline(pm, kernelLoops);
  pm.addPass(createConvertParallelLoopToGpuPass());
  // A row reduction's gpu.all_reduce of one combining op takes that op's
  // name (add, maximumf), the form the NVVM lowering turns into shuffles.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createGpuHostBuffers(GpuHostBuffersOptions{options.entry}));
  if (options.predict)
    pm.addPass(createStepWork(StepWorkOptions{options.entry, options.rank}));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  OpPassManager &kernels = pm.nest<gpu::GPUModuleOp>();
  kernels.addPass(createConvertGpuOpsToNVVMOps());
  kernels.addPass(createCanonicalizerPass());
  kernels.addPass(createCSEPass());
  kernels.addPass(createReconcileUnrealizedCastsPass());

  // Host.
  pm.addPass(createGpuToLLVMConversionPass());
  if (options.format != "nvvm") {
    GpuModuleToBinaryPassOptions binary;
    binary.toolkitPath = gpuToolkitPath(options);
    binary.compilationTarget = options.format;
    pm.addPass(createGpuModuleToBinaryPass(binary));
  }
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void pmlir::registerGpuPipelinePasses() {
  registerConvertLinalgToParallelLoopsPass();
  registerConvertParallelLoopToGpuPass();
  registerGPUPasses();
  registerConvertGpuOpsToNVVMOps();
  registerGpuToLLVMConversionPass();
}

void pmlir::registerGpuLoweringInterfaces(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect>();
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}
