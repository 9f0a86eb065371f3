//===- SimplifyFreshDeallocs.cpp - Deallocs of fresh buffers, decided once -===//
//
// Part of pmlir.
//
// Ownership-based deallocation ends each block with one
// bufferization.dealloc of every buffer the block owns, retaining what it
// returns. Upstream's simplification takes such a dealloc apart by asking
// its alias analysis of every pair of buffers, over and over as it splits
// them one at a time, each split carrying the whole retained list: on a
// training step, whose block owns hundreds of buffers and returns a
// hundred and fifty, that took 104 s of a 118 s compile, and it grows with
// the cube of the layers. Most of those buffers are fresh: made by an
// allocation, or returned by a call to a function that returns buffers it
// allocated. Whether another buffer can be a fresh one is a question of
// where it comes from, which this pass answers once per buffer, and so it
// splits those deallocs in one sweep and leaves upstream only the rest.
//
// The sweep asks only what can differ: two fresh buffers are distinct
// unless they are one, so each fresh buffer is weighed against the
// buffers that are not fresh (few: arguments, loop-carried values) and
// counted among the fresh ones, not compared with every other; and where
// a fresh buffer flows is reckoned once for the whole module. Comparing
// every pair made a training step accumulating 32 microbatches spend 5 s
// of a 22 s compile here.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-simplify-fresh-deallocs"

namespace pmlir {
#define GEN_PASS_DEF_SIMPLIFYFRESHDEALLOCS
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The value whose buffer `v` is: through views and base buffers.
Value bufferOf(Value v) {
  while (true) {
    if (auto view = v.getDefiningOp<ViewLikeOpInterface>()) {
      v = view.getViewSource();
      continue;
    }
    if (auto metadata = v.getDefiningOp<memref::ExtractStridedMetadataOp>();
        metadata && v == metadata.getBaseBuffer()) {
      v = metadata.getSource();
      continue;
    }
    return v;
  }
}

bool isAllocation(Value v) {
  auto result = dyn_cast<OpResult>(v);
  return result && hasEffect<MemoryEffects::Allocate>(result.getOwner(), v);
}

/// Where buffers of one module come from.
class BufferOrigins {
public:
  explicit BufferOrigins(ModuleOp module) {
    // Functions whose results are distinct allocations of their own: a
    // call to one makes fresh buffers, as an allocation does.
    module.walk([&](func::FuncOp func) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        return;
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      llvm::SmallPtrSet<Value, 8> seen;
      for (Value v : ret.getOperands())
        if (isa<BaseMemRefType>(v.getType()) &&
            (!isAllocation(bufferOf(v)) || !seen.insert(bufferOf(v)).second))
          return;
      freshReturning.insert(func.getSymNameAttr());
    });
  }

  /// Whether `buffer` is made where it is defined: no other buffer of the
  /// program is it.
  bool isFresh(Value buffer) const {
    if (isAllocation(buffer))
      return true;
    auto call = buffer.getDefiningOp<func::CallOp>();
    return call && freshReturning.contains(call.getCalleeAttr().getAttr());
  }

  /// Whether the buffer `other`, which is not fresh, may be the fresh
  /// buffer `fresh`: where `other` may come from it (through a call it was
  /// passed to, a select, a loop), or `fresh` flows where it cannot be
  /// followed.
  bool mayBe(Value other, Value fresh) {
    if (escapes(fresh) || madeFrom(other).contains(fresh))
      return true;
    // A value `fresh` does not reach was made without it: an argument of
    // the function, or an op none of whose operands hold it.
    if (auto arg = dyn_cast<BlockArgument>(other))
      return !arg.getOwner()->isEntryBlock() ||
             !isa<FunctionOpInterface>(arg.getOwner()->getParentOp());
    return false;
  }

private:
  /// Whether a value flows, through the results of the ops that read it,
  /// transitively, into a region's control flow (a loop's iteration
  /// argument, a branch), beyond this reckoning. Reckoned for every value
  /// it passes, once.
  bool escapes(Value start) {
    if (auto known = escaping.find(start); known != escaping.end())
      return known->second;
    // A return or a free passes the buffer nowhere: neither it nor what it
    // makes (a free's ownership conditions) is followed.
    auto passesOn = [](Operation *user) {
      return !isa<func::ReturnOp, bufferization::DeallocOp, memref::DeallocOp>(user);
    };
    auto leaves = [&](Operation *user) {
      return passesOn(user) &&
             (isa<RegionBranchOpInterface, RegionBranchTerminatorOpInterface, BranchOpInterface>(
                  user) ||
              user->hasTrait<OpTrait::IsTerminator>());
    };
    // Depth first, each value settled after the values its readers make.
    SmallVector<std::pair<Value, bool>> work = {{start, false}};
    while (!work.empty()) {
      auto [v, expanded] = work.pop_back_val();
      if (expanded) {
        bool escaped = false;
        for (Operation *user : v.getUsers()) {
          escaped = leaves(user) ||
                    (passesOn(user) &&
                     llvm::any_of(user->getResults(), [&](Value r) { return escaping.lookup(r); }));
          if (escaped)
            break;
        }
        escaping[v] = escaped;
        continue;
      }
      // Seen already (settled, or on the way: no cycle runs through
      // results alone, but the graph regions of other dialects may).
      if (!escaping.try_emplace(v, false).second)
        continue;
      work.push_back({v, true});
      for (Operation *user : v.getUsers())
        if (passesOn(user) && !leaves(user))
          for (Value r : user->getResults())
            if (!escaping.contains(r))
              work.push_back({r, false});
    }
    return escaping.lookup(start);
  }

