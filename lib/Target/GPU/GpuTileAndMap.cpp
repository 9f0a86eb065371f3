//===- GpuTileAndMap.cpp - Parallel loops on blocks and threads -----------===//
//
// Part of pmlir.
//
// Each top-level parallel loop not mapped yet is tiled and mapped: its
// outer dimensions collapsed into one on block_x, its innermost in tiles of
// `block-size` threads (thread_x) on block_y; a parallel loop nested in
// sequential work runs in the one thread of that work.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "KernelLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-gpu-tile-and-map"

namespace pmlir {
#define GEN_PASS_DEF_GPUTILEANDMAP
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::kernel_loops;

namespace {

struct GpuTileAndMapPass : public pmlir::impl::GpuTileAndMapBase<GpuTileAndMapPass> {
  using GpuTileAndMapBase::GpuTileAndMapBase;

  void runOnOperation() override {
    if (failed(checkBlockSize(getOperation(), blockSize, getArgument())))
      return signalPassFailure();
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(tileAndMap(func)))
        return signalPassFailure();
  }

  /// A parallel loop without results -> a nest of sequential loops.
  static void sequentialize(scf::ParallelOp loop) {
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    SmallVector<Value> ivs;
    Block *body = nullptr;
    for (auto [lower, upper, step] :
         llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto inner = scf::ForOp::create(b, loc, lower, upper, step);
      ivs.push_back(inner.getInductionVar());
      body = inner.getBody();
      b.setInsertionPointToStart(body);
    }
    Block *from = loop.getBody();
    from->getTerminator()->erase();
    body->getOperations().splice(Block::iterator(body->getTerminator()), from->getOperations());
    for (auto [old, iv] : llvm::zip(from->getArguments(), ivs))
      old.replaceAllUsesWith(iv);
    loop.erase();
  }

  /// Tiles each top-level parallel loop for blocks of threads and maps it.
  LogicalResult tileAndMap(func::FuncOp func) {
    SmallVector<scf::ParallelOp> loops;
    func.walk([&](scf::ParallelOp op) {
      if (!op->getParentOfType<scf::ParallelOp>())
        loops.push_back(op);
    });
    MLIRContext *ctx = func.getContext();
    for (scf::ParallelOp loop : loops) {
      // Mapped already: a row reduction's blocks and threads.
      if (loop->hasAttr(gpu::getMappingAttrName()))
        continue;
      // A parallel loop inside another (a row's update in a sequential loop
      // over tokens, as embedding_grad's scatter) runs in its thread.
      SmallVector<scf::ParallelOp> nestedLoops;
      loop.getBody()->walk([&](scf::ParallelOp nested) { nestedLoops.push_back(nested); });
      for (scf::ParallelOp nested : llvm::reverse(nestedLoops))
        sequentialize(nested);
      unsigned rank = loop.getNumLoops();
      // The innermost dimension's extent, where it is a constant.
      int64_t tile = blockSize;
      std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()[rank - 1]);
      std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound()[rank - 1]);
      std::optional<int64_t> step = getConstantIntValue(loop.getStep()[rank - 1]);
      if (lower && upper && step && *step == 1)
        tile = std::max<int64_t>(1, std::min<int64_t>(blockSize, *upper - *lower));
      // The outer dimensions as one, the rows: a grid of rows x tiles of
      // the innermost dimension, every dimension on the grid whatever the
      // rank (the x axis takes 2^31 - 1 blocks, where y and z take 65535).
      if (rank > 2) {
        Operation *after = loop->getNextNode();
        IRRewriter rewriter(ctx);
        rewriter.setInsertionPoint(loop);
        std::vector<unsigned> rows(rank - 1);
        std::iota(rows.begin(), rows.end(), 0u);
        collapseParallelLoops(rewriter, loop, {rows, {rank - 1}});
        loop = cast<scf::ParallelOp>(after->getPrevNode());
        rank = 2;
      }
      SmallVector<int64_t> sizes(rank, 1);
      sizes.back() = tile;
      auto [outer, inner] = scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);
      // The tile's innermost dimension on the block's threads; its others
      // are of extent 1.
      SmallVector<gpu::ParallelLoopDimMappingAttr> innerMap(
          rank - 1, onProcessor(ctx, gpu::Processor::Sequential));
      innerMap.push_back(onProcessor(ctx, gpu::Processor::ThreadX));
      SmallVector<gpu::ParallelLoopDimMappingAttr> outerMap{
          onProcessor(ctx, gpu::Processor::BlockX)};
      if (rank == 2)
        outerMap.push_back(onProcessor(ctx, gpu::Processor::BlockY));
      if (failed(gpu::setMappingAttr(outer, outerMap)) ||
          failed(gpu::setMappingAttr(inner, innerMap)))
        return outer.emitOpError() << "could not be mapped to blocks and threads";
      LLVM_DEBUG(llvm::dbgs() << "mapped a loop of rank " << rank << " in tiles of " << tile
                              << " threads\n");
    }
    return success();
  }
};

} // namespace
