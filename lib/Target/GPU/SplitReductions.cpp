//===- SplitReductions.cpp - One reduction a result ------------------------===//
//
// Part of pmlir.
//
// A GPU runs a reduction into one value on blocks of threads
// (pmlir-gpu-kernel-loops); one into several values it would run in one
// thread, in order. Where the values do not depend on one another (a loss's
// sum and its count of tokens), each is a reduction of its own.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-gpu-split-reductions"

namespace pmlir {
#define GEN_PASS_DEF_GPUSPLITREDUCTIONS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The body ops each yielded value of `op` needs (in `needs`, one set a
/// result), or failure where one reads another result's accumulator or
/// needs an op with regions.
LogicalResult opsOfEachResult(linalg::GenericOp op, SmallVector<SetVector<Operation *>> &needs) {
  Block &body = op.getRegion().front();
  unsigned inputs = op.getNumDpsInputs();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  needs.assign(op.getNumDpsInits(), {});
  for (auto [i, value] : llvm::enumerate(yield.getValues())) {
    SmallVector<Value> work{value};
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (auto arg = dyn_cast<BlockArgument>(v)) {
        if (arg.getOwner() == &body && arg.getArgNumber() >= inputs &&
            arg.getArgNumber() != inputs + i)
          return failure();
        continue;
      }
      Operation *def = v.getDefiningOp();
      if (def->getBlock() != &body)
        continue;
      if (def->getNumRegions() != 0)
        return failure();
      if (needs[i].insert(def))
        llvm::append_range(work, def->getOperands());
    }
  }
  return success();
}

struct GpuSplitReductionsPass : public pmlir::impl::GpuSplitReductionsBase<GpuSplitReductionsPass> {
  void runOnOperation() override {
    SmallVector<linalg::GenericOp> generics;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (op.hasPureTensorSemantics() && op.getNumDpsInits() > 1 && op.getNumReductionLoops() > 0)
        generics.push_back(op);
    });
    for (linalg::GenericOp op : generics) {
      SmallVector<SetVector<Operation *>> needs;
      if (failed(opsOfEachResult(op, needs)))
        continue;
      Block &body = op.getRegion().front();
      unsigned inputs = op.getNumDpsInputs();
      auto yield = cast<linalg::YieldOp>(body.getTerminator());
      SmallVector<AffineMap> maps = op.getIndexingMapsArray();
      OpBuilder b(op);
      SmallVector<Value> results;
      for (auto [i, init] : llvm::enumerate(op.getDpsInits())) {
        SmallVector<AffineMap> ownMaps(ArrayRef<AffineMap>(maps).take_front(inputs));
        ownMaps.push_back(maps[inputs + i]);
        auto split = linalg::GenericOp::create(
            b, op.getLoc(), TypeRange{init.getType()}, op.getDpsInputs(), ValueRange{init}, ownMaps,
            op.getIteratorTypesArray(), [&, i = i](OpBuilder &nb, Location loc, ValueRange args) {
              IRMapping mapping;
              for (unsigned k = 0; k < inputs; ++k)
                mapping.map(body.getArgument(k), args[k]);
              mapping.map(body.getArgument(inputs + i), args.back());
              // In the body's order, which defines before use.
              for (Operation &bodyOp : body.without_terminator())
                if (needs[i].contains(&bodyOp))
                  nb.clone(bodyOp, mapping);
              linalg::YieldOp::create(nb, loc,
                                      ValueRange{mapping.lookupOrDefault(yield.getValues()[i])});
            });
        results.push_back(split.getResult(0));
      }
      LLVM_DEBUG(llvm::dbgs() << "split a reduction into " << results.size() << " at "
                              << op.getLoc() << "\n");
      op->replaceAllUsesWith(results);
      op.erase();
    }
  }
};

} // namespace