  /// The values `v` is made from: the operands of the op defining it, and
  /// theirs, transitively (a region's arguments end the walk: a value
  /// reaches them only through control flow, which escapes).
  const llvm::DenseSet<Value> &madeFrom(Value v) {
    auto [it, inserted] = sources.try_emplace(v);
    llvm::DenseSet<Value> &from = it->second;
    if (!inserted)
      return from;
    SmallVector<Value> work = {v};
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      // A free's ownership conditions are made from no buffer that flows
      // on (escapes() does not follow a buffer into them).
      if (!def || isa<bufferization::DeallocOp>(def))
        continue;
      for (Value operand : def->getOperands())
        if (from.insert(operand).second)
          work.push_back(operand);
    }
    return from;
  }

  llvm::DenseSet<Attribute> freshReturning;
  llvm::DenseMap<Value, bool> escaping;
  llvm::DenseMap<Value, llvm::DenseSet<Value>> sources;
};

/// The buffers of a list of values (a dealloc's memrefs or retained
/// values): which are fresh, how many times each fresh one appears, and
/// which are not fresh.
struct BufferList {
  BufferList(ValueRange values, BufferOrigins &origins) {
    for (Value v : values) {
      Value buffer = bufferOf(v);
      buffers.push_back(buffer);
      fresh.push_back(origins.isFresh(buffer));
    }
  }
  SmallVector<Value> buffers;
  SmallVector<bool> fresh;
};

