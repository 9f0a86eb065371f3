//===- LowerDeallocations.cpp - bufferization.dealloc in registers --------===//
//
// Part of pmlir.
//
// Ownership-based deallocation leaves bufferization.dealloc ops whose
// frees depend on runtime conditions and on which memrefs alias. Upstream
// lowers one of several memrefs through a helper function that reads the
// pointers and conditions from buffers it allocates; on the GPU target
// every allocation is device memory, which the host cannot read. This
// lowering computes the same decisions from the base pointers as integers,
// in registers, with a guarded memref.dealloc per memref.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-lower-deallocations"

namespace pmlir {
#define GEN_PASS_DEF_LOWERDEALLOCATIONS
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// Replaces `op` with its frees and its retained memrefs' ownership.
void lower(bufferization::DeallocOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  // Every pointer is read before anything is freed.
  auto pointersOf = [&](ValueRange memrefs) {
    SmallVector<Value> pointers;
    for (Value memref : memrefs)
      pointers.push_back(memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref));
    return pointers;
  };
  SmallVector<Value> freed = pointersOf(op.getMemrefs());
  SmallVector<Value> retained = pointersOf(op.getRetained());
  Value no = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
  SmallVector<Value> ownership(retained.size(), no);
  for (auto [i, memref] : llvm::enumerate(op.getMemrefs())) {
    Value condition = op.getConditions()[i];
    Value free = condition;
    auto notEqual = [&](Value other) {
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, freed[i], other);
    };
    // A retained alias keeps the buffer, and takes its ownership.
    for (auto [j, pointer] : llvm::enumerate(retained)) {
      Value differs = notEqual(pointer);
      Value same = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, freed[i], pointer);
      ownership[j] = arith::OrIOp::create(b, loc, ownership[j],
                                          arith::AndIOp::create(b, loc, same, condition));
      free = arith::AndIOp::create(b, loc, free, differs);
    }
    // An earlier memref of the same buffer is the one freed (once).
    for (Value earlier : ArrayRef(freed).take_front(i))
      free = arith::AndIOp::create(b, loc, free, notEqual(earlier));
    scf::IfOp::create(b, loc, free, [&](OpBuilder &nested, Location at) {
      memref::DeallocOp::create(nested, at, memref);
      scf::YieldOp::create(nested, at);
    });
  }
  op->replaceAllUsesWith(ownership);
  op->erase();
}

struct LowerDeallocationsPass : public pmlir::impl::LowerDeallocationsBase<LowerDeallocationsPass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation()->walk([&](bufferization::DeallocOp op) { deallocs.push_back(op); });
    for (bufferization::DeallocOp op : deallocs)
      lower(op);
    LLVM_DEBUG(llvm::dbgs() << "lowered " << deallocs.size() << " deallocs\n");
  }
};

} // namespace
