//===- Optimizer.cpp - A training step from a gradient function -----------===//
//
// Part of pmlir.
//
// See pmlir/Training/Optimizer.h.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Training/Optimizer.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/Debug.h"

#include <cmath>
#include <map>

#define DEBUG_TYPE "pmlir-optimizer"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm;
using namespace pmlir::training;

std::optional<std::string>
pmlir::training::unusableOptimizerValue(const OptimizerOptions &options,
                                        llvm::function_ref<std::string(llvm::StringRef)> nameOf) {
  auto text = [](double value) {
    std::string out;
    llvm::raw_string_ostream(out) << value;
    return out;
  };
  const AdamWOptions &adamw = options.adamw;
  // eps divides: v is 0 wherever a gradient is, and 0 / (0 + 0) is NaN.
  if (!(adamw.eps > 0) || !std::isfinite(adamw.eps))
    return nameOf("eps") +
           " must be a finite value > 0 (the update divides by sqrt(v) + eps, "
           "and v is 0 where a gradient is), got " +
           text(adamw.eps);
  for (auto [what, value] : {std::pair<const char *, double>{"lr", adamw.lr},
                             {"weight-decay", adamw.weightDecay},
                             {"max-grad-norm", options.maxGradNorm}})
    if (!(value >= 0) || !std::isfinite(value))
      return nameOf(what) + " must be a finite value >= 0, got " + text(value);
  for (auto [what, value] :
       {std::pair<const char *, double>{"beta1", adamw.beta1}, {"beta2", adamw.beta2}})
    if (!(value >= 0 && value < 1))
      return nameOf(what) + " must be in [0, 1), got " + text(value);
  return std::nullopt;
}

std::string pmlir::training::optimizerStateName(StringRef param, StringRef kind) {
  return (param + "." + kind).str();
}

namespace {

IntegerAttr indexAttr(MLIRContext *context, unsigned i) {
  return IntegerAttr::get(IntegerType::get(context, 64), i);
}

/// The sum of `values` (one tfm.add per term after the first).
Value sum(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  Value total = values.front();
  for (Value v : values.drop_front())
    total = AddOp::create(b, loc, total.getType(), total, v);
  return total;
}

/// The sum over microbatches of a gradient. Where each microbatch's is a
/// sum over pipeline stages (a tied embedding's), the stages' own sums over
/// microbatches are summed over the stages once.
Value sumOverMicrobatches(OpBuilder &b, Location loc, ArrayRef<Value> values) {
  SmallVector<pipe::StageSumOp> sums;
  for (Value v : values) {
    auto s = v.getDefiningOp<pipe::StageSumOp>();
    // Fresh from the microbatch's clone: nothing reads it yet.
    if (!s || !s->use_empty() || (!sums.empty() && s.getStages() != sums.front().getStages()))
      return sum(b, loc, values);
    sums.push_back(s);
  }
  if (values.size() < 2)
    return values.front();
  SmallVector<Value> perStage;
  for (size_t i = 0; i < sums.front().getInputs().size(); ++i) {
    SmallVector<Value> terms;
    for (pipe::StageSumOp s : sums)
      terms.push_back(s.getInputs()[i]);
    perStage.push_back(sum(b, loc, terms));
  }
  auto total = pipe::StageSumOp::create(b, loc, values.front().getType(), perStage,
                                        sums.front().getStages());
  for (pipe::StageSumOp s : sums)
    s.erase();
  return total;
}

/// The sum of `squares` of gradients; in a pipelined program each stage
/// sums those of the gradients it computes (`stages`: a gradient of several
/// stages, the first one's), and a stage sum adds the stages' sums.
Value sumOfSquares(OpBuilder &b, Location loc, ArrayRef<Value> squares, ArrayRef<int64_t> stages,
                   bool pipelined) {
  if (!pipelined)
    return sum(b, loc, squares);
  std::map<int64_t, SmallVector<Value>> byStage;
  for (auto [square, stage] : llvm::zip(squares, stages))
    byStage[stage].push_back(square);
  SmallVector<Value> partial;
  SmallVector<int64_t> summedStages;
  for (auto &[stage, terms] : byStage) {
    partial.push_back(sum(b, loc, terms));
    summedStages.push_back(stage);
  }
  return pipe::StageSumOp::create(b, loc, squares.front().getType(), partial, summedStages);
}

} // namespace

