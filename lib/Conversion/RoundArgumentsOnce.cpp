//===- RoundArgumentsOnce.cpp - bf16 weights rounded by the caller --------===//
//
// Part of pmlir.
//
// pmlir-store-bf16 rounds each weight to bf16 where the program starts (in
// the entry, or in the layer function that receives it), on every call. A
// forward's weights do not change between calls, so their roundings move
// out of the program into the caller, who rounds once at binding: first
// out of the private functions into their calls, then out of the entry
// into arguments of its own (pmlir/Conversion/RoundedArguments.h). A
// training step's weights change only in its own AdamW loop, which then
// writes their next bf16 forms as it writes them.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "pmlir/Conversion/Bf16Rounding.h"
#include "pmlir/Conversion/RoundedArguments.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-round-arguments-once"

namespace pmlir {
#define GEN_PASS_DEF_ROUNDARGUMENTSONCE
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The roundings of `v`: of the whole value, or of a slice of it.
SmallVector<linalg::GenericOp> roundingsOf(Value v) {
  SmallVector<linalg::GenericOp> found;
  auto collect = [&](Value of) {
    for (Operation *user : of.getUsers())
      if (auto generic = dyn_cast<linalg::GenericOp>(user);
          generic && pmlir::isBf16Rounding(generic))
        found.push_back(generic);
  };
  collect(v);
  for (Operation *user : v.getUsers())
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(user); slice && slice.getSource() == v)
      collect(slice.getResult());
  return found;
}

/// Replaces each rounding of `v` by `rounded` (v's bf16 form), or a slice
/// of it where the rounding was of a slice.
void replaceRoundings(OpBuilder &b, Value v, Value rounded) {
  for (linalg::GenericOp rounding : roundingsOf(v)) {
    Value input = rounding.getDpsInputs()[0];
    Value replacement = rounded;
    if (auto slice = input.getDefiningOp<tensor::ExtractSliceOp>()) {
      b.setInsertionPoint(rounding);
      auto type = cast<RankedTensorType>(rounding.getResult(0).getType());
      replacement =
          tensor::ExtractSliceOp::create(b, slice.getLoc(), type, rounded, slice.getMixedOffsets(),
                                         slice.getMixedSizes(), slice.getMixedStrides());
    }
    rounding.getResult(0).replaceAllUsesWith(replacement);
    Operation *init = rounding.getDpsInits()[0].getDefiningOp();
    rounding.erase();
    // What only the rounding read (its tensor.empty, the f32 slice).
    for (Operation *dead : {init, input.getDefiningOp<tensor::ExtractSliceOp>().getOperation()})
      if (dead && dead->use_empty())
        dead->erase();
  }
}

/// One rounding of the whole of `v` in each block that rounds it more than
/// once, the block's first: the others' readers read it.
void shareRoundings(Value v) {
  llvm::MapVector<Block *, SmallVector<linalg::GenericOp>> byBlock;
  for (linalg::GenericOp rounding : roundingsOf(v))
    if (rounding.getDpsInputs()[0] == v) // not a slice's
      byBlock[rounding->getBlock()].push_back(rounding);
  for (auto &[block, roundings] : byBlock) {
    linalg::GenericOp first = roundings.front();
    for (linalg::GenericOp r : roundings)
      if (r->isBeforeInBlock(first))
        first = r;
    for (linalg::GenericOp r : roundings) {
      if (r == first)
        continue;
      r.getResult(0).replaceAllUsesWith(first.getResult(0));
      Operation *init = r.getDpsInits()[0].getDefiningOp();
      r.erase();
      if (init && init->use_empty())
        init->erase();
    }
  }
}

/// The result of `entry` that updates its argument #`arg` (tfm.updates),
/// where exactly one does.
std::optional<unsigned> resultUpdating(func::FuncOp entry, unsigned arg) {
  std::optional<unsigned> found;
  for (unsigned r = 0; r < entry.getNumResults(); ++r) {
    auto updates = entry.getResultAttrOfType<IntegerAttr>(r, pmlir::tfm::kUpdatesAttr);
    if (!updates || updates.getInt() != static_cast<int64_t>(arg))
      continue;
    if (found)
      return std::nullopt;
    found = r;
  }
  return found;
}

/// The elementwise generic that computes `updated` (a training step's new
/// weight, AdamW's loop), where it can round what it writes too: every loop
/// parallel, `updated` written whole through an identity map.
linalg::GenericOp updateLoop(Value updated) {
  auto loop = updated.getDefiningOp<linalg::GenericOp>();
  if (!loop || loop.getLibraryCall() || loop.getNumLoops() == 0 ||
      !llvm::all_of(loop.getIteratorTypesArray(),
                    [](utils::IteratorType t) { return t == utils::IteratorType::parallel; }))
    return {};
  auto result = cast<OpResult>(updated);
  if (!loop.getIndexingMapMatchingResult(result).isIdentity())
    return {};
  return loop;
}

