//===- GpuParallelLoops.cpp - Linalg ops and copies as parallel loops -----===//
//
// Part of pmlir.
//
// Every linalg op on buffers becomes a parallel loop over its parallel
// dimensions (outermost) with its reductions sequential inside; a
// memref.copy a parallel loop of loads and stores.
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

#define DEBUG_TYPE "pmlir-gpu-parallel-loops"

namespace pmlir {
#define GEN_PASS_DEF_GPUPARALLELLOOPS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::kernel_loops;

namespace {

struct GpuParallelLoopsPass : public pmlir::impl::GpuParallelLoopsBase<GpuParallelLoopsPass> {
  using GpuParallelLoopsBase::GpuParallelLoopsBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      if (failed(toParallelLoops(func)))
        return signalPassFailure();
      lowerCopies(func);
    }
  }

  /// Each linalg op on buffers -> a nest with its parallel dimensions
  /// outermost, as one scf.parallel (their threads), and its reduction
  /// dimensions inside, as scf.for loops (each thread's own sum): a
  /// reduction over the batch of a per-column sum (a norm's weight
  /// gradient) would otherwise put the parallel loop inside sequential
  /// ones.
  LogicalResult toParallelLoops(func::FuncOp func) {
    SmallVector<linalg::LinalgOp> ops;
    func.walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(func.getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
        SmallVector<unsigned> order;
        SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
        for (auto [i, it] : llvm::enumerate(iterators))
          if (it == utils::IteratorType::parallel)
            order.push_back(i);
        for (auto [i, it] : llvm::enumerate(iterators))
          if (it != utils::IteratorType::parallel)
            order.push_back(i);
        if (!llvm::equal(order, llvm::seq<unsigned>(0, order.size()))) {
          FailureOr<linalg::GenericOp> interchanged =
              linalg::interchangeGenericOp(rewriter, generic, order);
          if (failed(interchanged))
            return generic.emitOpError() << "could not put its parallel loops outermost";
          op = *interchanged;
        }
      }
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
        return op->emitOpError() << "has no GPU lowering: it is no loop nest";
      rewriter.eraseOp(op);
    }
    return success();
  }

  /// memref.copy -> a parallel loop of loads and stores (a 0-d copy: one
  /// load and store, wrapped later).
  void lowerCopies(func::FuncOp func) {
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp op) {
      if (!inParallelLoop(op))
        copies.push_back(op);
    });
    for (memref::CopyOp op : copies) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value from = op.getSource(), to = op.getTarget();
      auto type = cast<MemRefType>(from.getType());
      if (type.getRank() == 0) {
        Value v = memref::LoadOp::create(b, loc, from, ValueRange{});
        memref::StoreOp::create(b, loc, v, to, ValueRange{});
        op.erase();
        continue;
      }
      SmallVector<Value> lower, upper, steps;
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      for (int64_t d = 0; d < type.getRank(); ++d) {
        lower.push_back(zero);
        steps.push_back(one);
        upper.push_back(
            type.isDynamicDim(d)
                ? memref::DimOp::create(b, loc, from, d).getResult()
                : arith::ConstantIndexOp::create(b, loc, type.getDimSize(d)).getResult());
      }
      scf::ParallelOp::create(b, loc, lower, upper, steps,
                              [&](OpBuilder &nb, Location l, ValueRange ivs) {
                                Value v = memref::LoadOp::create(nb, l, from, ivs);
                                memref::StoreOp::create(nb, l, v, to, ivs);
                              });
      op.erase();
    }
  }
};

} // namespace
