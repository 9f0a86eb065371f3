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
/// no longer used (but by `freeing`, the ops that free it), or null if a
/// view escapes through a terminator.
Operation *lastUse(Value buffer, ArrayRef<Operation *> freeing, Block *block) {
  SmallVector<Value> aliases = {buffer};
  Operation *last = buffer.getDefiningOp();
  for (unsigned i = 0; i < aliases.size(); ++i) {
    for (Operation *user : aliases[i].getUsers()) {
      if (llvm::is_contained(freeing, user))
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
      // Ownership-based deallocation frees a buffer it did not allocate
      // (a call's result) through its base buffer: the free is the
      // metadata's extraction and the dealloc, moved together.
      SmallVector<Operation *> freeing = {dealloc};
      if (auto metadata = buffer.getDefiningOp<memref::ExtractStridedMetadataOp>();
          metadata && metadata->getBlock() == dealloc->getBlock() &&
          metadata.getBaseBuffer().hasOneUse() &&
          llvm::all_of(metadata->getResults().drop_front(),
                       [](Value v) { return v.use_empty(); })) {
        freeing.insert(freeing.begin(), metadata);
        buffer = metadata.getSource();
      }
      // A buffer of the block's own: allocated there, or returned to it by
      // a call (a transformer block's activations and gradients), which
      // gives it to the caller to free.
      Operation *def = buffer.getDefiningOp();
      if (!def || !isa<memref::AllocOp, func::CallOp>(def) ||
          def->getBlock() != dealloc->getBlock())
        continue;
      Operation *last = lastUse(buffer, freeing, dealloc->getBlock());
      if (last && last->isBeforeInBlock(freeing.front())) {
        LLVM_DEBUG(llvm::dbgs() << "free of " << buffer.getType() << " moved to after "
                                << last->getName() << "\n");
        for (Operation *op : llvm::reverse(freeing))
          op->moveAfter(last);
      }
    }
  }
};

} // namespace
