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

#include "KernelLoops.h"

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
#include "llvm/Config/Targets.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/TargetParser/Triple.h"

#include <cstdlib>
#include <memory>
#include <mutex>

#define DEBUG_TYPE "pmlir-gpu-pipeline"

using namespace mlir;

std::string pmlir::gpuToolkitPath(const GpuPipelineOptions &options) {
  if (!options.toolkit.empty())
    return options.toolkit;
  if (const char *home = std::getenv("CUDA_HOME"); home && *home)
    return home;
  return "/usr/local/cuda";
}

std::optional<std::string>
pmlir::unusableGpuKernelLoopsOption(const GpuKernelLoopsOptions &options) {
  if (std::optional<std::string> problem = kernel_loops::blockSizeProblem(options.blockSize))
    return problem;
  if (std::optional<std::string> problem =
          kernel_loops::reductionBlocksProblem(options.reductionBlocks))
    return problem;
  if (options.scatterRowGroups < 1)
    return "scatter-row-groups must be 1 (every row in one) or more, not " +
           std::to_string(options.scatterRowGroups);
  return std::nullopt;
}

std::optional<std::string> pmlir::unknownGpuChip(llvm::StringRef chip) {
#if LLVM_HAS_NVPTX_TARGET
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTargetMC();
  });
  llvm::Triple triple("nvptx64-nvidia-cuda");
  std::string error;
  const llvm::Target *nvptx = llvm::TargetRegistry::lookupTarget(triple, error);
  // Made for no processor in particular: made for an unknown one, it would
  // warn on stderr.
  std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
      nvptx ? nvptx->createMCSubtargetInfo(triple, /*CPU=*/"", /*Features=*/"") : nullptr);
  if (subtarget && subtarget->isCPUStringValid(chip))
    return std::nullopt;
  if (!subtarget)
    return "LLVM's NVPTX target could not be made: " + error;
  return "'" + chip.str() +
         "' is not a GPU LLVM's NVPTX target knows (sm_80, sm_90, sm_90a, sm_100, ...)";
#else
  return std::string("this LLVM has no NVPTX target to compile kernels with");
#endif
}

std::optional<std::string> pmlir::unusableGpuPipelineOption(const GpuPipelineOptions &options) {
  GpuKernelLoopsOptions kernelLoops;
  kernelLoops.blockSize = options.blockSize;
  if (std::optional<std::string> unusable = unusableGpuKernelLoopsOption(kernelLoops))
    return unusable;
  if (std::optional<std::string> unknown = unknownGpuChip(options.chip))
    return "chip " + *unknown;
  if (options.optLevel < 0 || options.optLevel > 3)
    return "opt-level must be 0 to 3, not " + std::to_string(options.optLevel);
  if (options.rank != -1 && !options.predict)
    return std::string("rank names the job's rank whose work predict counts: it needs predict");
  return std::nullopt;
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
  if (options.format != GpuKernelFormat::Nvvm) {
    GpuModuleToBinaryPassOptions binary;
    binary.toolkitPath = gpuToolkitPath(options);
    binary.compilationTarget = gpuKernelFormatName(options.format).str();
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
