//===- RankProgram.cpp - One pipeline rank's program ----------------------===//
//
// Part of pmlir.
//
// See pmlir/Pipelining/Pipelining.h. The rank's body is built op by op in its
// schedule's order: a compute action inlines its fragment, after first
// computing (once) what the fragment reads outside fragments (microbatch
// slices, positions, reshards); a transfer out of the rank is sent after
// its fragment ran (buffered: a send never waits for its receiver), a
// transfer into it received at the schedule's RECV or where first read (a
// forward's results, returned on the first stage's rank).
// Messages carry the transfer's number as their tag, so that two messages
// between the same ranks cannot be confused. The stage sums come last, in
// program order, on every rank alike, then the results the rank can make;
// the running sums of gradients over microbatches are then moved up to
// where their terms are made (accumulateEarly).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Pipelining.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Grid.h"
#include "pmlir/Support/Mesh.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/SetVector.h"

#include <map>
#include <set>
#include <tuple>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::pipeline;

namespace {

/// Message tags of pipeline transfers, above those of other messages.
constexpr int64_t kFirstTransferTag = 1;

class RankBuilder {
public:
  RankBuilder(func::FuncOp func, const pipe::Schedule &schedule, int64_t rank, StringRef gridName,
              int16_t gridAxis, bool markWork)
      : func(func), schedule(schedule), rank(rank), gridName(gridName), gridAxis(gridAxis),
        markWork(markWork), b(func.getContext()) {}

  LogicalResult run();

private:
  func::FuncOp func;
  const pipe::Schedule &schedule;
  int64_t rank;
  StringRef gridName;
  int16_t gridAxis;
  /// Whether each fragment's work is marked for the trace.
  bool markWork;
  OpBuilder b;
  IRMapping mapping;
  bool tail = false;
  std::map<std::tuple<int64_t, pipe::ActionKind, int64_t>, pipe::FragmentOp> fragments;
  DenseMap<Operation *, int64_t> tags;
  DenseSet<Operation *> sent;
  /// Arguments the rank's fragments read.
  DenseSet<Value> argumentsRead;

  int64_t rankOf(int64_t stage) const { return schedule.rankOf(stage); }

  /// The fragment whose result `v` is, through ops outside fragments.
  pipe::FragmentOp producer(Value v) {
    for (int depth = 0; depth < 64; ++depth) {
      Operation *def = v.getDefiningOp();
      if (auto f = dyn_cast_or_null<pipe::FragmentOp>(def))
        return f;
      if (!def || def->getNumOperands() == 0)
        return {};
      v = def->getOperand(0);
    }
    return {};
  }

