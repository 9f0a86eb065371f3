//===- Autodiff.cpp - Reverse-mode gradients of tfm programs --------------===//
//
// Part of pmlir.
//
// See pmlir/Training/Autodiff.h.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Training/Autodiff.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#include <functional>

#define DEBUG_TYPE "pmlir-autodiff"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm;
using namespace pmlir::training;

namespace {

bool isFloatTensor(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// The gradients of the values of one scope (the function, or a layer's
/// body), summed where a value has several uses.
class Gradients {
public:
  explicit Gradients(OpBuilder &b) : b(b) {}

  Value lookup(Value v) const { return grads.lookup(v); }

  void add(Value v, Value grad, Location loc) {
    if (!grad || !isFloatTensor(v))
      return;
    auto [it, inserted] = grads.try_emplace(v, grad);
    if (!inserted)
      it->second = AddOp::create(b, loc, v.getType(), it->second, grad);
  }

  /// Builds the gradients of `op`'s operands from those of its results.
  /// `original` is the op whose diagnostics name it (the op itself, or
  /// the forward op that `op` recomputes).
  LogicalResult differentiate(Operation *op, Operation *original) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(lookup(r));
      any |= bool(resultGrads.back());
    }
    if (!any)
      return success();
    auto differentiable = dyn_cast<AutodiffOpInterface>(op);
    if (!differentiable)
      return original->emitOpError()
             << "has no gradient (AutodiffOpInterface), so pmlir-autodiff cannot differentiate "
                "the loss through it";
    SmallVector<Value> operandGrads;
    if (failed(differentiable.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    for (auto [operand, grad] : llvm::zip(op->getOperands(), operandGrads))
      add(operand, grad, op->getLoc());
    return success();
  }

private:
  OpBuilder &b;
  DenseMap<Value, Value> grads;
};

class Differentiator {
public:
  Differentiator(func::FuncOp func, Recompute recompute)
      : func(func), recompute(recompute), b(func.getContext()), grads(b) {}

  LogicalResult run(Value loss);
  Value gradOf(Value v) const { return grads.lookup(v); }

private:
  func::FuncOp func;
  Recompute recompute;
  OpBuilder b;
  Gradients grads;

  LogicalResult differentiateLayer(LayerOp layer);
  /// Whether `v`, read by a backward layer, is computed from parameters
  /// alone inside `layer` (a view of a weight: a split of GPT-2's fused
  /// QKV weight), so that the backward layer recomputes it instead of the
  /// forward layer keeping it.
  bool fromParamsAlone(Value v, LayerOp layer);
  /// Makes every value of `forward`'s body that `backward` reads a result
  /// of `forward` (kept for it), or recomputed in `backward` where it comes
  /// from parameters alone. Returns the new forward layer.
  LayerOp keepForBackward(LayerOp forward, LayerOp backward);
};

LogicalResult Differentiator::run(Value loss) {
  Operation *ret = func.front().getTerminator();
  b.setInsertionPoint(ret);
  grads.add(loss, FillOp::create(b, loss.getLoc(), loss.getType(), b.getF64FloatAttr(1.0)),
            loss.getLoc());
  SmallVector<Operation *> forwardOps;
  for (Operation &op : func.front().without_terminator())
    forwardOps.push_back(&op);
  for (Operation *op : llvm::reverse(forwardOps)) {
    b.setInsertionPoint(ret);
    if (auto layer = dyn_cast<LayerOp>(op)) {
      if (failed(differentiateLayer(layer)))
        return failure();
      continue;
    }
    if (failed(grads.differentiate(op, op)))
      return failure();
  }
  return success();
}

LogicalResult Differentiator::differentiateLayer(LayerOp layer) {
  if (layer.getBackward())
    return layer.emitOpError() << "is a backward layer: pmlir-autodiff differentiates a "
                                  "forward program once";
  SmallVector<Value> resultGrads;
  for (Value r : layer.getResults())
    resultGrads.push_back(grads.lookup(r));
  if (llvm::none_of(resultGrads, [](Value g) { return bool(g); }))
    return success();
  Location loc = layer.getLoc();
  Block &forwardBody = layer.getBody().front();

  // The backward body, built in a layer without results that the finished
  // one takes over.
  OpBuilder::InsertionGuard guard(b);
  auto building = LayerOp::create(b, loc, TypeRange{}, layer.getIndexAttr(), b.getUnitAttr());
  b.createBlock(&building.getBody());

  // Full recomputation runs the block again from the values it uses from
  // above; the gradients are then those of the recomputed values. A step
  // metric counts the forward once: the block run again does not report.
  IRMapping recomputed;
  SmallVector<Operation *> ops;
  for (Operation &op : forwardBody.without_terminator()) {
    if (recompute == Recompute::Full && !isa<StepMetricOp>(op))
      ops.push_back(b.clone(op, recomputed));
    else
      ops.push_back(&op);
  }
  auto local = [&](Value v) { return recomputed.lookupOrDefault(v); };

  Gradients inner(b);
  for (auto [yielded, grad] : llvm::zip(forwardBody.getTerminator()->getOperands(), resultGrads))
    inner.add(local(yielded), grad, loc);
  for (auto [op, original] :
       llvm::zip(llvm::reverse(ops), llvm::reverse(forwardBody.without_terminator())))
    if (failed(inner.differentiate(op, &original)))
      return failure();

  // The gradients of what the block uses from above leave the layer.
  SetVector<Value> captured;
  getUsedValuesDefinedAbove(layer.getBody(), captured);
  SmallVector<Value> from, yielded;
  for (Value v : captured)
    if (Value g = inner.lookup(v)) {
      from.push_back(v);
      yielded.push_back(g);
    }
  YieldOp::create(b, loc, yielded);

  b.setInsertionPoint(building);
  auto backward = LayerOp::create(b, loc, ValueRange(yielded).getTypes(), layer.getIndexAttr(),
                                  b.getUnitAttr());
  backward.getBody().takeBody(building.getBody());
  building.erase();
  for (auto [v, g] : llvm::zip(from, backward.getResults()))
    grads.add(v, g, loc);
  if (recompute != Recompute::Full)
    keepForBackward(layer, backward);
  LLVM_DEBUG(llvm::dbgs() << "layer " << layer.getIndex() << ": gradients of " << from.size()
                          << " values from above\n");
  return success();
}

bool Differentiator::fromParamsAlone(Value v, LayerOp layer) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner()->getParentOp() == func.getOperation() &&
           argumentRole(func, arg.getArgNumber()) == ArgumentRole::Param;
  Operation *def = v.getDefiningOp();
  if (!layer->isProperAncestor(def))
    return false;
  return llvm::all_of(def->getOperands(), [&](Value u) { return fromParamsAlone(u, layer); });
}

LayerOp Differentiator::keepForBackward(LayerOp forward, LayerOp backward) {
  Region &forwardRegion = forward.getBody();
  SetVector<Value> read;
  backward.walk([&](Operation *op) {
    for (Value v : op->getOperands())
      if (forwardRegion.isAncestor(v.getParentRegion()))
        read.insert(v);
  });
  // Weight views are recomputed at the top of the backward body, in
  // forward order.
  Block &body = backward.getBody().front();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&body);
  IRMapping views;
  std::function<void(Value)> recomputeView = [&](Value v) {
    if (!forwardRegion.isAncestor(v.getParentRegion()) || views.contains(v))
      return;
    Operation *def = v.getDefiningOp();
    for (Value operand : def->getOperands())
      recomputeView(operand);
    b.clone(*def, views);
  };
  SmallVector<Value> kept;
  for (Operation &op : forward.getBody().front().without_terminator())
    for (Value r : op.getResults()) {
      if (!read.contains(r))
        continue;
      if (fromParamsAlone(r, forward))
        recomputeView(r);
      else
        kept.push_back(r);
    }
  backward.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands())
      if (Value view = views.lookupOrNull(use.get()))
        use.set(view);
  });
  if (kept.empty())
    return forward;

  // The forward layer yields its outputs, then what it keeps.
  auto yield = cast<YieldOp>(forward.getBody().front().getTerminator());
  SmallVector<Value> outputs(yield.getValues());
  llvm::append_range(outputs, kept);
  b.setInsertionPoint(forward);
  auto keeping = LayerOp::create(b, forward.getLoc(), ValueRange(outputs).getTypes(),
                                 forward.getIndexAttr(), forward.getBackwardAttr());
  keeping.getBody().takeBody(forward.getBody());
  yield->setOperands(outputs);
  unsigned numOutputs = forward.getNumResults();
  for (auto [old, now] :
       llvm::zip(forward.getResults(), keeping.getResults().take_front(numOutputs)))
    old.replaceAllUsesWith(now);
  backward.walk([&](Operation *op) {
    for (OpOperand &use : op->getOpOperands())
      if (auto it = llvm::find(kept, use.get()); it != kept.end())
        use.set(keeping.getResult(numOutputs + (it - kept.begin())));
  });
  forward.erase();
  return keeping;
}

} // namespace

