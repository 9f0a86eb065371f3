//===- DeallocAfterLastUse.cpp - Free buffers as soon as they are dead ----===//
//
// Part of pmlir.
//
// Ownership-based deallocation frees a buffer at the end of the block that
// allocated it. In a transformer block that keeps every temporary of the
// block alive at once; moving each free to just after the buffer's last use
// bounds memory by what is live, as an interpreter would.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-dealloc-after-last-use"

namespace pmlir {
#define GEN_PASS_DEF_DEALLOCAFTERLASTUSE
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The op in `block` after which the alloc `buffer` and every view of it are
/// no longer used, or null if a view escapes through a terminator.
Operation *lastUse(Value buffer, Operation *dealloc, Block *block) {
  SmallVector<Value> aliases = {buffer};
  Operation *last = buffer.getDefiningOp();
  for (unsigned i = 0; i < aliases.size(); ++i) {
    for (Operation *user : aliases[i].getUsers()) {
      if (user == dealloc)
        continue;
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (!inBlock || inBlock->hasTrait<OpTrait::IsTerminator>())
        return nullptr;
      if (last->isBeforeInBlock(inBlock))
        last = inBlock;
      if (auto view = dyn_cast<ViewLikeOpInterface>(user);
          view && view.getViewSource() == aliases[i])
        llvm::append_range(aliases, user->getResults());
    }
  }
  return last;
}

struct DeallocAfterLastUsePass
    : public pmlir::impl::DeallocAfterLastUseBase<DeallocAfterLastUsePass> {
  void runOnOperation() override {
    SmallVector<memref::DeallocOp> deallocs;
    getOperation()->walk([&](memref::DeallocOp op) { deallocs.push_back(op); });
    for (memref::DeallocOp dealloc : deallocs) {
      Value buffer = dealloc.getMemref();
      auto alloc = buffer.getDefiningOp<memref::AllocOp>();
      if (!alloc || alloc->getBlock() != dealloc->getBlock())
        continue;
      Operation *last = lastUse(buffer, dealloc, dealloc->getBlock());
      if (last && last->isBeforeInBlock(dealloc)) {
        LLVM_DEBUG(llvm::dbgs() << "free of " << alloc.getType() << " moved to after "
                                << last->getName() << "\n");
        dealloc->moveAfter(last);
      }
    }
  }
};

} // namespace