  FailureOr<Value> materialize(Value v, Operation *forOp);
  LogicalResult emitFragment(pipe::FragmentOp fragment);
  void send(pipe::TransferOp transfer);
  void receive(pipe::TransferOp transfer);
  bool computable(Value v, DenseMap<Value, bool> &memo);
};

void RankBuilder::send(pipe::TransferOp transfer) {
  if (!sent.insert(transfer).second)
    return;
  Location loc = transfer.getLoc();
  Value local = mapping.lookup(transfer.getInput());
  int64_t peer = rankOf(transfer.getTo());
  auto op = shard::SendOp::create(b, loc, local.getType(), gridName, ArrayRef<int16_t>{gridAxis},
                                  local, ArrayRef<int64_t>{peer}, ValueRange());
  op->setAttr(pmlir::sharding::kMessageTagAttr, b.getI64IntegerAttr(tags.lookup(transfer)));
}

void RankBuilder::receive(pipe::TransferOp transfer) {
  if (mapping.contains(transfer.getResult()))
    return;
  Location loc = transfer.getLoc();
  // shard.recv takes a tensor of the shape it receives.
  auto type = cast<RankedTensorType>(transfer.getType());
  Value shape = tfm::FillOp::create(b, loc, type, b.getF64FloatAttr(0.0));
  if (!isa<FloatType>(type.getElementType()))
    shape = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  auto op =
      shard::RecvOp::create(b, loc, type, FlatSymbolRefAttr::get(b.getContext(), gridName),
                            b.getDenseI16ArrayAttr({gridAxis}), shape,
                            b.getDenseI64ArrayAttr({rankOf(transfer.getFrom())}), ValueRange());
  op->setAttr(pmlir::sharding::kMessageTagAttr, b.getI64IntegerAttr(tags.lookup(transfer)));
  mapping.map(transfer.getResult(), op.getResult());
}

FailureOr<Value> RankBuilder::materialize(Value v, Operation *forOp) {
  if (Value known = mapping.lookupOrNull(v))
    return known;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    argumentsRead.insert(arg);
    return v;
  }
  Operation *def = v.getDefiningOp();
  if (auto fragment = dyn_cast<pipe::FragmentOp>(def))
    return forOp->emitOpError() << "reads a result of stage " << fragment.getStage() << "'s "
                                << pipe::stringifyActionKind(fragment.getKind())
                                << " of microbatch " << fragment.getMicrobatch().value_or(0)
                                << " before pipeline rank " << rank
                                << "'s schedule runs that fragment";
  if (auto transfer = dyn_cast<pipe::TransferOp>(def)) {
    if (rankOf(transfer.getTo()) != rank)
      return forOp->emitOpError() << "reads a transfer to stage " << transfer.getTo()
                                  << " on pipeline rank " << rank;
    if (rankOf(transfer.getFrom()) == rank) {
      FailureOr<Value> input = materialize(transfer.getInput(), transfer);
      if (failed(input))
        return failure();
      mapping.map(transfer.getResult(), *input);
      return *input;
    }
    receive(transfer);
    return mapping.lookup(transfer.getResult());
  }
  if (auto sum = dyn_cast<pipe::StageSumOp>(def)) {
    if (!tail)
      return forOp->emitOpError() << "reads a pipe.stage_sum inside the pipeline schedule";
    Value local;
    for (auto [input, stage] : llvm::zip(sum.getInputs(), sum.getStages())) {
      if (rankOf(stage) != rank)
        continue;
      FailureOr<Value> in = materialize(input, sum);
      if (failed(in))
        return failure();
      local =
          local ? tfm::AddOp::create(b, sum.getLoc(), in->getType(), local, *in).getResult() : *in;
    }
    Type type = sum.getInputs().front().getType();
    if (Value first = mapping.lookupOrNull(sum.getInputs().front()))
      type = first.getType();
    for (Value input : sum.getInputs())
      if (Value in = mapping.lookupOrNull(input))
        type = in.getType();
    if (!local)
      local = tfm::FillOp::create(b, sum.getLoc(), type, b.getF64FloatAttr(0.0));
    Value total = shard::AllReduceOp::create(b, sum.getLoc(), local.getType(), gridName, {gridAxis},
                                             local, shard::ReductionKind::Sum);
    mapping.map(sum.getResult(), total);
    return total;
  }
  for (Value read : valuesReadBy(def))
    if (failed(materialize(read, def)))
      return failure();
  Operation *clone = b.clone(*def, mapping);
  (void)clone;
  return mapping.lookup(v);
}

LogicalResult RankBuilder::emitFragment(pipe::FragmentOp fragment) {
  for (Value read : valuesReadBy(fragment))
    if (failed(materialize(read, fragment)))
      return failure();
  Block &body = fragment.getBody().front();
  int64_t microbatch = fragment.getMicrobatch().value_or(0);
  if (markWork)
    pipe::WorkBeginOp::create(b, fragment.getLoc(), fragment.getStage(), fragment.getKind(),
                              microbatch);
  for (Operation &op : body.without_terminator())
    b.clone(op, mapping);
  if (markWork)
    pipe::WorkEndOp::create(b, fragment.getLoc(), fragment.getStage(), fragment.getKind(),
                            microbatch);
  for (auto [result, yielded] :
       llvm::zip(fragment.getResults(), body.getTerminator()->getOperands()))
    mapping.map(result, mapping.lookupOrDefault(yielded));
  return success();
}

