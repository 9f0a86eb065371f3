//===- BackwardSplit.cpp - Backward fragments as input and weight parts ---===//
//
// Part of pmlir.
//
// See pmlir/Pipelining/Pipelining.h. Zero-bubble schedules run a stage's
// backward in two actions: I, the gradient with respect to the stage's input
// (what the previous stage waits for), and W, the weight gradients, which
// can wait to fill the bubble. The I part is every op the gradients sent to
// other stages need; the W part is the rest. The ops of a backward
// tfm.layer split alike, into two backward layers of the same index; a value
// of the I part that the W part reads leaves the I fragment as a result.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Pipelining.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::pipeline;

namespace {

class BackwardSplitter {
public:
  explicit BackwardSplitter(pipe::FragmentOp fragment) : fragment(fragment) {}

  LogicalResult run();

private:
  pipe::FragmentOp fragment;
  /// The ops (not tfm.layer, not terminators) of the I part.
  DenseSet<Operation *> inputPart;

  static bool isContainer(Operation *op) {
    return isa<tfm::LayerOp, tfm::YieldOp, pipe::YieldOp>(op);
  }
  bool inFragment(Operation *op) const { return op && fragment->isProperAncestor(op); }
  /// Whether `v`, defined in the fragment, is made by the I part: by one of
  /// its ops, or as a layer result that one of its ops yields.
  bool madeByInputPart(Value v) const;
  /// Whether `v` is read outside the part `input` says: by an op of the other
  /// part or by the fragment's yield.
  bool readOutsidePart(Value v, bool input) const;
  void markInputPart(ArrayRef<Value> roots);
  /// Clones the ops of one part into `b`, each layer's into a layer of its
  /// own, and returns the values the fragment of that part yields.
  SmallVector<Value> emitPart(bool input, OpBuilder &b, IRMapping &mapping);
};

bool BackwardSplitter::madeByInputPart(Value v) const {
  Operation *def = v.getDefiningOp();
  if (!inFragment(def))
    return false;
  if (auto layer = dyn_cast<tfm::LayerOp>(def)) {
    Value yielded =
        layer.getBody().front().getTerminator()->getOperand(cast<OpResult>(v).getResultNumber());
    return layer->isProperAncestor(yielded.getDefiningOp()) && madeByInputPart(yielded);
  }
  return inputPart.contains(def);
}

bool BackwardSplitter::readOutsidePart(Value v, bool input) const {
  return llvm::any_of(v.getUsers(), [&](Operation *user) {
    if (isa<pipe::YieldOp>(user))
      return true;
    return !isContainer(user) && inputPart.contains(user) != input;
  });
}

void BackwardSplitter::markInputPart(ArrayRef<Value> roots) {
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    Operation *def = v.getDefiningOp();
    if (!inFragment(def))
      continue;
    if (auto layer = dyn_cast<tfm::LayerOp>(def)) {
      work.push_back(
          layer.getBody().front().getTerminator()->getOperand(cast<OpResult>(v).getResultNumber()));
      continue;
    }
    if (inputPart.insert(def).second)
      llvm::append_range(work, valuesReadBy(def));
  }
}

