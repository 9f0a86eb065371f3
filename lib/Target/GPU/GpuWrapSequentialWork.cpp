//===- GpuWrapSequentialWork.cpp - Sequential memory work as one thread ---===//
//
// Part of pmlir.
//
// What still reads or writes memory outside the parallel loops (a
// sequential loop over a scalar, a 0-d update) becomes a one-iteration
// parallel loop: a kernel of one thread.
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

#define DEBUG_TYPE "pmlir-gpu-wrap-sequential-work"

namespace pmlir {
#define GEN_PASS_DEF_GPUWRAPSEQUENTIALWORK
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::kernel_loops;

namespace {

struct GpuWrapSequentialWorkPass
    : public pmlir::impl::GpuWrapSequentialWorkBase<GpuWrapSequentialWorkPass> {
  using GpuWrapSequentialWorkBase::GpuWrapSequentialWorkBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(wrapSequentialWork(func.getBody())))
        return signalPassFailure();
  }

  /// What still reads or writes memory outside the parallel loops becomes a
  /// one-iteration parallel loop: a run of such ops (with the pure ops
  /// between them) one loop.
  LogicalResult wrapSequentialWork(Region &region) {
    for (Block &block : region) {
      SmallVector<SmallVector<Operation *>> runs;
      SmallVector<Operation *> run, between;
      for (Operation &op : block) {
        bool candidate = !isa<scf::ParallelOp>(op) && !op.hasTrait<OpTrait::IsTerminator>() &&
                         touchesMemory(&op) && !hostOnly(&op) &&
                         !isa<memref::AllocOp, memref::DeallocOp>(op);
        if (candidate) {
          llvm::append_range(run, between);
          between.clear();
          run.push_back(&op);
          continue;
        }
        if (!run.empty() && isPure(&op) && op.getNumRegions() == 0) {
          between.push_back(&op);
          continue;
        }
        between.clear();
        if (!run.empty())
          runs.push_back(std::exchange(run, {}));
        if (op.getNumRegions() > 0 && !isa<scf::ParallelOp>(op))
          for (Region &nested : op.getRegions())
            if (failed(wrapSequentialWork(nested)))
              return failure();
      }
      if (!run.empty())
        runs.push_back(run);
      for (ArrayRef<Operation *> ops : runs)
        if (failed(wrap(ops)))
          return failure();
    }
    return success();
  }

  LogicalResult wrap(ArrayRef<Operation *> ops) {
    Operation *first = ops.front();
    OpBuilder b(first);
    Location loc = first->getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{one}, ValueRange{one});
    // A pure op of the run the host uses after it is computed before the
    // loop as well; a memory op's result cannot leave the kernel.
    IRMapping before;
    for (Operation *op : ops) {
      bool usedAfter = llvm::any_of(op->getUsers(), [&](Operation *user) {
        while (user->getBlock() != first->getBlock() && user->getParentOp())
          user = user->getParentOp();
        return !llvm::is_contained(ops, user);
      });
      if (!usedAfter)
        continue;
      if (!isPure(op) || llvm::any_of(op->getOperands(), [&](Value v) {
            return v.getDefiningOp() && llvm::is_contained(ops, v.getDefiningOp()) &&
                   !before.contains(v);
          })) {
        InFlightDiagnostic diag = op->emitOpError()
                                  << "has no GPU lowering: it reads device memory on the host, "
                                     "which uses its result";
        return diag;
      }
      Operation *copy = b.clone(*op, before);
      for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
        from.replaceUsesWithIf(to, [&](OpOperand &use) {
          Operation *user = use.getOwner();
          while (user->getBlock() != first->getBlock() && user->getParentOp())
            user = user->getParentOp();
          return !llvm::is_contained(ops, user);
        });
    }
    Operation *yield = loop.getBody()->getTerminator();
    for (Operation *op : ops)
      op->moveBefore(yield);
    return success();
  }
};

} // namespace