/// Grows `loop` by one output, `into`: the bf16 rounding of its result #k
/// (the body's `arith.truncf` of what it yields there, as
/// pmlir::buildBf16Rounding's). Returns that output's value.
Value roundAlongside(OpBuilder &b, linalg::GenericOp loop, unsigned k, Value into) {
  b.setInsertionPoint(loop);
  SmallVector<Value> inits(loop.getDpsInits());
  inits.push_back(into);
  SmallVector<Type> types(loop->getResultTypes());
  types.push_back(into.getType());
  SmallVector<AffineMap> maps = loop.getIndexingMapsArray();
  maps.push_back(loop.getIndexingMapMatchingResult(loop->getResult(k)));
  auto grown = linalg::GenericOp::create(b, loop.getLoc(), types, loop.getDpsInputs(), inits, maps,
                                         loop.getIteratorTypesArray());
  grown->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  grown.getRegion().takeBody(loop.getRegion());
  Block *body = grown.getBody();
  body->addArgument(b.getBF16Type(), loop.getLoc());
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  b.setInsertionPoint(yield);
  Value rounded = arith::TruncFOp::create(b, yield.getLoc(), b.getBF16Type(), yield.getOperand(k));
  yield->insertOperands(yield->getNumOperands(), rounded);
  for (unsigned r = 0; r < loop->getNumResults(); ++r)
    loop->getResult(r).replaceAllUsesWith(grown->getResult(r));
  loop.erase();
  return grown->getResults().back();
}

struct RoundArgumentsOncePass : public pmlir::impl::RoundArgumentsOnceBase<RoundArgumentsOncePass> {
  using RoundArgumentsOnceBase::RoundArgumentsOnceBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto entryFunc = module.lookupSymbol<func::FuncOp>(entry);
    if (!entryFunc || entryFunc.isExternal()) {
      LLVM_DEBUG(llvm::dbgs() << "no entry function @" << entry << "\n");
      return;
    }
    // The values that hold an argument of the entry on every call: the
    // arguments themselves, and the parameters of private functions that
    // every call passes one of them. An argument a result updates is one
    // value too: the step reads it before it writes its buffer (a training
    // step's forward and backward read each weight before AdamW updates
    // it), so one rounding of it serves every call.
    llvm::DenseSet<Value> fromEntry;
    for (BlockArgument arg : entryFunc.getArguments())
      if (pmlir::f32Tensor(arg.getType()))
        fromEntry.insert(arg);
    llvm::DenseMap<func::FuncOp, SmallVector<func::CallOp>> callsOf;
    SmallVector<func::FuncOp> callees;
    for (func::FuncOp f : module.getOps<func::FuncOp>()) {
      if (f == entryFunc || !f.isPrivate() || f.isExternal())
        continue;
      std::optional<SymbolTable::UseRange> uses = SymbolTable::getSymbolUses(f, module);
      if (!uses || uses->empty())
        continue;
      SmallVector<func::CallOp> calls;
      for (const SymbolTable::SymbolUse &use : *uses)
        if (auto call = dyn_cast<func::CallOp>(use.getUser()))
          calls.push_back(call);
      if (calls.size() != static_cast<size_t>(llvm::range_size(*uses)))
        continue; // taken by address: not every caller is known
      callsOf[f] = calls;
      callees.push_back(f);
    }
    for (bool changed = true; changed;) {
      changed = false;
      for (func::FuncOp f : callees)
        for (BlockArgument p : f.getArguments())
          if (!fromEntry.contains(p) && pmlir::f32Tensor(p.getType()) &&
              llvm::all_of(callsOf[f], [&](func::CallOp call) {
                return fromEntry.contains(call.getOperand(p.getArgNumber()));
              }))
            changed = fromEntry.insert(p).second || changed;
    }

