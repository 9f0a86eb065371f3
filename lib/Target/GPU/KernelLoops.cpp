//===- KernelLoops.cpp - The kernel-loop passes' helpers ------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "KernelLoops.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

using namespace mlir;

/// The buffer a view (subview, cast, reshape) looks into.
Value pmlir::kernel_loops::baseOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    break;
  }
  return v;
}

/// Whether `op` is inside an scf.parallel.
bool pmlir::kernel_loops::inParallelLoop(Operation *op) {
  return op->getParentOfType<scf::ParallelOp>() != nullptr;
}

/// Whether `op` (or anything nested in it) may write the buffer `base`.
bool pmlir::kernel_loops::mayWrite(Operation *op, Value base) {
  bool writes = false;
  op->walk([&](Operation *nested) {
    if (writes)
      return WalkResult::interrupt();
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects) {
      // Unknown effects (a call): any memref it is handed may be written.
      writes = llvm::any_of(nested->getOperands(), [&](Value operand) {
        return isa<MemRefType>(operand.getType()) && baseOf(operand) == base;
      });
      return WalkResult::advance();
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances)
      if (isa<MemoryEffects::Write>(e.getEffect()) &&
          (!e.getValue() || baseOf(e.getValue()) == base))
        writes = true;
    return WalkResult::advance();
  });
  return writes;
}

/// Whether `op` reads or writes memory (allocation and freeing aside, which
/// the host does).
bool pmlir::kernel_loops::touchesMemory(Operation *op) {
  bool touches = false;
  op->walk([&](Operation *nested) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return WalkResult::advance();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances)
      if (isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
        touches = true;
    return touches ? WalkResult::interrupt() : WalkResult::advance();
  });
  return touches;
}

/// Whether `op` (or anything nested) must stay on the host: a call (the
/// runtime's GEMMs and collectives).
bool pmlir::kernel_loops::hostOnly(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return isa<CallOpInterface, gpu::MemcpyOp>(nested) || readsHostCopy(nested)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Whether `op` is a load from a buffer on the host's stack (a staged copy
/// of device memory the host reads).
bool pmlir::kernel_loops::readsHostCopy(Operation *op) {
  auto load = dyn_cast<memref::LoadOp>(op);
  return load && load.getMemRef().getDefiningOp<memref::AllocaOp>();
}

/// A loop dimension mapped to `processor`, as gpu-map-parallel-loops maps
/// it (identity map and bound).
gpu::ParallelLoopDimMappingAttr pmlir::kernel_loops::onProcessor(MLIRContext *ctx,
                                                                 gpu::Processor processor) {
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  return gpu::ParallelLoopDimMappingAttr::get(ctx, processor, identity, identity);
}

/// The dimensions of a loop over blocks: the innermost on block_x, the next
/// two on block_y and block_z (the grid's), any further ones looped.
SmallVector<gpu::ParallelLoopDimMappingAttr> pmlir::kernel_loops::onBlocks(MLIRContext *ctx,
                                                                           unsigned rank) {
  const gpu::Processor blocks[] = {gpu::Processor::BlockX, gpu::Processor::BlockY,
                                   gpu::Processor::BlockZ};
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (unsigned d = 0; d < rank; ++d) {
    unsigned fromInnermost = rank - 1 - d;
    mapping.push_back(
        onProcessor(ctx, fromInnermost < 3 ? blocks[fromInnermost] : gpu::Processor::Sequential));
  }
  return mapping;
}

std::optional<std::string> pmlir::kernel_loops::blockSizeProblem(int64_t blockSize) {
  if (blockSize >= 1 && blockSize <= kMaxThreadsPerBlock)
    return std::nullopt;
  return "block-size must be 1 to " + std::to_string(kMaxThreadsPerBlock) +
         " (the threads of a CUDA block), not " + std::to_string(blockSize);
}

std::optional<std::string> pmlir::kernel_loops::reductionBlocksProblem(int64_t reductionBlocks) {
  if (reductionBlocks >= 0)
    return std::nullopt;
  return "reduction-blocks must be 0 (one block a value) or more, not " +
         std::to_string(reductionBlocks);
}

LogicalResult pmlir::kernel_loops::checkBlockSize(Operation *module, int64_t blockSize,
                                                  StringRef pass) {
  if (std::optional<std::string> problem = blockSizeProblem(blockSize))
    return module->emitError() << pass << ": " << *problem;
  return success();
}
