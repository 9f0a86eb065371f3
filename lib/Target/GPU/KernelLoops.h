//===- KernelLoops.h - The kernel-loop passes' helpers ----------*- C++ -*-===//
//
// Part of pmlir.
//
// What the passes that make a host function's memory work into parallel
// loops for kernels share (pmlir-gpu-reduction-kernels,
// pmlir-gpu-parallel-loops, pmlir-gpu-scatter-by-columns,
// pmlir-gpu-sink-scalar-reads, pmlir-gpu-wrap-sequential-work,
// pmlir-gpu-tile-and-map): the buffers views look into, what an op may
// read or write, and the mappings of loops to blocks and threads.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_TARGET_GPU_KERNELLOOPS_H
#define PMLIR_LIB_TARGET_GPU_KERNELLOOPS_H

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/Operation.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace pmlir::kernel_loops {

/// The buffer a view (subview, cast, reshape) looks into.
mlir::Value baseOf(mlir::Value v);

/// Whether `op` is inside an scf.parallel.
bool inParallelLoop(mlir::Operation *op);

/// Whether `op` (or anything nested in it) may write the buffer `base`.
bool mayWrite(mlir::Operation *op, mlir::Value base);

/// Whether `op` reads or writes memory (allocation and freeing aside, which
/// the host does).
bool touchesMemory(mlir::Operation *op);

/// Whether `op` (or anything nested) must stay on the host: a call (the
/// runtime's GEMMs and collectives), a copy between the device and the
/// host, a read of such a copy.
bool hostOnly(mlir::Operation *op);

/// Whether `op` is a load from a buffer on the host's stack (a staged copy
/// of device memory the host reads).
bool readsHostCopy(mlir::Operation *op);

/// A loop dimension mapped to `processor`, as gpu-map-parallel-loops maps
/// it (identity map and bound).
mlir::gpu::ParallelLoopDimMappingAttr onProcessor(mlir::MLIRContext *ctx,
                                                  mlir::gpu::Processor processor);

/// The dimensions of a loop over blocks: the innermost on block_x, the next
/// two on block_y and block_z (the grid's), any further ones looped.
llvm::SmallVector<mlir::gpu::ParallelLoopDimMappingAttr> onBlocks(mlir::MLIRContext *ctx,
                                                                  unsigned rank);

/// The most threads a CUDA block runs.
inline constexpr int64_t kMaxThreadsPerBlock = 1024;

/// Why `blockSize` is no block's thread count (1 to kMaxThreadsPerBlock),
/// or nullopt.
std::optional<std::string> blockSizeProblem(int64_t blockSize);

/// Why `reductionBlocks` spreads no reduction (below 0), or nullopt.
std::optional<std::string> reductionBlocksProblem(int64_t reductionBlocks);

/// Fails with a diagnostic on `module` naming `pass` where `blockSize` is
/// no block's thread count.
mlir::LogicalResult checkBlockSize(mlir::Operation *module, int64_t blockSize,
                                   llvm::StringRef pass);

} // namespace pmlir::kernel_loops

#endif // PMLIR_LIB_TARGET_GPU_KERNELLOOPS_H