bool RankBuilder::computable(Value v, DenseMap<Value, bool> &memo) {
  if (auto it = memo.find(v); it != memo.end())
    return it->second;
  memo[v] = false; // no cycles in SSA, but be safe
  bool ok = true;
  if (auto arg = dyn_cast<BlockArgument>(v)) {
    unsigned i = arg.getArgNumber();
    tfm::ArgumentRole role = tfm::argumentRole(func, i);
    if (role == tfm::ArgumentRole::Param) {
      ok = argumentsRead.contains(arg);
    } else if (role == tfm::ArgumentRole::OptimizerState) {
      auto of = func.getArgAttrOfType<IntegerAttr>(i, tfm::kShardedLikeAttr);
      ok = !of || argumentsRead.contains(func.getArgument(of.getInt()));
    }
  } else if (mapping.contains(v)) {
    ok = true;
  } else {
    Operation *def = v.getDefiningOp();
    if (auto transfer = dyn_cast<pipe::TransferOp>(def)) {
      // One into the rank from another is received where it is read.
      ok = rankOf(transfer.getTo()) == rank &&
           (rankOf(transfer.getFrom()) != rank || computable(transfer.getInput(), memo));
    } else if (isa<pipe::FragmentOp>(def)) {
      ok = false;
    } else if (!isa<pipe::StageSumOp>(def)) {
      for (Value read : valuesReadBy(def))
        ok &= computable(read, memo);
    }
  }
  return memo[v] = ok;
}

