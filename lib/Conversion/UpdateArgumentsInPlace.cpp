//===- UpdateArgumentsInPlace.cpp - Updated results into their arguments --===//
//
// Part of pmlir.
//
// A training step returns the new parameters and optimizer state; the
// caller runs the next step on the same buffers, so the compiled step
// writes them there instead of returning new buffers, and memory holds one
// copy of the model state.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-update-arguments-in-place"

namespace pmlir {
#define GEN_PASS_DEF_UPDATEARGUMENTSINPLACE
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

/// `v` through the casts bufferization may put on a returned argument.
Value throughCasts(Value v) {
  while (auto cast = v.getDefiningOp<memref::CastOp>())
    v = cast.getSource();
  return v;
}

struct UpdateArgumentsInPlacePass
    : public pmlir::impl::UpdateArgumentsInPlaceBase<UpdateArgumentsInPlacePass> {
  using UpdateArgumentsInPlaceBase::UpdateArgumentsInPlaceBase;

  void runOnOperation() override {
    auto func = getOperation().lookupSymbol<func::FuncOp>(entry);
    if (!func || func.isExternal())
      return;
    auto ret = cast<func::ReturnOp>(func.getBody().back().getTerminator());
    OpBuilder b(ret);
    llvm::BitVector dropped(func.getNumResults());
    unsigned copies = 0;
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto updates = func.getResultAttrOfType<IntegerAttr>(i, kUpdatesAttr);
      if (!updates)
        continue;
      int64_t arg = updates.getInt();
      if (arg < 0 || arg >= func.getNumArguments() ||
          !isa<MemRefType>(func.getArgument(arg).getType()) ||
          !isa<MemRefType>(ret.getOperand(i).getType())) {
        func.emitOpError() << "result #" << i << " updates argument #" << arg
                           << ", which is no buffer the result can be written into";
        return signalPassFailure();
      }
      Value target = func.getArgument(arg);
      if (throughCasts(ret.getOperand(i)) != target) {
        memref::CopyOp::create(b, ret.getLoc(), ret.getOperand(i), target);
        ++copies;
      }
      dropped.set(i);
    }
    if (dropped.none())
      return;
    ret->eraseOperands(dropped);
    if (failed(func.eraseResults(dropped)))
      return signalPassFailure();
    LLVM_DEBUG(llvm::dbgs() << "@" << entry << ": " << dropped.count()
                            << " results written into their arguments, " << copies
                            << " of them by a copy\n");
  }
};

} // namespace
