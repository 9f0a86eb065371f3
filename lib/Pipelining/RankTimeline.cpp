//===- RankTimeline.cpp - The order each pipeline rank runs ops in --------===//
//
// Part of pmlir.
//
// See pmlir/Pipelining/Pipelining.h. A global pipelined program lists its
// fragments microbatch by microbatch; each rank runs its own in its
// schedule's order, and what it holds at once follows that order, not the
// program's. Each top-level op is given a time on each rank that runs it:
// a fragment its action's index in the rank's list (the schedule's SEND
// and RECV actions among them); a transfer is sent on its producer's rank
// at its SEND action, else right after its fragment, and received on its
// consumer's at the RECV action of the first fragment there that reads it,
// else just before that fragment; a stage sum runs on every rank after the
// schedule's actions; any other op that reads what ranks hold runs on each
// rank that holds all of it, as soon as the last of it is made (so a
// running sum of gradients adds each term as it is made, as
// lowerToPipelineRank builds it); the ops of the arguments alone
// (microbatch slices, positions) run on each rank that reads them, just
// before the first reader; the return ends every rank. Ops nested in a
// top-level op run at its time, in program order.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Pipelining.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"

#include <algorithm>
#include <map>
#include <tuple>

using namespace mlir;
using namespace pmlir;

