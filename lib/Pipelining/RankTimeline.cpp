//===- RankTimeline.cpp - The order each pipeline rank runs ops in --------===//
//
// Part of pmlir.
//
// See pmlir/Pipelining/Pipelining.h. A global pipelined program lists its
// fragments microbatch by microbatch; each rank runs its own in its
// schedule's order, and what it holds at once follows that order, not the
// program's. Each top-level op is given a time on each rank that runs it:
// a fragment its action's index in the rank's list; an op that reads what
// ranks hold runs on each of them as soon as the last of it is made (so a
// running sum of gradients adds each term as it is made, as
// lowerToPipelineRank builds it); a transfer is sent on its producer's
// rank right after its fragment and received on its consumer's just before
// the first fragment there that reads it; the ops of the arguments alone
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

std::vector<std::vector<Operation *>>
pmlir::pipeline::rankTimelines(func::FuncOp func, const pipe::Schedule &schedule) {
  Block &body = func.getBody().front();
  // Each compute action's rank and index in the rank's list.
  std::map<std::tuple<int64_t, pipe::ActionKind, int64_t>, std::pair<int64_t, double>> actionAt;
  double end = 0;
  for (auto [r, actions] : llvm::enumerate(schedule.actions)) {
    double index = 0;
    for (const pipe::Action &a : actions)
      if (pipe::isCompute(a.kind))
        actionAt[{a.stage, a.kind, a.microbatch}] = {static_cast<int64_t>(r), index++};
    end = std::max(end, index);
  }
  // Per top-level op, the time it runs at on each rank that runs it.
  using Placement = std::map<int64_t, double>;
  DenseMap<Operation *, Placement> placed;
  for (auto fragment : body.getOps<pipe::FragmentOp>()) {
    auto it = actionAt.find(
        {fragment.getStage(), fragment.getKind(), fragment.getMicrobatch().value_or(0)});
    // A fragment no rank runs holds nothing anywhere.
    if (it != actionAt.end())
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
      auto sent = def ? placed.find(def) : placed.end();
      if (sent == placed.end() || !sent->second.count(from))
        continue;
      Placement p = {{from, sent->second.at(from)}};
      if (to != from) {
        double received = end - 0.5;
        for (Operation *user : transfer->getUsers())
          if (Operation *reader = topLevel(user); isa_and_nonnull<pipe::FragmentOp>(reader))
            if (auto at = placed.find(reader); at != placed.end() && at->second.count(to))
              received = std::min(received, at->second.at(to) - 0.5);
        p[to] = received;
      }
      placed[&op] = std::move(p);
      continue;
    }
    Placement p;
    for (Value v : valuesReadBy(&op)) {
      Operation *def = v.getDefiningOp();
      auto it = def ? placed.find(def) : placed.end();
      if (it == placed.end())
        continue;
      for (auto [rank, time] : it->second)
        p[rank] = p.count(rank) ? std::max(p[rank], time) : time;
    }
    if (!p.empty())
      placed[&op] = std::move(p);
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
