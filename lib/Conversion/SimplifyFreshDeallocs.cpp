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

enum class Relation { Same, Distinct, Unknown };

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

  /// How the buffer of `v` relates to the fresh buffer `fresh`: the same,
  /// distinct, or unknown where `v` may come from it (through a call it
  /// was passed to, a select, a loop).
  Relation relate(Value v, Value fresh) {
    Value buffer = bufferOf(v);
    if (buffer == fresh)
      return Relation::Same;
    if (isFresh(buffer))
      return Relation::Distinct;
    const Reach &reach = reachOf(fresh);
    if (reach.escapes || reach.values.contains(buffer))
      return Relation::Unknown;
    // A value `fresh` does not reach was made without it: an argument of
    // the function, or an op none of whose operands hold it.
    if (auto arg = dyn_cast<BlockArgument>(buffer))
      return arg.getOwner()->isEntryBlock() &&
                     isa<FunctionOpInterface>(arg.getOwner()->getParentOp())
                 ? Relation::Distinct
                 : Relation::Unknown;
    return Relation::Distinct;
  }

private:
  /// The values a fresh buffer may flow into beyond its views: every result
  /// of an op that reads it, transitively. A buffer passed into a region's
  /// control flow (a loop's iteration argument, a branch) escapes this
  /// reckoning.
  struct Reach {
    llvm::DenseSet<Value> values;
    bool escapes = false;
  };

  const Reach &reachOf(Value fresh) {
    auto [it, inserted] = reaches.try_emplace(fresh);
    Reach &reach = it->second;
    if (!inserted)
      return reach;
    SmallVector<Value> work = {fresh};
    llvm::SmallPtrSet<Value, 16> visited = {fresh};
    while (!work.empty() && !reach.escapes) {
      Value v = work.pop_back_val();
      for (Operation *user : v.getUsers()) {
        if (isa<func::ReturnOp, bufferization::DeallocOp, memref::DeallocOp>(user))
          continue;
        if (isa<RegionBranchOpInterface, RegionBranchTerminatorOpInterface, BranchOpInterface>(
                user) ||
            user->hasTrait<OpTrait::IsTerminator>()) {
          reach.escapes = true;
          break;
        }
        for (Value result : user->getResults())
          if (visited.insert(result).second) {
            reach.values.insert(result);
            work.push_back(result);
          }
      }
    }
    return reach;
  }

  llvm::DenseSet<Attribute> freshReturning;
  llvm::DenseMap<Value, Reach> reaches;
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
  auto relatedToAll = [&](ValueRange values, Value fresh, std::optional<size_t> skip,
                          SmallVectorImpl<unsigned> *same) {
    for (auto [i, v] : llvm::enumerate(values)) {
      if (skip && i == *skip)
        continue;
      Relation relation = origins.relate(v, fresh);
      if (relation == Relation::Unknown || (relation == Relation::Same && !same))
        return false;
      if (relation == Relation::Same)
        same->push_back(i);
    }
    return true;
  };

  // Retained values settled, with the memrefs that are their buffers.
  SmallVector<std::optional<SmallVector<unsigned>>> settled(retained.size());
  llvm::BitVector dropped(memrefs.size());
  for (auto [j, kept] : llvm::enumerate(retained)) {
    Value fresh = bufferOf(kept);
    SmallVector<unsigned> same;
    // Its memrefs leave the list, so no other retained value may be them.
    if (!origins.isFresh(fresh) || !relatedToAll(memrefs, fresh, std::nullopt, &same) ||
        (!same.empty() && !relatedToAll(retained, fresh, j, nullptr)))
      continue;
    for (unsigned i : same)
      dropped.set(i);
    settled[j] = std::move(same);
  }
  SmallVector<Value> keptRetained;
  for (auto [j, value] : llvm::enumerate(retained))
    if (!settled[j])
      keptRetained.push_back(value);

  // Memrefs split off: fresh, and neither another memref nor a retained
  // value may be their buffer.
  llvm::BitVector split(memrefs.size());
  for (auto [i, memref] : llvm::enumerate(memrefs)) {
    Value fresh = bufferOf(memref);
    if (dropped.test(i) || !origins.isFresh(fresh))
      continue;
    SmallVector<Value> others;
    for (auto [k, other] : llvm::enumerate(memrefs))
      if (k != i && !dropped.test(k))
        others.push_back(other);
    if (relatedToAll(others, fresh, std::nullopt, nullptr) &&
        relatedToAll(keptRetained, fresh, std::nullopt, nullptr))
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
