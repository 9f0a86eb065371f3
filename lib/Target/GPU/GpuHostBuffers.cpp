//===- GpuHostBuffers.cpp - Device buffers on the rank's stream -----------===//
//
// Part of pmlir.
//
// After the loops are kernels, a host function only allocates, frees,
// launches and calls the runtime. Its allocations become device
// allocations and every GPU op is made async on a token chain: the tokens
// stand for the runtime's one stream per rank (mgpuStreamCreate returns it),
// which the cuBLASLt GEMMs and NCCL collectives the runtime calls issue on
// as well, so the whole program is ordered by that one stream and only the
// entry function waits for it, and the host where it reads a copy of device
// memory.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "pmlir/Runtime/RuntimeAbi.h"

#include "KernelLoops.h"

#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-gpu-host-buffers"

namespace pmlir {
#define GEN_PASS_DEF_GPUHOSTBUFFERS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// Whether `op` itself reads or writes memory.
bool readsOrWrites(Operation *op) {
  auto effects = dyn_cast<MemoryEffectOpInterface>(op);
  if (!effects)
    return false;
  SmallVector<MemoryEffects::EffectInstance> instances;
  effects.getEffects(instances);
  return llvm::any_of(instances, [](const MemoryEffects::EffectInstance &e) {
    return isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect());
  });
}

/// Whether `use` is an operand the runtime reads on the host: the mesh axes
/// (AXES in RuntimeAbi.def) of a call of one of its entries.
bool readOnHost(OpOperand &use) {
  auto call = dyn_cast<func::CallOp>(use.getOwner());
  if (!call)
    return false;
  const pmlir::rt::abi::Entry *entry = pmlir::rt::abi::entryOfSymbol(call.getCallee());
  unsigned index = use.getOperandNumber();
  return entry && index < entry->params.size() && entry->params[index] == pmlir::rt::abi::AXES;
}

/// Whether every use of `value` reads it on the host, directly or through a
/// memref.cast (pmlir-lower-shard-to-runtime makes one cast of the axes for
/// each call, so a cast is read either on the host or on the device).
bool onlyReadOnHost(Value value) {
  return llvm::all_of(value.getUses(), [](OpOperand &use) {
    if (auto cast = dyn_cast<memref::CastOp>(use.getOwner()))
      return onlyReadOnHost(cast.getResult());
    return readOnHost(use);
  });
}

struct GpuHostBuffersPass : public pmlir::impl::GpuHostBuffersBase<GpuHostBuffersPass> {
  using GpuHostBuffersBase::GpuHostBuffersBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(lowerRegion(func.getBody(), func.getSymName() == entry)))
        return signalPassFailure();
    }
  }

  Type tokenType() { return gpu::AsyncTokenType::get(&getContext()); }

  /// Lowers the ops of `region`; in the entry function (`waits`), each
  /// return waits for the stream first, so that the caller reads results
  /// that are complete.
  LogicalResult lowerRegion(Region &region, bool waits) {
    for (Block &block : region) {
      // The block's chain, started at its first GPU op.
      Value token;
      auto next = [&](OpBuilder &b, Location loc) {
        if (!token)
          token = gpu::WaitOp::create(b, loc, tokenType(), ValueRange{}).getAsyncToken();
        return token;
      };
      for (Operation &op : llvm::make_early_inc_range(block)) {
        OpBuilder b(&op);
        Location loc = op.getLoc();
        if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
          auto device = gpu::AllocOp::create(b, loc, alloc.getType(), tokenType(),
                                             ValueRange{next(b, loc)}, alloc.getDynamicSizes(),
                                             alloc.getSymbolOperands(), /*hostShared=*/false);
          token = device.getAsyncToken();
          alloc.getResult().replaceAllUsesWith(device.getMemref());
          alloc.erase();
        } else if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
          token = gpu::DeallocOp::create(b, loc, tokenType(), ValueRange{next(b, loc)},
                                         dealloc.getMemref())
                      .getAsyncToken();
          dealloc.erase();
        } else if (auto global = dyn_cast<memref::GetGlobalOp>(op)) {
          // A constant of the program: a device copy for this call, freed
          // before the function returns, for the uses that read it on the
          // device; the runtime reads mesh axes on the host.
          if (onlyReadOnHost(global.getResult()))
            continue;
          b.setInsertionPointAfter(global);
          auto device =
              gpu::AllocOp::create(b, loc, global.getType(), tokenType(), ValueRange{next(b, loc)},
                                   ValueRange{}, ValueRange{}, /*hostShared=*/false);
          global.getResult().replaceUsesWithIf(device.getMemref(), [](OpOperand &use) {
            if (auto cast = dyn_cast<memref::CastOp>(use.getOwner()))
              return !onlyReadOnHost(cast.getResult());
            return !readOnHost(use);
          });
          token = gpu::MemcpyOp::create(b, loc, tokenType(), ValueRange{device.getAsyncToken()},
                                        device.getMemref(), global.getResult())
                      .getAsyncToken();
          OpBuilder end(block.getTerminator());
          Value last = gpu::WaitOp::create(end, loc, tokenType(), ValueRange{}).getAsyncToken();
          gpu::DeallocOp::create(end, loc, tokenType(), ValueRange{last}, device.getMemref());
        } else if (auto copy = dyn_cast<gpu::MemcpyOp>(op); copy && !copy.getAsyncToken()) {
          // A copy the host reads (pmlir-gpu-wrap-sequential-work stages
          // the values it needs): on the stream, which the host then waits
          // for.
          token = gpu::MemcpyOp::create(b, loc, tokenType(), ValueRange{next(b, loc)},
                                        copy.getDst(), copy.getSrc())
                      .getAsyncToken();
          gpu::WaitOp::create(b, loc, Type(), ValueRange{token});
          copy.erase();
        } else if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
          if (launch.getAsyncToken())
            continue;
          auto async = gpu::LaunchFuncOp::create(
              b, loc, launch.getKernel(), launch.getGridSizeOperandValues(),
              launch.getBlockSizeOperandValues(), launch.getDynamicSharedMemorySize(),
              launch.getKernelOperands(), tokenType(), ValueRange{next(b, loc)});
          token = async.getAsyncToken();
          launch.erase();
        } else if (isa<func::ReturnOp>(op) && waits) {
          gpu::WaitOp::create(b, loc, Type(), ValueRange{next(b, loc)});
        } else if (op.getNumRegions() > 0) {
          for (Region &nested : op.getRegions())
            if (failed(lowerRegion(nested, waits)))
              return failure();
        } else if (readsOrWrites(&op) && !isa<CallOpInterface>(op) &&
                   !pmlir::kernel_loops::readsHostCopy(&op) &&
                   op.getDialect() != b.getContext()->getLoadedDialect<gpu::GPUDialect>()) {
          return op.emitOpError() << "has no GPU lowering: it would read or write device memory "
                                     "on the host";
        }
      }
    }
    return success();
  }
};

} // namespace
