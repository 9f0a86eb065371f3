//===- DeallocAfterLastUse.cpp - Free buffers as soon as they are dead ----===//
//
// Part of pmlir.
//
// Ownership-based deallocation frees a buffer at the end of the block that
// allocated it. In a transformer block that keeps every temporary of the
// block alive at once; moving each free to just after the buffer's last use
// bounds memory by what is live, as an interpreter would.
//
// The ops of a block are numbered once: moving a free renumbers the block
// in MLIR's own order, and asking it after every move made the pass
// quadratic in a block's frees (a training step accumulating 32
// microbatches spent 4 s of its 22 s compile here).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-dealloc-after-last-use"

namespace pmlir {
#define GEN_PASS_DEF_DEALLOCAFTERLASTUSE
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// Where the ops of blocks stand, numbered before any free moves. Only
/// frees move, and each after an op that does not, so the numbers of the
/// others stay true; a free that already moved is not numbered again.
class BlockOrder {
public:
  /// The position of `op` in its block, or nullopt for an op that moved.
  std::optional<unsigned> positionOf(Operation *op) {
    if (moved.contains(op))
      return std::nullopt;
    Block *block = op->getBlock();
    if (numbered.insert(block).second) {
      unsigned next = 0;
      for (Operation &o : *block)
        positions[&o] = next++;
    }
    return positions.lookup(op);
  }
  void markMoved(Operation *op) { moved.insert(op); }

private:
  llvm::DenseSet<Block *> numbered;
  llvm::DenseMap<Operation *, unsigned> positions;
  llvm::DenseSet<Operation *> moved;
};

/// The op in `block` after which the alloc `buffer` and every view of it are
/// no longer used (but by `freeing`, the ops that free it), or null if a
/// view escapes through a terminator or reaches a free that moved (left
/// where it is: a later free is always safe).
Operation *lastUse(Value buffer, ArrayRef<Operation *> freeing, Block *block, BlockOrder &order) {
  SmallVector<Value> aliases = {buffer};
  Operation *last = buffer.getDefiningOp();
  std::optional<unsigned> lastPosition = order.positionOf(last);
  for (unsigned i = 0; i < aliases.size(); ++i) {
    for (Operation *user : aliases[i].getUsers()) {
      if (llvm::is_contained(freeing, user))
        continue;
      Operation *inBlock = block->findAncestorOpInBlock(*user);
      if (!inBlock || inBlock->hasTrait<OpTrait::IsTerminator>())
        return nullptr;
      std::optional<unsigned> position = order.positionOf(inBlock);
      if (!position || !lastPosition)
        return nullptr;
      if (*lastPosition < *position) {
        last = inBlock;
        lastPosition = position;
      }
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
    BlockOrder order;
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
      Operation *last = lastUse(buffer, freeing, dealloc->getBlock(), order);
      std::optional<unsigned> freePosition = order.positionOf(freeing.front());
      std::optional<unsigned> lastPosition = last ? order.positionOf(last) : std::nullopt;
      if (lastPosition && freePosition && *lastPosition < *freePosition) {
        LLVM_DEBUG(llvm::dbgs() << "free of " << buffer.getType() << " moved to after "
                                << last->getName() << "\n");
        for (Operation *op : llvm::reverse(freeing)) {
          op->moveAfter(last);
          order.markMoved(op);
        }
      }
    }
  }
};

} // namespace