SmallVector<Value> BackwardSplitter::emitPart(bool input, OpBuilder &b, IRMapping &mapping) {
  auto inPart = [&](Operation *op) { return inputPart.contains(op) == input; };
  SetVector<Value> made;
  for (Operation &op : fragment.getBody().front().without_terminator()) {
    auto layer = dyn_cast<tfm::LayerOp>(op);
    if (!layer) {
      if (!inPart(&op))
        continue;
      b.clone(op, mapping);
      made.insert(op.getResults().begin(), op.getResults().end());
      continue;
    }
    Block &body = layer.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &inner : body.without_terminator())
      if (inPart(&inner))
        ops.push_back(&inner);
    // A layer result the layer passes through from above is that value.
    for (auto [result, yielded] :
         llvm::zip(layer.getResults(), body.getTerminator()->getOperands()))
      if (!layer->isProperAncestor(yielded.getDefiningOp()))
        mapping.map(result, mapping.lookupOrDefault(yielded));
    if (ops.empty())
      continue;
    // What the part's ops make that is read outside them leaves the layer.
    DenseSet<Operation *> inside(ops.begin(), ops.end());
    SmallVector<Value> leaving;
    for (Operation *inner : ops)
      for (Value r : inner->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *u) { return !inside.contains(u); }))
          leaving.push_back(r);
    auto part = tfm::LayerOp::create(b, layer.getLoc(), ValueRange(leaving).getTypes(),
                                     layer.getIndex(), layer.getBackward());
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(b.createBlock(&part.getBody()));
      for (Operation *inner : ops)
        b.clone(*inner, mapping);
      SmallVector<Value> yielded;
      for (Value v : leaving)
        yielded.push_back(mapping.lookup(v));
      tfm::YieldOp::create(b, layer.getLoc(), yielded);
    }
    for (auto [v, result] : llvm::zip(leaving, part.getResults()))
      mapping.map(v, result);
    made.insert(leaving.begin(), leaving.end());
    for (auto [result, yielded] :
         llvm::zip(layer.getResults(), body.getTerminator()->getOperands()))
      if (inside.contains(yielded.getDefiningOp())) {
        mapping.map(result, mapping.lookup(yielded));
        made.insert(result);
      }
  }
  SmallVector<Value> results;
  for (Value v : made)
    if (readOutsidePart(v, input))
      results.push_back(v);
  return results;
}

LogicalResult BackwardSplitter::run() {
  // The fragment's results that go to other stages are the input gradients.
  Block &body = fragment.getBody().front();
  Operation *yield = body.getTerminator();
  SmallVector<Value> roots;
  for (auto [result, yielded] : llvm::zip(fragment.getResults(), yield->getOperands()))
    if (llvm::any_of(result.getUsers(), [](Operation *u) { return isa<pipe::TransferOp>(u); }))
      roots.push_back(yielded);
  for (Operation &op : body.without_terminator())
    if (auto layer = dyn_cast<tfm::LayerOp>(op))
      for (Operation &inner : layer.getBody().front())
        if (isa<tfm::LayerOp>(inner))
          return inner.emitOpError() << "nests a tfm.layer in a tfm.layer: the backward "
                                        "fragment cannot be split into I and W";
  markInputPart(roots);

  OpBuilder b(fragment);
  IRMapping mapping;
  auto emitFragment = [&](bool input) {
    Location loc = fragment.getLoc();
    auto part = pipe::FragmentOp::create(b, loc, TypeRange(), fragment.getStage(),
                                         input ? pipe::ActionKind::BackwardInput
                                               : pipe::ActionKind::BackwardWeight,
                                         fragment.getMicrobatchAttr());
    OpBuilder inner = OpBuilder::atBlockBegin(b.createBlock(&part.getBody()));
    b.setInsertionPoint(fragment);
    SmallVector<Value> made = emitPart(input, inner, mapping);
    SmallVector<Value> yielded;
    for (Value v : made)
      yielded.push_back(mapping.lookup(v));
    pipe::YieldOp::create(inner, loc, yielded);
    // The fragment has the results its yield gives.
    b.setInsertionPoint(fragment);
    auto typed = pipe::FragmentOp::create(b, loc, ValueRange(yielded).getTypes(), part.getStage(),
                                          part.getKind(), part.getMicrobatchAttr());
    typed.getBody().takeBody(part.getBody());
    part.erase();
    for (auto [v, result] : llvm::zip(made, typed.getResults()))
      mapping.map(v, result);
    b.setInsertionPoint(fragment);
  };
  emitFragment(/*input=*/true);
  emitFragment(/*input=*/false);
  for (auto [result, yielded] : llvm::zip(fragment.getResults(), yield->getOperands()))
    result.replaceAllUsesWith(mapping.lookupOrDefault(yielded));
  fragment.erase();
  return success();
}

} // namespace

LogicalResult pmlir::pipeline::splitBackwardFragments(func::FuncOp func) {
  for (auto fragment : llvm::to_vector(func.front().getOps<pipe::FragmentOp>()))
    if (fragment.getKind() == pipe::ActionKind::Backward &&
        failed(BackwardSplitter(fragment).run()))
      return failure();
  return success();
}