/// Simplifies `dealloc` where its fresh buffers allow; returns whether it
/// changed anything.
///
/// A retained value whose buffer is fresh and related to every memref is
/// settled: the memrefs that are it leave the list (they are not freed) and
/// its ownership result is the disjunction of their conditions. A memref
/// whose buffer is fresh and distinct from every other memref and retained
/// value is split off into a dealloc of its own.
bool simplify(bufferization::DeallocOp dealloc, BufferOrigins &origins) {
  ValueRange memrefs = dealloc.getMemrefs(), conditions = dealloc.getConditions();
  ValueRange retained = dealloc.getRetained();
  BufferList memrefBuffers(memrefs, origins), retainedBuffers(retained, origins);
  // A fresh buffer is distinct from every other fresh buffer; of the
  // buffers that are not fresh, those listed (`included`) are asked.
  auto noneMayBe = [&](const BufferList &list, Value fresh, auto included) {
    for (auto [i, buffer] : llvm::enumerate(list.buffers))
      if (!list.fresh[i] && included(i) && origins.mayBe(buffer, fresh))
        return false;
    return true;
  };
  auto all = [](size_t) { return true; };
  llvm::DenseMap<Value, SmallVector<unsigned>> memrefsOf;
  for (auto [i, buffer] : llvm::enumerate(memrefBuffers.buffers))
    if (memrefBuffers.fresh[i])
      memrefsOf[buffer].push_back(i);
  llvm::DenseMap<Value, unsigned> retainedCount;
  for (auto [j, buffer] : llvm::enumerate(retainedBuffers.buffers))
    if (retainedBuffers.fresh[j])
      ++retainedCount[buffer];

  // Retained values settled, with the memrefs that are their buffers.
  SmallVector<std::optional<SmallVector<unsigned>>> settled(retained.size());
  llvm::BitVector dropped(memrefs.size());
  for (auto [j, fresh] : llvm::enumerate(retainedBuffers.buffers)) {
    if (!retainedBuffers.fresh[j] || !noneMayBe(memrefBuffers, fresh, all))
      continue;
    SmallVector<unsigned> same = memrefsOf.lookup(fresh);
    // Its memrefs leave the list, so no other retained value may be them.
    if (!same.empty() &&
        (retainedCount.lookup(fresh) > 1 || !noneMayBe(retainedBuffers, fresh, all)))
      continue;
    for (unsigned i : same)
      dropped.set(i);
    settled[j] = std::move(same);
  }
  SmallVector<Value> keptRetained;
  llvm::DenseSet<Value> keptRetainedFresh;
  for (auto [j, value] : llvm::enumerate(retained))
    if (!settled[j]) {
      keptRetained.push_back(value);
      if (retainedBuffers.fresh[j])
        keptRetainedFresh.insert(retainedBuffers.buffers[j]);
    }

  // Memrefs split off: fresh, and neither another memref nor a retained
  // value may be their buffer.
  llvm::DenseMap<Value, unsigned> keptCount;
  for (auto [i, buffer] : llvm::enumerate(memrefBuffers.buffers))
    if (memrefBuffers.fresh[i] && !dropped.test(i))
      ++keptCount[buffer];
  auto keptMemref = [&](size_t i) { return !dropped.test(i); };
  auto keptRetainedValue = [&](size_t j) { return !settled[j]; };
  llvm::BitVector split(memrefs.size());
  for (auto [i, fresh] : llvm::enumerate(memrefBuffers.buffers)) {
    if (dropped.test(i) || !memrefBuffers.fresh[i] || keptCount.lookup(fresh) > 1 ||
        keptRetainedFresh.contains(fresh))
      continue;
    if (noneMayBe(memrefBuffers, fresh, keptMemref) &&
        noneMayBe(retainedBuffers, fresh, keptRetainedValue))
      split.set(i);
  }
  if (dropped.none() && split.none() && keptRetained.size() == retained.size())
    return false;

  OpBuilder b(dealloc);
  Location loc = dealloc.getLoc();
  SmallVector<Value> keptMemrefs, keptConditions;
  for (auto [i, memref] : llvm::enumerate(memrefs)) {
    if (split.test(i))
      bufferization::DeallocOp::create(b, loc, memref, conditions[i], ValueRange());
    else if (!dropped.test(i)) {
      keptMemrefs.push_back(memref);
      keptConditions.push_back(conditions[i]);
    }
  }
  auto rest = bufferization::DeallocOp::create(b, loc, keptMemrefs, keptConditions, keptRetained);
  SmallVector<Value> replacements;
  unsigned next = 0;
  for (auto [j, value] : llvm::enumerate(retained)) {
    if (!settled[j]) {
      replacements.push_back(rest.getUpdatedConditions()[next++]);
      continue;
    }
    Value owned = arith::ConstantOp::create(b, loc, b.getBoolAttr(false));
    for (unsigned i : *settled[j])
      owned = arith::OrIOp::create(b, loc, owned, conditions[i]);
    replacements.push_back(owned);
  }
  LLVM_DEBUG(llvm::dbgs() << "dealloc of " << memrefs.size() << " memrefs retaining "
                          << retained.size() << ": " << split.count() << " split off, "
                          << retained.size() - keptRetained.size() << " retained settled\n");
  dealloc->replaceAllUsesWith(replacements);
  dealloc->erase();
  if (keptMemrefs.empty() && keptRetained.empty())
    rest->erase();
  return true;
}

struct SimplifyFreshDeallocsPass
    : public pmlir::impl::SimplifyFreshDeallocsBase<SimplifyFreshDeallocsPass> {
  void runOnOperation() override {
    SmallVector<bufferization::DeallocOp> deallocs;
    getOperation()->walk([&](bufferization::DeallocOp op) { deallocs.push_back(op); });
    BufferOrigins origins(getOperation());
    bool changed = false;
    for (bufferization::DeallocOp dealloc : deallocs)
      changed |= simplify(dealloc, origins);
    if (!changed)
      markAllAnalysesPreserved();
  }
};

} // namespace
