//===- StagePartition.cpp - Cutting a program into pipeline stages --------===//
//
// Part of pmlir.
//
// See pmlir/Pipelining/Pipelining.h. A gradient function is the forward (up to
// the loss) followed by the backward, each tfm.layer with its backward
// layer; both of a block go to one stage. Other ops follow their data: a
// forward op runs on the latest stage of its operands, a backward op on the
// earliest (gradients flow from the last stage to the first), and an op
// whose operands have no stage yet (the loss's labels) on the first stage
// that reads it.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Pipelining.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Debug.h"

#include <algorithm>
#include <limits>

#define DEBUG_TYPE "pmlir-pipeline-partition"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::pipeline;

namespace {

double flopsOf(Operation *root) {
  double flops = 0;
  root->walk([&](tfm::CostOpInterface op) { flops += op.getFlops(); });
  return flops;
}

} // namespace

SmallVector<Value> pmlir::pipeline::valuesReadBy(Operation *op) {
  SmallVector<Value> reads(op->getOperands());
  if (op->getNumRegions() != 0) {
    SetVector<Value> above;
    for (Region &region : op->getRegions())
      getUsedValuesDefinedAbove(region, above);
    llvm::append_range(reads, above);
  }
  return reads;
}

FailureOr<std::vector<int64_t>>
pmlir::pipeline::assignLayersToStages(func::FuncOp func, const StagePartitionOptions &options) {
  SmallVector<tfm::LayerOp> layers;
  for (auto layer : func.front().getOps<tfm::LayerOp>())
    if (!layer.getBackward())
      layers.push_back(layer);
  const int64_t n = static_cast<int64_t>(layers.size()), stages = options.stages;
  if (stages < 1)
    return func.emitOpError() << "cannot be cut into " << stages << " pipeline stages";
  if (stages > n)
    return func.emitOpError() << "has " << n << " tfm.layer blocks, fewer than the " << stages
                              << " pipeline stages to cut it into: each stage needs a layer";
  std::vector<int64_t> stageOfLayer(n, 0);
  if (!options.splitPoints.empty()) {
    if (static_cast<int64_t>(options.splitPoints.size()) != stages - 1)
      return func.emitOpError() << "cannot start " << stages << " stages at "
                                << options.splitPoints.size() << " split points: give "
                                << stages - 1 << " (the first layer of stages 1 to " << stages - 1
                                << ")";
    int64_t previous = 0;
    for (int64_t point : options.splitPoints) {
      if (point <= previous || point >= n)
        return func.emitOpError() << "split points must rise from 1 to at most " << n - 1
                                  << " (each stage at least one of the " << n << " layers), got "
                                  << point << " after " << previous;
      previous = point;
    }
    for (int64_t i = 0, s = 0; i < n; ++i) {
      while (s + 1 < stages && i >= options.splitPoints[s])
        ++s;
      stageOfLayer[i] = s;
    }
    return stageOfLayer;
  }

  // FLOPs of each layer, and of the forward before the first layer and
  // after the last one (the embeddings; the final norm, LM head and loss).
  std::vector<double> cost(n);
  for (int64_t i = 0; i < n; ++i)
    cost[i] = flopsOf(layers[i]);
  double before = 0, after = 0;
  bool seenLayer = false;
  Operation *lastLayer = layers.back();
  for (Operation &op : func.front().without_terminator()) {
    if (auto layer = dyn_cast<tfm::LayerOp>(op)) {
      if (layer.getBackward())
        break;
      seenLayer = true;
      continue;
    }
    double flops = flopsOf(&op);
    if (!seenLayer)
      before += flops;
    else if (lastLayer->isBeforeInBlock(&op))
      after += flops;
  }
  // The split that makes the costliest stage cheapest: best[k][j] is the
  // least maximum over stages 0..k holding layers 0..j-1.
  auto span = [&](int64_t from, int64_t to, int64_t stage) {
    double c = 0;
    for (int64_t i = from; i < to; ++i)
      c += cost[i];
    if (stage == 0)
      c += before;
    if (stage == stages - 1)
      c += after;
    return c;
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> from(stages, std::vector<int64_t>(n + 1, 0));
  for (int64_t j = 1; j <= n; ++j)
    best[0][j] = span(0, j, 0);
  for (int64_t k = 1; k < stages; ++k)
    for (int64_t j = k + 1; j <= n; ++j)
      for (int64_t i = k; i < j; ++i) {
        double c = std::max(best[k - 1][i], span(i, j, k));
        // Ties go to the later cut, so earlier stages take the extra layer.
        if (c <= best[k][j]) {
          best[k][j] = c;
          from[k][j] = i;
        }
      }
  for (int64_t k = stages - 1, j = n; k >= 0; --k) {
    int64_t i = k == 0 ? 0 : from[k][j];
    for (int64_t l = i; l < j; ++l)
      stageOfLayer[l] = k;
    j = i;
  }
  LLVM_DEBUG({
    llvm::dbgs() << "stages of layers:";
    for (int64_t s : stageOfLayer)
      llvm::dbgs() << " " << s;
    llvm::dbgs() << " (before " << before << ", after " << after << " FLOPs)\n";
  });
  return stageOfLayer;
}

LogicalResult pmlir::pipeline::partitionIntoStages(func::FuncOp func,
                                                   const StagePartitionOptions &options) {
  if (func.getBlocks().size() != 1)
    return func.emitOpError() << "must have one block to be cut into pipeline stages";
  if (func->hasAttr(pipe::kStagesAttr) || !func.front().getOps<pipe::FragmentOp>().empty())
    return func.emitOpError() << "is already cut into pipeline stages";
  FailureOr<std::vector<int64_t>> layerStages = assignLayersToStages(func, options);
  if (failed(layerStages))
    return failure();
  const int64_t stages = options.stages;
  Block &body = func.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());

  DenseMap<int64_t, int64_t> stageOfIndex;
  int64_t layerNumber = 0;
  for (auto layer : body.getOps<tfm::LayerOp>())
    if (!layer.getBackward())
      stageOfIndex[layer.getIndex()] = (*layerStages)[layerNumber++];

  // The forward ends at the loss in a gradient function (one with backward
  // layers, whose first result is the loss).
  bool gradient = llvm::any_of(body.getOps<tfm::LayerOp>(),
                               [](tfm::LayerOp l) { return bool(l.getBackward()); });
  Operation *lossOp =
      gradient && ret.getNumOperands() ? ret.getOperand(0).getDefiningOp() : nullptr;
  if (gradient && (!lossOp || lossOp->getBlock() != &body))
    return func.emitOpError() << "is a gradient function whose loss is not computed in its body";

  // Which values depend on the inputs (token ids, labels, activations).
  DenseSet<Value> dataDependent;
  for (BlockArgument arg : func.getArguments()) {
    tfm::ArgumentRole role = tfm::argumentRole(func, arg.getArgNumber());
    if (role == tfm::ArgumentRole::Input || role == tfm::ArgumentRole::Label)
      dataDependent.insert(arg);
  }
  constexpr int64_t kNone = -1;
  enum Kind { Forward, Backward };
  struct Placement {
    int64_t stage = kNone;
    Kind kind = Forward;
  };
  llvm::MapVector<Operation *, Placement> placed;
  SmallVector<Operation *> independent;
  SmallVector<Operation *> stageSums;
  bool inBackward = false;
  for (Operation &op : body.without_terminator()) {
    Kind kind = inBackward ? Backward : Forward;
    if (&op == lossOp)
      inBackward = true;
    SmallVector<Value> reads = valuesReadBy(&op);
    if (llvm::none_of(reads, [&](Value v) { return dataDependent.contains(v); })) {
      independent.push_back(&op);
      continue;
    }
    for (Value r : op.getResults())
      dataDependent.insert(r);
    Placement p{kNone, kind};
    if (auto layer = dyn_cast<tfm::LayerOp>(op)) {
      auto it = stageOfIndex.find(layer.getIndex());
      if (it == stageOfIndex.end())
        return layer.emitOpError() << "is a backward layer without its forward layer";
      p.stage = it->second;
    } else {
      for (Value v : reads) {
        Operation *def = v.getDefiningOp();
        auto it = def ? placed.find(def) : placed.end();
        if (it == placed.end() || it->second.stage == kNone)
          continue;
        int64_t s = it->second.stage;
        p.stage = p.stage == kNone  ? s
                  : kind == Forward ? std::max(p.stage, s)
                                    : std::min(p.stage, s);
      }
    }
    // A parameter's gradient summed from two stages (a tied embedding's)
    // is summed over the stages, once per step.
    if (kind == Backward && isa<tfm::AddOp>(op) &&
        llvm::all_of(op.getUsers(), [&](Operation *u) { return u == ret.getOperation(); })) {
      auto stageOfOperand = [&](Value v) -> int64_t {
        Operation *def = v.getDefiningOp();
        auto it = def ? placed.find(def) : placed.end();
        return it == placed.end() ? kNone : it->second.stage;
      };
      int64_t a = stageOfOperand(op.getOperand(0)), b = stageOfOperand(op.getOperand(1));
      if (a != kNone && b != kNone && a != b) {
        stageSums.push_back(&op);
        continue;
      }
    }
    placed[&op] = p;
  }
  // Ops whose operands have no stage run on the first stage that reads
  // them (or the first stage).
  for (auto it = placed.rbegin(); it != placed.rend(); ++it) {
    if (it->second.stage != kNone)
      continue;
    int64_t stage = kNone;
    for (Operation *user : it->first->getUsers()) {
      auto u = placed.find(user);
      if (u != placed.end() && u->second.stage != kNone)
        stage = stage == kNone ? u->second.stage : std::min(stage, u->second.stage);
    }
    it->second.stage = stage == kNone ? 0 : stage;
  }

  // The ops that depend on parameters alone come first, then the forward
  // fragments of stages 0 .. n-1, the backward ones of n-1 .. 0, and the
  // stage sums.
  for (Operation *op : independent)
    op->moveBefore(ret);
  OpBuilder b(ret);
  MLIRContext *context = func.getContext();
  DenseMap<std::pair<int64_t, int>, pipe::FragmentOp> fragments;
  auto build = [&](int64_t stage, Kind kind) -> LogicalResult {
    SmallVector<Operation *> ops;
    for (auto &[op, p] : placed)
      if (p.stage == stage && p.kind == kind)
        ops.push_back(op);
    if (ops.empty())
      return success();
    DenseSet<Operation *> inside(ops.begin(), ops.end());
    SmallVector<Value> outputs;
    for (Operation *op : ops)
      for (Value r : op->getResults())
        if (llvm::any_of(r.getUsers(), [&](Operation *u) {
              Operation *top = body.findAncestorOpInBlock(*u);
              return !inside.contains(top);
            }))
          outputs.push_back(r);
    auto fragment = pipe::FragmentOp::create(
        b, ret.getLoc(), ValueRange(outputs).getTypes(), stage,
        kind == Forward ? pipe::ActionKind::Forward : pipe::ActionKind::Backward, IntegerAttr());
    Block *block = b.createBlock(&fragment.getBody());
    for (Operation *op : ops)
      op->moveBefore(block, block->end());
    OpBuilder atEnd = OpBuilder::atBlockEnd(block);
    pipe::YieldOp::create(atEnd, ret.getLoc(), outputs);
    for (auto [v, result] : llvm::zip(outputs, fragment.getResults()))
      v.replaceUsesWithIf(result,
                          [&](OpOperand &use) { return !fragment->isAncestor(use.getOwner()); });
    fragments[{stage, int(kind)}] = fragment;
    b.setInsertionPoint(ret);
    return success();
  };
  for (int64_t s = 0; s < stages; ++s)
    if (failed(build(s, Forward)))
      return failure();
  for (int64_t s = stages - 1; s >= 0; --s)
    if (failed(build(s, Backward)))
      return failure();
  for (Operation *op : stageSums) {
    b.setInsertionPoint(ret);
    SmallVector<int64_t> from;
    for (Value v : op->getOperands())
      from.push_back(*pipe::stageOf(v));
    auto sum = pipe::StageSumOp::create(b, op->getLoc(), op->getResult(0).getType(),
                                        op->getOperands(), from);
    op->getResult(0).replaceAllUsesWith(sum.getResult());
    op->erase();
  }

  // A value of one stage that another reads goes through a transfer,
  // placed after its fragment, one per reading stage.
  for (auto fragment : llvm::to_vector(body.getOps<pipe::FragmentOp>())) {
    b.setInsertionPointAfter(fragment);
    for (Value result : fragment.getResults()) {
      std::map<int64_t, pipe::TransferOp> transfers;
      for (OpOperand &use : llvm::make_early_inc_range(result.getUses())) {
        auto reader = dyn_cast<pipe::FragmentOp>(body.findAncestorOpInBlock(*use.getOwner()));
        if (!reader || reader.getStage() == fragment.getStage())
          continue;
        pipe::TransferOp &transfer = transfers[reader.getStage()];
        if (!transfer)
          transfer = pipe::TransferOp::create(b, fragment.getLoc(), result, fragment.getStage(),
                                              reader.getStage());
        use.set(transfer.getResult());
      }
    }
  }
  // A forward's results go to the first stage, whose rank holds the
  // program's inputs and, with it, job rank 0: there the logits of every
  // microbatch are assembled. A scalar (a loss) is every rank's, as a
  // training step's loss is: a stage sum of its one stage.
  if (!gradient)
    for (OpOperand &use : ret->getOpOperands()) {
      auto fragment = use.get().getDefiningOp<pipe::FragmentOp>();
      if (!fragment || fragment.getStage() == 0)
        continue;
      Location loc = fragment.getLoc();
      auto type = dyn_cast<RankedTensorType>(use.get().getType());
      if (type && type.getRank() == 0) {
        b.setInsertionPoint(ret);
        use.set(
            pipe::StageSumOp::create(b, loc, use.get().getType(), ValueRange{use.get()},
                                     ArrayRef<int64_t>{static_cast<int64_t>(fragment.getStage())}));
        continue;
      }
      b.setInsertionPointAfter(fragment);
      use.set(pipe::TransferOp::create(b, loc, use.get(), fragment.getStage(), 0));
    }
  func->setAttr(pipe::kStagesAttr, IntegerAttr::get(IntegerType::get(context, 64), stages));
  return success();
}
