//===- BufferizationPipeline.cpp - Tensors to buffers, freed at last use --===//
//
// Part of pmlir.
//
// Every target bufferizes the same way: the parts of a tensor built of
// slices written where they go, then one-shot bufferization across
// function boundaries (identity layouts, so the entry takes plain strided
// memrefs; results that update arguments written into them), then
// ownership-based deallocation with each free moved to its buffer's last
// use. Only what runs on the buffers afterwards differs per target.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "mlir/Conversion/BufferizationToMemRef/BufferizationToMemRef.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void pmlir::buildBufferizationPipeline(OpPassManager &pm, StringRef entry, bool predict,
                                       int64_t rank, bool sinkMessages) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  // A tensor built of computed slices (tfm.concat's insert_slices: the
  // gradient of a weight split into Q, K and V is the concatenation of three
  // GEMMs' results) would otherwise be a fresh buffer for each part and a
  // strided copy into the whole: each part's producer now writes into its
  // slice of the whole (what copies are left copy a slice onto itself, and
  // CSE and canonicalization below remove them).
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createUpdateArgumentsInPlace(UpdateArgumentsInPlaceOptions{entry.str()}));
  // Upstream's buffer-deallocation-pipeline, with the deallocs of fresh
  // buffers taken apart before its simplification, whose time grows with
  // the cube of a block's buffers (pmlir-simplify-fresh-deallocs).
  pm.addNestedPass<func::FuncOp>(memref::createExpandReallocPass({/*emitDeallocs=*/false}));
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addNestedPass<func::FuncOp>(bufferization::createOwnershipBasedBufferDeallocationPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createSimplifyFreshDeallocs());
  pm.addNestedPass<func::FuncOp>(bufferization::createBufferDeallocationSimplificationPass());
  // (In registers: upstream's helper reads buffers the GPU target would
  // place on the device.)
  pm.addPass(createLowerDeallocations());
  pm.addNestedPass<func::FuncOp>(createCSEPass());
  pm.addNestedPass<func::FuncOp>(createCanonicalizerPass());
  pm.addPass(createDeallocAfterLastUse());
  // Deallocation clones what a function returns but does not own (an
  // argument returned as it is): clones become allocs and copies.
  pm.addPass(createConvertBufferizationToMemRefPass());
  // Sends and receives next to each other go as one group (on NCCL a lone
  // send waits for its receive), once nothing moves the deallocs again.
  pm.addPass(createGroupMessages(GroupMessagesOptions{sinkMessages}));
  // What the buffers hold at the heaviest point, and the work in program
  // order, for pmlir-run --predict.
  if (predict) {
    pm.addPass(createBufferPeak(BufferPeakOptions{entry.str()}));
    pm.addPass(createStepWork(StepWorkOptions{entry.str(), rank}));
  }
}

void pmlir::registerBufferizationInterfaces(DialectRegistry &registry) {
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerSubsetOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
}