FailureOr<func::FuncOp> pmlir::training::buildGradientFunction(func::FuncOp forward,
                                                               const AutodiffOptions &options) {
  auto lossType = forward.getNumResults() == 1
                      ? dyn_cast<RankedTensorType>(forward.getResultTypes()[0])
                      : RankedTensorType();
  if (!lossType || lossType.getRank() != 0 || !isa<FloatType>(lossType.getElementType()))
    return forward.emitOpError()
           << "must return one scalar float loss to be differentiated (pmlir-gen --loss), "
              "returns "
           << forward.getResultTypes();
  if (forward.getBlocks().size() != 1)
    return forward.emitOpError() << "must have one block to be differentiated";
  if (options.name.empty())
    return forward.emitOpError() << "cannot be differentiated into a function without a name "
                                    "(name is empty)";
  auto module = forward->getParentOfType<ModuleOp>();
  if (module && module.lookupSymbol(options.name))
    return forward.emitOpError() << "cannot be differentiated into @" << options.name
                                 << ": the module already has a symbol of that name";

  OpBuilder b(forward);
  b.setInsertionPointAfter(forward);
  auto grad = cast<func::FuncOp>(b.clone(*forward));
  grad.setSymName(options.name);
  auto ret = cast<func::ReturnOp>(grad.front().getTerminator());
  Value loss = ret.getOperand(0);

  // Without recomputation the forward's attention returns its
  // probabilities, which its gradient then reads (and the forward layer
  // keeps for it).
  if (options.recompute == Recompute::None)
    grad.walk([&](AttentionOp attention) {
      if (attention.getProbabilities())
        return;
      auto query = attention.getQuery().getType(), key = attention.getKey().getType();
      auto probabilities = RankedTensorType::get(
          {query.getDimSize(0), query.getDimSize(1), query.getDimSize(2), key.getDimSize(2)},
          query.getElementType());
      OpBuilder here(attention);
      auto keeping = AttentionOp::create(here, attention.getLoc(), attention.getResult().getType(),
                                         probabilities, attention.getQuery(), attention.getKey(),
                                         attention.getValue(), attention.getCausalAttr(),
                                         attention.getScaleAttr(), attention.getQueryOffset(),
                                         attention.getHeadTailAttr());
      keeping->setDiscardableAttrs(attention->getDiscardableAttrDictionary());
      attention.getResult().replaceAllUsesWith(keeping.getResult());
      attention.erase();
    });

  Differentiator differentiator(grad, options.recompute);
  if (failed(differentiator.run(loss))) {
    grad.erase();
    return failure();
  }

  // Loss, then each parameter's gradient (zeros where the loss does not
  // depend on it).
  b.setInsertionPoint(ret);
  SmallVector<Value> results = {loss};
  SmallVector<unsigned> params;
  for (BlockArgument arg : grad.getArguments()) {
    if (argumentRole(grad, arg.getArgNumber()) != ArgumentRole::Param || !isFloatTensor(arg))
      continue;
    Value g = differentiator.gradOf(arg);
    if (!g)
      g = FillOp::create(b, arg.getLoc(), arg.getType(), b.getF64FloatAttr(0.0));
    results.push_back(g);
    params.push_back(arg.getArgNumber());
  }
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  grad.setType(FunctionType::get(grad.getContext(), grad.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  MLIRContext *context = grad.getContext();
  grad.setResultAttr(0, kNameAttr, StringAttr::get(context, "loss"));
  for (auto [i, param] : llvm::enumerate(params)) {
    if (auto name = grad.getArgAttr(param, kNameAttr))
      grad.setResultAttr(i + 1, kNameAttr, name);
    grad.setResultAttr(i + 1, kShardedLikeAttr,
                       IntegerAttr::get(IntegerType::get(context, 64), param));
  }

  // Forward values nothing reads any more (recomputed in backward layers).
  SmallVector<Operation *> ops;
  grad.walk<WalkOrder::PostOrder>([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : llvm::reverse(ops))
    if (op != grad.getOperation() && op->use_empty() && isPure(op) &&
        !op->hasTrait<mlir::OpTrait::IsTerminator>())
      op->erase();
  return grad;
}
