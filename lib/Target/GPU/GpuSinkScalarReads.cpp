//===- GpuSinkScalarReads.cpp - Scalar reads into the loops using them ----===//
//
// Part of pmlir.
//
// A scalar read before the parallel loops (AdamW's step and gradient
// norm), with the pure scalar work on it, moves into each parallel loop
// that uses it: on a GPU the host cannot read device memory.
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

#define DEBUG_TYPE "pmlir-gpu-sink-scalar-reads"

namespace pmlir {
#define GEN_PASS_DEF_GPUSINKSCALARREADS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::kernel_loops;

namespace {

struct GpuSinkScalarReadsPass : public pmlir::impl::GpuSinkScalarReadsBase<GpuSinkScalarReadsPass> {
  using GpuSinkScalarReadsBase::GpuSinkScalarReadsBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        sinkScalarReads(func);
  }

  /// A scalar read outside the parallel loops, with the pure scalar work on
  /// it, moves into each parallel loop that uses it, where nothing between
  /// the read and the loop may write what it reads.
  void sinkScalarReads(func::FuncOp func) {
    SmallVector<memref::LoadOp> loads;
    func.walk([&](memref::LoadOp op) {
      if (!inParallelLoop(op))
        loads.push_back(op);
    });
    for (memref::LoadOp load : loads) {
      Block *block = load->getBlock();
      // The read and the pure scalar ops that depend on it, in order.
      SetVector<Operation *> chain;
      chain.insert(load);
      SetVector<scf::ParallelOp> loops;
      bool movable = true;
      for (size_t i = 0; i < chain.size() && movable; ++i)
        for (Value result : chain[i]->getResults())
          for (Operation *user : result.getUsers()) {
            if (auto loop = user->getParentOfType<scf::ParallelOp>();
                loop && loop->getBlock() == block) {
              loops.insert(loop);
              continue;
            }
            while (user->getBlock() != block && user->getParentOp())
              user = user->getParentOp();
            if (user->getBlock() == block && isPure(user) && user->getNumRegions() == 0 &&
                llvm::none_of(user->getResultTypes(), [](Type t) { return isa<ShapedType>(t); })) {
              chain.insert(user);
              continue;
            }
            movable = false;
          }
      if (!movable || loops.empty())
        continue;
      Value base = baseOf(load.getMemRef());
      bool safe = true;
      for (scf::ParallelOp loop : loops)
        for (Operation *op = load->getNextNode(); op && op != loop.getOperation();
             op = op->getNextNode())
          if (!chain.contains(op) && mayWrite(op, base))
            safe = false;
      if (!safe)
        continue;
      SmallVector<Operation *> ordered(chain.begin(), chain.end());
      llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
      for (scf::ParallelOp loop : loops) {
        OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
        IRMapping mapping;
        for (Operation *op : ordered)
          b.clone(*op, mapping);
        for (Operation *op : ordered)
          for (auto [from, to] : llvm::zip(op->getResults(), mapping.lookup(op)->getResults()))
            from.replaceUsesWithIf(
                to, [&](OpOperand &use) { return loop->isProperAncestor(use.getOwner()); });
      }
      for (Operation *op : llvm::reverse(ordered))
        if (op->use_empty())
          op->erase();
    }
  }
};

} // namespace
