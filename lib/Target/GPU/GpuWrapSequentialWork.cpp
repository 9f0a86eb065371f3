//===- GpuWrapSequentialWork.cpp - Sequential memory work as one thread ---===//
//
// Part of pmlir.
//
// What still reads or writes memory outside the parallel loops (a
// sequential loop over a scalar, a 0-d update) becomes a one-iteration
// parallel loop: a kernel of one thread. A value read from device memory
// that the host itself uses (a loop bound: the rows of each expert's GEMM)
// is read from a copy on the host, made once before the loops that do not
// write it.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/TypeBytes.h"
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
    copies.clear();
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal() && failed(wrapSequentialWork(func.getBody())))
        return signalPassFailure();
  }

  /// What still reads or writes memory outside the parallel loops becomes a
  /// one-iteration parallel loop: a run of such ops (with the pure ops
  /// between them) one loop. A load of a run whose value the host uses
  /// after it is staged first (stageHostRead), and the runs found again.
  LogicalResult wrapSequentialWork(Region &region) {
    for (Block &block : region) {
      SmallVector<SmallVector<Operation *>> runs = runsOf(block);
      bool staged = false;
      for (ArrayRef<Operation *> ops : runs)
        for (Operation *op : ops)
          if (auto load = dyn_cast<memref::LoadOp>(op); load && usedAfter(load, ops))
            staged |= stageHostRead(load);
      if (staged)
        runs = runsOf(block);
      for (Operation &op : block)
        if (op.getNumRegions() > 0 && !isa<scf::ParallelOp>(op) &&
            llvm::none_of(runs,
                          [&](ArrayRef<Operation *> ops) { return llvm::is_contained(ops, &op); }))
          for (Region &nested : op.getRegions())
            if (failed(wrapSequentialWork(nested)))
              return failure();
      for (ArrayRef<Operation *> ops : runs)
        if (failed(wrap(ops)))
          return failure();
    }
    return success();
  }

  /// The runs of `block`: its ops that read or write memory and can run on
  /// the device, each run with the pure ops between them.
  SmallVector<SmallVector<Operation *>> runsOf(Block &block) {
    SmallVector<SmallVector<Operation *>> runs;
    SmallVector<Operation *> run, between;
    for (Operation &op : block) {
      bool candidate = !isa<scf::ParallelOp>(op) && !op.hasTrait<OpTrait::IsTerminator>() &&
                       touchesMemory(&op) && !hostOnly(&op) &&
                       !isa<memref::AllocOp, memref::DeallocOp, memref::AllocaOp>(op);
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
    }
    if (!run.empty())
      runs.push_back(run);
    return runs;
  }

  /// Whether an op outside `ops` (lifted to their block) uses `op`'s results.
  static bool usedAfter(Operation *op, ArrayRef<Operation *> ops) {
    Block *block = ops.front()->getBlock();
    return llvm::any_of(op->getUsers(), [&](Operation *user) {
      while (user->getBlock() != block && user->getParentOp())
        user = user->getParentOp();
      return !llvm::is_contained(ops, user);
    });
  }

  /// Makes `load` read a copy of its buffer on the host's stack, copied
  /// from the device before the outermost enclosing loop that does not
  /// write the buffer (or right before the load); false where the buffer is
  /// a view or larger than a copy worth making for a few values.
  bool stageHostRead(memref::LoadOp load) {
    static constexpr int64_t kMaxStagedBytes = 64 * 1024;
    MemRefType type = load.getMemRefType();
    Value buffer = load.getMemRef();
    if (!type.getLayout().isIdentity() ||
        pmlir::staticBytes(type).value_or(kMaxStagedBytes + 1) > kMaxStagedBytes)
      return false;
    Operation *at = load;
    while (auto loop = dyn_cast<scf::ForOp>(at->getParentOp())) {
      if (loop->isAncestor(buffer.getParentBlock()->getParentOp()) ||
          mayWrite(loop, baseOf(buffer)))
        break;
      at = loop;
    }
    // A copy made earlier in the same block serves while nothing between
    // it and here may write the buffer (the expert loops of one layer read
    // the same counts).
    for (gpu::MemcpyOp earlier : copies.lookup(buffer)) {
      if (earlier->getBlock() != at->getBlock() || !earlier->isBeforeInBlock(at))
        continue;
      bool written = false;
      for (Operation *op = earlier->getNextNode(); op != at && !written; op = op->getNextNode())
        written = mayWrite(op, baseOf(buffer));
      if (!written) {
        load.getMemrefMutable().assign(earlier.getDst());
        return true;
      }
    }
    auto func = load->getParentOfType<func::FuncOp>();
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    Value copy = memref::AllocaOp::create(b, load.getLoc(), type);
    b.setInsertionPoint(at);
    copies[buffer].push_back(
        gpu::MemcpyOp::create(b, load.getLoc(), Type(), ValueRange{}, copy, buffer));
    load.getMemrefMutable().assign(copy);
    return true;
  }

  /// The host copies made, by the buffer they copy.
  DenseMap<Value, SmallVector<gpu::MemcpyOp>> copies;

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
      if (!usedAfter(op, ops))
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