LogicalResult RankBuilder::run() {
  Block &body = func.front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto fragment : body.getOps<pipe::FragmentOp>()) {
    auto key = std::make_tuple(fragment.getStage(), fragment.getKind(),
                               fragment.getMicrobatch().value_or(0));
    if (!fragments.try_emplace(key, fragment).second)
      return fragment.emitOpError() << "repeats stage " << fragment.getStage() << "'s "
                                    << pipe::stringifyActionKind(fragment.getKind())
                                    << " of microbatch " << std::get<2>(key);
  }
  int64_t tag = kFirstTransferTag;
  for (auto transfer : body.getOps<pipe::TransferOp>())
    tags[transfer] = tag++;

  // The transfers out of and into each fragment.
  DenseMap<Operation *, SmallVector<pipe::TransferOp>> outOf, into;
  for (auto transfer : body.getOps<pipe::TransferOp>()) {
    if (pipe::FragmentOp from = producer(transfer.getInput()))
      outOf[from].push_back(transfer);
    for (pipe::FragmentOp reader : pipeline::fragmentsReading(transfer))
      into[reader].push_back(transfer);
  }

  b.setInsertionPointToStart(&body);
  Operation *firstOld = &*b.getInsertionPoint();
  bool split = schedule.splitsBackward();
  auto fragmentOf = [&](const pipe::Action &a, bool backward) -> pipe::FragmentOp {
    pipe::ActionKind kind = !backward                                    ? pipe::ActionKind::Forward
                            : a.kind == pipe::ActionKind::BackwardWeight ? a.kind
                            : split ? pipe::ActionKind::BackwardInput
                                    : pipe::ActionKind::Backward;
    auto it = fragments.find({a.stage, kind, a.microbatch});
    return it == fragments.end() ? pipe::FragmentOp() : it->second;
  };
  pipe::Schedule explicitTransfers = schedule.withTransfers();
  // The compute actions whose outputs the schedule's SEND actions send.
  std::set<std::tuple<int64_t, bool, int64_t>> scheduledSends;
  for (const pipe::Action &a : explicitTransfers.actions[rank])
    if (a.kind == pipe::ActionKind::SendForward || a.kind == pipe::ActionKind::SendBackward)
      scheduledSends.insert({a.stage, a.kind == pipe::ActionKind::SendForward, a.microbatch});
  for (const pipe::Action &a : explicitTransfers.actions[rank]) {
    bool backward = a.kind != pipe::ActionKind::Forward &&
                    a.kind != pipe::ActionKind::SendForward &&
                    a.kind != pipe::ActionKind::RecvForward;
    pipe::FragmentOp fragment = fragmentOf(a, backward);
    if (!fragment) {
      // A stage without a backward fragment (one whose parameters get no
      // gradient) has nothing to do.
      if (backward && fragmentOf({a.stage, pipe::ActionKind::Forward, a.microbatch}, false))
        continue;
      return func.emitOpError() << "has no fragment for pipeline rank " << rank << "'s action "
                                << a.str();
    }
    switch (a.kind) {
    case pipe::ActionKind::SendForward:
    case pipe::ActionKind::SendBackward:
      for (pipe::TransferOp t : outOf.lookup(fragment))
        if (rankOf(t.getTo()) != rank && mapping.contains(t.getInput()))
          send(t);
      break;
    case pipe::ActionKind::RecvForward:
    case pipe::ActionKind::RecvBackward:
      for (pipe::TransferOp t : into.lookup(fragment))
        if (rankOf(t.getFrom()) != rank && rankOf(t.getTo()) == rank)
          receive(t);
      break;
    default:
      if (failed(emitFragment(fragment)))
        return failure();
      // What leaves the rank is computed now, as the receiver expects it,
      // and sent now where no SEND action of the schedule sends it (a
      // forward's results to the first stage).
      for (pipe::TransferOp t : outOf.lookup(fragment)) {
        if (rankOf(t.getTo()) == rank)
          continue;
        if (failed(materialize(t.getInput(), t)))
          return failure();
        if (!scheduledSends.count({a.stage, !backward, a.microbatch}))
          send(t);
      }
      break;
    }
  }
  // Sends the schedule did not place go out at the end.
  for (auto transfer : body.getOps<pipe::TransferOp>())
    if (rankOf(transfer.getFrom()) == rank && rankOf(transfer.getTo()) != rank &&
        !sent.contains(transfer)) {
      if (failed(materialize(transfer.getInput(), transfer)))
        return failure();
      send(transfer);
    }

  // Every rank sums every stage sum, in program order.
  tail = true;
  for (auto sum : llvm::to_vector(body.getOps<pipe::StageSumOp>()))
    if (failed(materialize(sum.getResult(), sum)))
      return failure();
  SmallVector<Value> results;
  SmallVector<unsigned> kept;
  DenseMap<Value, bool> memo;
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    if (!computable(v, memo))
      continue;
    FailureOr<Value> local = materialize(v, ret);
    if (failed(local))
      return failure();
    results.push_back(*local);
    kept.push_back(i);
  }
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i : kept)
    resultAttrs.push_back(func.getResultAttrDict(i));
  func::ReturnOp::create(b, ret.getLoc(), results);

  // The old body goes.
  SmallVector<Operation *> old;
  for (Operation *op = firstOld; op; op = op->getNextNode())
    old.push_back(op);
  for (Operation *op : llvm::reverse(old)) {
    op->dropAllUses();
    op->erase();
  }

  // Arguments the rank does not read go, and indices into the arguments
  // (tfm.updates, tfm.sharded_like) follow.
  llvm::BitVector unused(func.getNumArguments());
  for (BlockArgument arg : func.getArguments())
    if (arg.use_empty())
      unused.set(arg.getArgNumber());
  SmallVector<int64_t> newIndex(func.getNumArguments(), -1);
  for (unsigned i = 0, next = 0; i < func.getNumArguments(); ++i)
    if (!unused.test(i))
      newIndex[i] = next++;
  auto renumber = [&](DictionaryAttr dict) -> DictionaryAttr {
    if (!dict)
      return dict;
    NamedAttrList attrs(dict);
    for (StringRef name : {tfm::kUpdatesAttr, tfm::kShardedLikeAttr})
      if (auto index = dyn_cast_or_null<IntegerAttr>(attrs.get(name))) {
        int64_t to = index.getInt() >= 0 && index.getInt() < int64_t(newIndex.size())
                         ? newIndex[index.getInt()]
                         : -1;
        if (to < 0)
          attrs.erase(name);
        else
          attrs.set(name, IntegerAttr::get(index.getType(), to));
      }
    return attrs.getDictionary(func.getContext());
  };
  for (DictionaryAttr &dict : resultAttrs)
    dict = renumber(dict);
  SmallVector<DictionaryAttr> argAttrs;
  for (unsigned i = 0; i < func.getNumArguments(); ++i)
    if (!unused.test(i))
      argAttrs.push_back(renumber(func.getArgAttrDict(i)));
  if (failed(func.eraseArguments(unused)))
    return failure();
  func.setType(FunctionType::get(func.getContext(), func.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  func->removeAttr(pipe::kStagesAttr);
  return success();
}

} // namespace