    // Out of the callees, into their calls, until only the entry rounds
    // them. Each move puts roundings in callers, which may be callees
    // themselves; the call graph is acyclic, so this ends.
    OpBuilder b(&getContext());
    for (bool moved = true; moved;) {
      moved = false;
      for (func::FuncOp f : callees) {
        unsigned params = f.getNumArguments();
        // Parameters the function no longer reads once their roundings
        // moved: taken out of it and its calls, so that an entry argument
        // read only in bf16 is seen to be.
        llvm::BitVector unread(params);
        for (unsigned i = 0; i < params; ++i) {
          BlockArgument p = f.getArgument(i);
          if (!fromEntry.contains(p) || roundingsOf(p).empty())
            continue;
          auto bf16 = cast<RankedTensorType>(p.getType()).clone(b.getBF16Type());
          if (failed(f.insertArgument(f.getNumArguments(), bf16, {}, p.getLoc()))) {
            f.emitError("cannot add the bf16 form of parameter #") << i;
            return signalPassFailure();
          }
          replaceRoundings(b, p, f.getArguments().back());
          for (func::CallOp call : callsOf[f]) {
            b.setInsertionPoint(call);
            Value operand = call.getOperand(i);
            call->insertOperands(call->getNumOperands(),
                                 pmlir::buildBf16Rounding(b, call.getLoc(), operand));
          }
          LLVM_DEBUG(llvm::dbgs() << "@" << f.getSymName() << " parameter #" << i
                                  << ": rounded by its " << callsOf[f].size() << " calls\n");
          if (p.use_empty())
            unread.set(i);
          moved = true;
        }
        if (unread.none())
          continue;
        unread.resize(f.getNumArguments());
        for (unsigned i : unread.set_bits())
          fromEntry.erase(f.getArgument(i));
        if (failed(f.eraseArguments(unread))) {
          f.emitError("cannot remove the parameters it no longer reads");
          return signalPassFailure();
        }
        for (func::CallOp call : callsOf[f])
          call->eraseOperands(unread);
      }
    }

    // Out of the entry: each rounded read-only argument gets its bf16 form
    // as an argument of its own. So does one the entry updates by a loop
    // that can round what it writes (AdamW's): that loop writes the next
    // call's form into it, and the caller rounds only what it writes
    // itself. Any other updated argument keeps one rounding in each block
    // that rounds it, at the first.
    auto returns = llvm::to_vector(entryFunc.getOps<func::ReturnOp>());
    func::ReturnOp ret =
        entryFunc.getBody().hasOneBlock() && returns.size() == 1 ? returns.front() : nullptr;
    std::vector<int64_t> listed = pmlir::roundedArguments(module);
    SmallVector<int64_t> rounded(listed.begin(), listed.end());
    std::vector<int64_t> listedOnly = pmlir::bf16OnlyArguments(module);
    SmallVector<int64_t> bf16Only(listedOnly.begin(), listedOnly.end());
    unsigned own = entryFunc.getNumArguments();
    for (unsigned i = 0; i < own; ++i) {
      BlockArgument arg = entryFunc.getArgument(i);
      if (!fromEntry.contains(arg) || roundingsOf(arg).empty())
        continue;
      auto writable = entryFunc.getArgAttrOfType<BoolAttr>(i, "bufferization.writable");
      if (!writable) {
        shareRoundings(arg);
        continue;
      }
      std::optional<unsigned> update;
      linalg::GenericOp loop;
      if (writable.getValue()) {
        if (ret && (update = resultUpdating(entryFunc, i)) &&
            ret.getOperand(*update).getType() == arg.getType())
          loop = updateLoop(ret.getOperand(*update));
        if (!loop) {
          shareRoundings(arg);
          continue;
        }
      }
      auto bf16 = cast<RankedTensorType>(arg.getType()).clone(b.getBF16Type());
      DictionaryAttr attrs = b.getDictionaryAttr(
          b.getNamedAttr("bufferization.writable", b.getBoolAttr(writable.getValue())));
      if (failed(
              entryFunc.insertArgument(entryFunc.getNumArguments(), bf16, attrs, arg.getLoc()))) {
        entryFunc.emitError("cannot add the bf16 form of argument #") << i;
        return signalPassFailure();
      }
      BlockArgument form = entryFunc.getArguments().back();
      replaceRoundings(b, arg, form);
      rounded.push_back(i);
      if (loop) {
        // The next call's form, written where this call's was read.
        Value next = roundAlongside(
            b, loop, cast<OpResult>(ret.getOperand(*update)).getResultNumber(), form);
        DictionaryAttr updates = b.getDictionaryAttr(
            b.getNamedAttr(pmlir::tfm::kUpdatesAttr, b.getI64IntegerAttr(form.getArgNumber())));
        if (failed(entryFunc.insertResult(entryFunc.getNumResults(), bf16, updates))) {
          entryFunc.emitError("cannot return the updated bf16 form of argument #") << i;
          return signalPassFailure();
        }
        ret->insertOperands(ret->getNumOperands(), next);
        continue;
      }
      if (arg.use_empty())
        bf16Only.push_back(i);
    }
    if (!rounded.empty())
      module->setAttr(pmlir::kRoundedArgumentsAttr, b.getDenseI64ArrayAttr(rounded));
    if (!bf16Only.empty())
      module->setAttr(pmlir::kBf16OnlyArgumentsAttr, b.getDenseI64ArrayAttr(bf16Only));
    LLVM_DEBUG(llvm::dbgs() << "@" << entry << ": " << rounded.size()
                            << " arguments rounded by the caller\n");
  }
};

} // namespace