FailureOr<std::vector<std::vector<Operation *>>>
pmlir::pipeline::rankTimelines(func::FuncOp func, const pipe::Schedule &schedule) {
  Block &body = func.getBody().front();
  // Each action's index in its rank's list, the transfers the schedule
  // places (SEND, RECV) among them.
  using Key = std::tuple<int64_t, pipe::ActionKind, int64_t>;
  std::map<Key, std::pair<int64_t, double>> actionAt;
  double end = 0;
  for (auto [r, actions] : llvm::enumerate(schedule.withTransfers().actions)) {
    double index = 0;
    for (const pipe::Action &a : actions)
      actionAt[{a.stage, a.kind, a.microbatch}] = {static_cast<int64_t>(r), index++};
    end = std::max(end, index);
  }
  // The time of a fragment's SEND or RECV action of `kind` on `rank`, if
  // the schedule has one.
  auto transferAction = [&](pipe::FragmentOp fragment, pipe::ActionKind forward,
                            pipe::ActionKind backward, int64_t rank) -> std::optional<double> {
    pipe::ActionKind kind = fragment.getKind() == pipe::ActionKind::Forward ? forward : backward;
    auto it = actionAt.find({fragment.getStage(), kind, fragment.getMicrobatch().value_or(0)});
    if (it == actionAt.end() || it->second.first != rank)
      return std::nullopt;
    return it->second.second;
  };
  // Per top-level op, the time it runs at on each rank that runs it.
  using Placement = std::map<int64_t, double>;
  DenseMap<Operation *, Placement> placed;
  for (auto fragment : body.getOps<pipe::FragmentOp>()) {
    int64_t microbatch = fragment.getMicrobatch().value_or(0);
    auto it = actionAt.find({fragment.getStage(), fragment.getKind(), microbatch});
    if (it == actionAt.end() || !pipe::isCompute(fragment.getKind()))
      return fragment.emitOpError()
             << "is stage " << fragment.getStage() << "'s "
             << pipe::stringifyActionKind(fragment.getKind()) << " of microbatch " << microbatch
             << ", which no action of the pipeline schedule runs";
    placed[fragment] = {{it->second.first, it->second.second}};
  }
  auto topLevel = [&](Operation *op) { return body.findAncestorOpInBlock(*op); };
  Operation *ret = body.getTerminator();
  // Forward: what reads a rank's values runs there once they are made.
  for (Operation &op : body) {
    if (&op == ret || isa<pipe::FragmentOp>(op))
      continue;
    if (auto transfer = dyn_cast<pipe::TransferOp>(op)) {
      Operation *def = transfer.getInput().getDefiningOp();
      int64_t from = schedule.rankOf(transfer.getFrom()), to = schedule.rankOf(transfer.getTo());
      auto made = def ? placed.find(def) : placed.end();
      if (made == placed.end() || !made->second.count(from))
        continue;
      // Sent at the schedule's SEND of its fragment, else right after it.
      double sent = made->second.at(from);
      if (auto fragment = dyn_cast<pipe::FragmentOp>(def))
        sent = transferAction(fragment, pipe::ActionKind::SendForward,
                              pipe::ActionKind::SendBackward, from)
                   .value_or(sent);
      Placement p = {{from, sent}};
      if (to != from) {
        // Received at the schedule's RECV of its first reader there, else
        // just before that reader.
        double received = end - 0.5;
        for (pipe::FragmentOp reader : fragmentsReading(&op))
          if (auto at = placed.find(reader); at != placed.end() && at->second.count(to))
            received = std::min(received, transferAction(reader, pipe::ActionKind::RecvForward,
                                                         pipe::ActionKind::RecvBackward, to)
                                              .value_or(at->second.at(to) - 0.5));
        p[to] = received;
      }
      placed[&op] = std::move(p);
      continue;
    }
    // A stage sum is summed over the pipeline on every rank, after the
    // schedule's actions.
    if (isa<pipe::StageSumOp>(op)) {
      Placement p;
      for (int64_t r = 0; r < schedule.ranks; ++r)
        p[r] = end;
      placed[&op] = std::move(p);
      continue;
    }
    // Any other op runs on the ranks that hold everything it reads (a
    // transfer's result is held where it is received).
    std::optional<Placement> p;
    for (Value v : valuesReadBy(&op)) {
      Operation *def = v.getDefiningOp();
      auto it = def ? placed.find(def) : placed.end();
      if (it == placed.end())
        continue;
      Placement heldAt = it->second;
      if (auto transfer = dyn_cast<pipe::TransferOp>(def)) {
        int64_t to = schedule.rankOf(transfer.getTo());
        heldAt = {{to, it->second.at(to)}};
      }
      if (!p) {
        p = std::move(heldAt);
        continue;
      }
      Placement both;
      for (auto [rank, time] : *p)
        if (auto there = heldAt.find(rank); there != heldAt.end())
          both[rank] = std::max(time, there->second);
      p = std::move(both);
    }
    if (p && !p->empty())
      placed[&op] = std::move(*p);
  }
  // Backward: the ops of the arguments alone run where they are read.
  for (Operation &op : llvm::reverse(body)) {
    if (&op == ret || placed.count(&op))
      continue;
    Placement p;
    for (Operation *user : op.getUsers()) {
      Operation *reader = topLevel(user);
      auto it = reader ? placed.find(reader) : placed.end();
      if (it == placed.end())
        continue;
      for (auto [rank, time] : it->second) {
        double before = isa<pipe::FragmentOp>(reader) ? time - 0.5 : time;
        p[rank] = p.count(rank) ? std::min(p[rank], before) : before;
      }
    }
    if (!p.empty())
      placed[&op] = std::move(p);
  }
  for (int64_t r = 0; r < schedule.ranks; ++r)
    placed[ret][r] = end;

  // Each rank's ops by (time, program order).
  std::vector<std::vector<std::tuple<double, int64_t, Operation *>>> runs(schedule.ranks);
  int64_t position = 0;
  func->walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (op == func.getOperation())
      return;
    ++position;
    auto it = placed.find(topLevel(op));
    if (it == placed.end())
      return;
    for (auto [rank, time] : it->second)
      if (rank >= 0 && rank < schedule.ranks)
        runs[rank].emplace_back(time, position, op);
  });
  std::vector<std::vector<Operation *>> timelines(schedule.ranks);
  for (auto [r, run] : llvm::enumerate(runs)) {
    llvm::sort(run, [](const auto &a, const auto &b) {
      return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
    });
    for (const auto &entry : run)
      timelines[r].push_back(std::get<2>(entry));
  }
  return timelines;
}