namespace {

/// Moves each sum of two values that nothing else reads to just after the
/// later of the two. The stage sums come last, so a gradient's sum over
/// microbatches would keep every microbatch's gradient until the end; moved,
/// each joins the running sum as soon as its backward pass made it, and one
/// is live at a time, as without a pipeline. The sums keep their order, and
/// so their f32 results.
void accumulateEarly(func::FuncOp func) {
  Block &body = func.getBody().front();
  SmallVector<tfm::AddOp> adds(body.getOps<tfm::AddOp>());
  for (tfm::AddOp add : adds) {
    if (!llvm::all_of(add->getOperands(), [](Value v) { return v.hasOneUse(); }))
      continue;
    Operation *after = nullptr;
    for (Value v : add->getOperands())
      if (Operation *def = v.getDefiningOp()) {
        def = body.findAncestorOpInBlock(*def);
        if (!after || after->isBeforeInBlock(def))
          after = def;
      }
    if (after)
      add->moveAfter(after);
    else
      add->moveBefore(&body.front());
  }
}

} // namespace

SmallVector<pipe::FragmentOp> pmlir::pipeline::fragmentsReading(Operation *op) {
  Block *body = op->getBlock();
  SmallVector<pipe::FragmentOp> readers;
  SmallVector<Operation *> work(op->getUsers());
  DenseSet<Operation *> seen;
  while (!work.empty()) {
    Operation *user = body->findAncestorOpInBlock(*work.pop_back_val());
    if (!user || !seen.insert(user).second)
      continue;
    if (auto fragment = dyn_cast<pipe::FragmentOp>(user))
      readers.push_back(fragment);
    else
      work.append(user->user_begin(), user->user_end());
  }
  return readers;
}

LogicalResult pmlir::pipeline::lowerToPipelineRank(func::FuncOp func, int64_t rank, StringRef axis,
                                                   bool markWork) {
  auto module = func->getParentOfType<ModuleOp>();
  SmallVector<pipe::ScheduleOp> schedules(module.getOps<pipe::ScheduleOp>());
  if (schedules.size() != 1)
    return func.emitOpError() << "needs one pipe.schedule in its module to be lowered to a "
                                 "pipeline rank, the module has "
                              << schedules.size();
  pipe::ScheduleOp scheduleOp = schedules.front();
  pipe::Schedule schedule = scheduleOp.getSchedule();
  if (rank < 0 || rank >= schedule.ranks)
    return func.emitOpError() << "has no pipeline rank " << rank << ": its schedule has "
                              << schedule.ranks;
  auto stages = func->getAttrOfType<IntegerAttr>(pipe::kStagesAttr);
  if (!stages || stages.getInt() != schedule.stages)
    return func.emitOpError() << "is cut into "
                              << (stages ? std::to_string(stages.getInt()) : std::string("no"))
                              << " pipeline stages, but the schedule runs " << schedule.stages;
  auto grid = module.lookupSymbol<shard::GridOp>(kGridName);
  auto mesh = module->getAttrOfType<tfm::MeshAttr>(tfm::kMeshAttr);
  if (!grid || !mesh)
    return func.emitOpError() << "must be partitioned on a mesh (a shard.grid @" << kGridName
                              << ") before its pipeline ranks are built";
  FailureOr<sharding::Grid> declared = sharding::Grid::declaredBy(grid, mesh);
  if (failed(declared))
    return failure();
  if (mesh.axisIndex(axis) < 0)
    return func.emitOpError() << "is pipelined over mesh axis '" << axis
                              << "', which the mesh does not have";
  SmallVector<int16_t> axes = declared->axesOf({axis});
  if (axes.size() != 1)
    return func.emitOpError() << "has no grid axis for the whole mesh axis '" << axis << "'";
  int64_t size = mesh.axisSize(axis);
  if (size != schedule.ranks)
    return func.emitOpError() << "has a schedule for " << schedule.ranks
                              << " pipeline ranks on a mesh whose '" << axis << "' axis has "
                              << size;
  RankBuilder builder(func, schedule, rank, kGridName, axes.front(), markWork);
  if (failed(builder.run()))
    return failure();
  accumulateEarly(func);
  scheduleOp->erase();
  return success();
}