FailureOr<func::FuncOp> pmlir::training::buildTrainStep(func::FuncOp grad,
                                                        const OptimizerOptions &options) {
  MLIRContext *context = grad.getContext();
  // The gradient function: the loss, then gradients of parameters.
  auto isScalar = [](Type t) {
    auto tensor = dyn_cast<RankedTensorType>(t);
    return tensor && tensor.getRank() == 0 && isa<FloatType>(tensor.getElementType());
  };
  if (grad.getNumResults() < 2 || !isScalar(grad.getResultTypes()[0]))
    return grad.emitOpError() << "is no gradient function (pmlir-autodiff's): a training step "
                                 "needs the loss and at least one parameter's gradient";
  SmallVector<unsigned> params;
  for (unsigned r = 1; r < grad.getNumResults(); ++r) {
    auto of = grad.getResultAttrOfType<IntegerAttr>(r, kShardedLikeAttr);
    if (!of || of.getInt() < 0 || of.getInt() >= grad.getNumArguments() ||
        grad.getArgumentTypes()[of.getInt()] != grad.getResultTypes()[r] ||
        argumentRole(grad, of.getInt()) != ArgumentRole::Param)
      return grad.emitOpError() << "result #" << r
                                << " is no parameter's gradient (tfm.sharded_like a parameter "
                                   "argument of its type), so no training step is built from it";
    params.push_back(of.getInt());
  }
  if (options.gradAccum < 1)
    return grad.emitOpError() << "cannot be accumulated over " << options.gradAccum
                              << " microbatches";
  if (failed(pipe::checkRepeatable(grad, options.gradAccum, "accumulated over")))
    return failure();
  if (options.name.empty())
    return grad.emitOpError() << "cannot make a training step without a name (name is empty)";
  auto module = grad->getParentOfType<ModuleOp>();
  if (module && module.lookupSymbol(options.name))
    return grad.emitOpError() << "cannot make a training step @" << options.name
                              << ": the module already has a symbol of that name";
  if (grad.getBlocks().size() != 1)
    return grad.emitOpError() << "must have one block to make a training step of it";

  // Arguments: the gradient function's (a microbatch dimension first on
  // inputs and labels), then the optimizer state, then the step.
  int64_t k = options.gradAccum;
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < grad.getNumArguments(); ++i) {
    auto [type, attrs] = pipe::microbatchedArgument(grad, i, k);
    argTypes.push_back(type);
    argAttrs.push_back(attrs ? attrs : DictionaryAttr::get(context));
  }
  unsigned firstState = argTypes.size();
  for (StringRef kind : kOptimizerStateKinds)
    for (unsigned p : params) {
      NamedAttrList attrs;
      auto name = grad.getArgAttrOfType<StringAttr>(p, kNameAttr);
      attrs.set(kNameAttr,
                StringAttr::get(context, optimizerStateName(name ? name.getValue() : "", kind)));
      if (auto dims = grad.getArgAttr(p, kDimsAttr))
        attrs.set(kDimsAttr, dims);
      attrs.set(kRoleAttr, ArgumentRoleAttr::get(context, ArgumentRole::OptimizerState));
      attrs.set(kShardedLikeAttr, indexAttr(context, p));
      argTypes.push_back(grad.getArgumentTypes()[p]);
      argAttrs.push_back(attrs.getDictionary(context));
    }
  unsigned stepArg = argTypes.size();
  auto scalar = RankedTensorType::get({}, Float32Type::get(context));
  {
    NamedAttrList attrs;
    attrs.set(kNameAttr, StringAttr::get(context, kStepName));
    attrs.set(kRoleAttr, ArgumentRoleAttr::get(context, ArgumentRole::OptimizerState));
    argTypes.push_back(scalar);
    argAttrs.push_back(attrs.getDictionary(context));
  }

  OpBuilder b(grad);
  b.setInsertionPointAfter(grad);
  Location loc = grad.getLoc();
  auto step = func::FuncOp::create(b, loc, options.name, b.getFunctionType(argTypes, {}));
  step.setAllArgAttrs(argAttrs);
  Block *body = step.addEntryBlock();
  b.setInsertionPointToStart(body);

  // The forward and backward passes once per microbatch. Unpipelined, each
  // microbatch's gradients join a running sum as soon as they are made, so
  // that one microbatch's gradients are live at a time, not all k; a
  // pipeline's stage sums are gathered after (its schedule orders the
  // microbatches).
  bool pipelined = grad->hasAttr(pipe::kStagesAttr);
  SmallVector<Value> losses;
  SmallVector<SmallVector<Value>> grads(params.size());
  for (int64_t micro = 0; micro < k; ++micro) {
    SmallVector<Value> returned = pipe::cloneForMicrobatch(b, grad, body->getArguments(), micro, k);
    losses.push_back(returned.front());
    for (auto [i, g] : llvm::enumerate(ArrayRef(returned).drop_front())) {
      if (!pipelined && !grads[i].empty())
        grads[i].front() = AddOp::create(b, loc, g.getType(), grads[i].front(), g);
      else
        grads[i].push_back(g);
    }
  }
  // The mean over microbatches of the loss; the gradients' 1/k scales them
  // inside the update.
  Value loss = sum(b, loc, losses);
  if (k > 1)
    loss = ScaleOp::create(b, loc, loss.getType(), loss, b.getF64FloatAttr(1.0 / k));
  // A pipelined program's loss, of its last stage, is every rank's.
  if (pipelined)
    loss = pipe::StageSumOp::create(b, loc, loss.getType(), ValueRange{loss},
                                    ArrayRef<int64_t>{pipe::stageOf(losses.front()).value_or(0)});
  // The stage of each gradient, asked of the first microbatch's, made
  // where its stage runs: the sum over microbatches is as long as they are
  // many, too long to walk back through.
  SmallVector<int64_t> gradStages;
  if (pipelined)
    for (auto [i, g] : llvm::enumerate(grads)) {
      std::optional<int64_t> stage = pipe::stageOf(g.front());
      if (!stage) {
        step.erase();
        return grad.emitOpError() << "computes the gradient of argument #" << params[i]
                                  << " in no pipeline stage";
      }
      gradStages.push_back(*stage);
    }
  SmallVector<Value> summed;
  for (ArrayRef<Value> g : grads)
    summed.push_back(sumOverMicrobatches(b, loc, g));

  // The global gradient norm, before clipping.
  SmallVector<Value> squares;
  for (Value g : summed) {
    Value s = SumSquaresOp::create(b, loc, scalar, g);
    squares.push_back(s);
  }
  Value norm = SqrtOp::create(b, loc, scalar, sumOfSquares(b, loc, squares, gradStages, pipelined));
  if (k > 1)
    norm = ScaleOp::create(b, loc, scalar, norm, b.getF64FloatAttr(1.0 / k));

  Value one = FillOp::create(b, loc, scalar, b.getF64FloatAttr(1.0));
  Value nextStep = AddOp::create(b, loc, scalar, body->getArgument(stepArg), one);
  const AdamWOptions &adam = options.adamw;
  SmallVector<Value> newParams, newAvg, newAvgSq;
  for (auto [i, p] : llvm::enumerate(params)) {
    Value param = body->getArgument(p);
    Type t = param.getType();
    auto update = AdamWOp::create(
        b, loc, t, t, t, param, summed[i], body->getArgument(firstState + i),
        body->getArgument(firstState + params.size() + i), nextStep,
        options.maxGradNorm > 0 ? norm : Value(), b.getF64FloatAttr(adam.lr),
        b.getF64FloatAttr(adam.beta1), b.getF64FloatAttr(adam.beta2), b.getF64FloatAttr(adam.eps),
        b.getF64FloatAttr(adam.weightDecay), b.getF64FloatAttr(1.0 / k),
        options.maxGradNorm > 0 ? b.getF64FloatAttr(options.maxGradNorm) : FloatAttr());
    newParams.push_back(update.getNewParam());
    newAvg.push_back(update.getNewExpAvg());
    newAvgSq.push_back(update.getNewExpAvgSq());
  }
  // Each parameter's gradient norm: which one went non-finite, when the
  // global one does.
  SmallVector<Value> results = {loss, norm};
  for (Value s : squares) {
    Value paramNorm = SqrtOp::create(b, loc, scalar, s);
    if (k > 1)
      paramNorm = ScaleOp::create(b, loc, scalar, paramNorm, b.getF64FloatAttr(1.0 / k));
    results.push_back(paramNorm);
  }
  llvm::append_range(results, newParams);
  llvm::append_range(results, newAvg);
  llvm::append_range(results, newAvgSq);
  results.push_back(nextStep);
  func::ReturnOp::create(b, loc, results);
  step.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));

  step.setResultAttr(0, kNameAttr, StringAttr::get(context, "loss"));
  step.setResultAttr(1, kNameAttr, StringAttr::get(context, "grad_norm"));
  auto updates = [&](unsigned result, unsigned arg) {
    step.setResultAttr(result, kUpdatesAttr, indexAttr(context, arg));
    step.setResultAttr(result, kShardedLikeAttr, indexAttr(context, arg));
    if (auto name = step.getArgAttr(arg, kNameAttr))
      step.setResultAttr(result, kNameAttr, name);
  };
  unsigned firstUpdate = 2 + params.size();
  for (auto [i, p] : llvm::enumerate(params)) {
    if (auto name = step.getArgAttrOfType<StringAttr>(p, kNameAttr))
      step.setResultAttr(2 + i, kNameAttr,
                         StringAttr::get(context, name.getValue() + ".grad_norm"));
    updates(firstUpdate + i, p);
    updates(firstUpdate + params.size() + i, firstState + i);
    updates(firstUpdate + 2 * params.size() + i, firstState + params.size() + i);
  }
  updates(results.size() - 1, stepArg);
  if (pipelined)
    step->setAttr(pipe::kStagesAttr, grad->getAttr(pipe::kStagesAttr));
  LLVM_DEBUG(llvm::dbgs() << "@" << options.name << ": " << params.size() << " parameters, " << k
                          << " microbatches\n");
  return step;
}
