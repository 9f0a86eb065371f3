//===- CpuPipeline.cpp - tfm to the LLVM dialect for CPUs -----------------===//
//
// Part of pmlir.
//
// The entry's C interface, then tfm (one function per distinct layer) ->
// linalg on tensors, shard collectives as runtime calls (the target-neutral
// conversions) -> f32 matmuls marked for BLAS kernels -> elementwise fusion
// around them -> one-shot bufferization
// across function boundaries (identity layouts, so the entry function takes
// plain strided memrefs; results that update arguments written into them)
// -> ownership-based deallocation, each free moved to
// its buffer's last use -> BLAS calls for
// f32 matmuls -> loops -> polynomial f32 math -> LLVM. The loops are left to
// LLVM's vectorizers, with the host's target machine (see pmlir-run).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "pmlir/Conversion/Passes.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-cpu-pipeline"

using namespace mlir;

void pmlir::buildCpuLoweringPipeline(OpPassManager &pm, const CpuPipelineOptions &options) {
  LLVM_DEBUG(llvm::dbgs() << "CPU pipeline for @" << options.entry << "\n");
  pm.addPass(createPrepareCInterface(PrepareCInterfaceOptions{options.entry}));
  pm.addPass(createOutlineLayers());
  pm.addPass(createConvertTfmToLinalg());
  pm.addPass(createLowerShardToRuntime());
  pm.addPass(createSelectCpuKernels());
  pm.addPass(createFuseElementwise());
  pm.addPass(createCanonicalizerPass());

  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createUpdateArgumentsInPlace(UpdateArgumentsInPlaceOptions{options.entry}));
  // Upstream's buffer-deallocation-pipeline, with the deallocs of fresh
  // buffers taken apart before its simplification, whose time grows with
  // the cube of a block's buffers (pmlir-simplify-fresh-deallocs).
  pm.addNestedPass<func::FuncOp>(memref::createExpandReallocPass({/*emitDeallocs=*/false}));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createSimplifyFreshDeallocs());
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferDeallocationSimplificationPass());
  pm.addPass(bufferization::createLowerDeallocationsPass());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createDeallocAfterLastUse());
  // Deallocation clones what a function returns but does not own (an
  // argument returned as it is): clones become allocs and copies.
  pm.addPass(createConvertBufferizationToMemRefPass());

  // Contractions marked with a library call (f32 matmuls) become calls to
  // the BLAS-backed kernels in lib/Runtime/CpuKernels.cpp.
  pm.addPass(createLinalgToLibraryCalls());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
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
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

void pmlir::registerCpuLoweringInterfaces(DialectRegistry &registry) {
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
}
