//===- Pricing.cpp - What the auto-sharder's choices cost -----------------===//
//
// Part of pmlir.
//
// Reshards priced by the planner and the cost model (cached per type and
// pair of shardings), the problem's edges (one per pair of variables a use
// joins, its cost per pair of strategies), and the memory live at each
// program point under each choice.
//
//===----------------------------------------------------------------------===//

#include "AutoSharderImpl.h"

#include "pmlir/Support/Bytes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"

#include <numeric>
#include <set>

#define DEBUG_TYPE "pmlir-auto-sharding"

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;
using namespace pmlir::sharding::autoshard;

const Price &AutoSharder::Impl::price(RankedTensorType type, const Sharding &from,
                                      const Sharding &to) const {
  ShardingAttr fromAttr = from.toAttr(context), toAttr = to.toAttr(context);
  auto key = std::make_tuple(type.getAsOpaquePointer(), fromAttr.getAsOpaquePointer(),
                             toAttr.getAsOpaquePointer());
  auto it = prices.find(key);
  if (it != prices.end())
    return it->second;
  Price p;
  std::string error;
  if (from == to) {
    p.seconds = 0;
  } else if (std::optional<ReshardPlan> plan = planReshard(mesh, type, from, to, error)) {
    p.seconds = 0;
    for (const ReshardStep &step : plan->steps) {
      if (step.kind == CollectiveKind::AllSlice)
        continue;
      CollectiveCost cost = options.model.cost(step.kind, step.bytes, step.axes, step.groupSize);
      p.seconds += cost.seconds;
      Prediction::Comm comm;
      comm.seconds = cost.seconds;
      comm.bytes = step.bytes;
      comm.wireBytes = cost.wireBytes;
      comm.collectives = 1;
      p.steps.push_back({llvm::join(step.axes, ","), comm});
    }
  }
  return prices.emplace(key, std::move(p)).first->second;
}

/// The reshard edges, one per pair of classes and operand, weighted by
/// how many uses they stand for.
void AutoSharder::Impl::buildEdges() {
  for (const Use &use : uses)
    ++useCounts[{nodes[use.from].cls, use.result, nodes[use.to].cls, use.operand}];
  std::map<std::tuple<int, unsigned, int, int>, const Use *> representative;
  std::map<std::tuple<int, int, std::vector<int>, std::vector<int>>, size_t> edgeOf;
  for (const Use &use : uses)
    representative.try_emplace({nodes[use.from].cls, use.result, nodes[use.to].cls, use.operand},
                               &use);
  for (auto &[key, count] : useCounts) {
    const Use &use = *representative.at(key);
    int from = varOf(use.from), to = varOf(use.to);
    RankedTensorType type = typeOf(use);
    size_t fromCount = problem.cost[from].size(), toCount = problem.cost[to].size();
    if (from == to) {
      // Both ends choose together: the reshard of each choice.
      for (size_t s = 0; s < fromCount; ++s)
        problem.cost[from][s] +=
            count * price(type, resultSharding(use.from, use.result, static_cast<int>(s)),
                          targetSharding(use, static_cast<int>(s)))
                        .seconds;
      continue;
    }
    Problem::Edge edge;
    edge.from = from;
    edge.to = to;
    std::vector<Sharding> rows, cols;
    auto classify = [](const Sharding &s, std::vector<Sharding> &seen) {
      for (auto [i, have] : llvm::enumerate(seen))
        if (have == s)
          return static_cast<int>(i);
      seen.push_back(s);
      return static_cast<int>(seen.size()) - 1;
    };
    for (size_t s = 0; s < fromCount; ++s)
      edge.fromClass.push_back(
          classify(resultSharding(use.from, use.result, static_cast<int>(s)), rows));
    for (size_t t = 0; t < toCount; ++t)
      edge.toClass.push_back(classify(targetSharding(use, static_cast<int>(t)), cols));
    bool anyCost = false;
    edge.cost.assign(rows.size(), std::vector<double>(cols.size(), 0.0));
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t c = 0; c < cols.size(); ++c) {
        edge.cost[r][c] = count * price(type, rows[r], cols[c]).seconds;
        anyCost |= edge.cost[r][c] != 0;
      }
    if (!anyCost)
      continue;
    // Edges between the same variables, choosing the same rows and
    // columns, are one edge: the cut between two stages of the same
    // layer class, repeated at every stage, is priced once.
    auto [it, fresh] = edgeOf.try_emplace({edge.from, edge.to, edge.fromClass, edge.toClass},
                                          problem.edges.size());
    if (fresh) {
      problem.edges.push_back(std::move(edge));
      continue;
    }
    Problem::Edge &same = problem.edges[it->second];
    for (size_t r = 0; r < rows.size(); ++r)
      for (size_t c = 0; c < cols.size(); ++c)
        same.cost[r][c] += edge.cost[r][c];
  }
  stats.edges = static_cast<int64_t>(problem.edges.size());
}

/// Memory: the arguments, and the values live at the program's heaviest
/// points (by their whole bytes); of a program on several ranks, each
/// rank's.
void AutoSharder::Impl::buildMemory() {
  problem.memoryBudget = options.memoryBudget;
  if (options.memoryPoints <= 0)
    return;
  if (options.rankTimelines.empty()) {
    addMemoryPoints(order, std::nullopt);
    return;
  }
  for (auto [r, timeline] : llvm::enumerate(options.rankTimelines))
    addMemoryPoints(timeline, static_cast<int64_t>(r));
}

void AutoSharder::Impl::addMemoryPoints(ArrayRef<Operation *> timeline,
                                        std::optional<int64_t> rank) {
  DenseMap<Operation *, int64_t> at;
  for (auto [i, op] : llvm::enumerate(timeline))
    at[op] = static_cast<int64_t>(i);
  Operation *ret = func.getFunctionBody().back().getTerminator();
  // The last point: the return's, which reads its values there (a rank's
  // timeline holds it; a single program's order ends before it).
  const int64_t end =
      static_cast<int64_t>(timeline.size()) - (!timeline.empty() && timeline.back() == ret ? 1 : 0);
  // Per value made here, where it is made and last read. A value made on
  // another rank is not held here (what a rank receives is the transfer's
  // result, made here).
  llvm::MapVector<Value, std::pair<int64_t, int64_t>> span;
  // The arguments held: every one of a single program; a rank's, those its
  // ops read.
  llvm::SetVector<Value> held;
  if (!rank)
    for (BlockArgument arg : func.getArguments())
      held.insert(arg);
  DenseMap<Value, int64_t> argumentLastRead;
  for (auto [i, op] : llvm::enumerate(timeline)) {
    // The yield of an inline body (a layer, a fragment) hands its values
    // on; their readers keep them.
    if (op->hasTrait<mlir::OpTrait::IsTerminator>() && op->getParentOp() &&
        op->getParentOp()->hasTrait<pmlir::tfm::OpTrait::InlineBody>())
      continue;
    int64_t readAt = op == ret ? end : static_cast<int64_t>(i);
    for (Value v : op->getOperands()) {
      Value c = pmlir::tfm::yieldedValue(v);
      if (auto arg = dyn_cast<BlockArgument>(c);
          arg && arg.getOwner() == &func.getFunctionBody().front()) {
        held.insert(arg);
        argumentLastRead[arg] = std::max(argumentLastRead.lookup(arg), readAt);
        continue;
      }
      if (!isa<OpResult>(c) || !producer.count(c))
        continue;
      auto made = at.find(c.getDefiningOp());
      if (made == at.end())
        continue;
      auto &[def, last] = span.try_emplace(c, made->second, made->second).first->second;
      last = std::max(last, readAt);
    }
  }
  // A training step's new parameters and optimizer state are written into
  // their arguments' buffers (pmlir-update-arguments-in-place): once its
  // argument's last reader has run, an update holds no bytes of its own.
  DenseSet<Value> inPlace;
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    // The dialect verifies that tfm.updates names an argument.
    auto updates = func.getResultAttrOfType<IntegerAttr>(i, kUpdatesAttr);
    if (!updates)
      continue;
    Value update = pmlir::tfm::yieldedValue(ret->getOperand(i));
    auto made = span.find(update);
    auto read = argumentLastRead.find(func.getArgument(updates.getInt()));
    if (made != span.end() && read != argumentLastRead.end() && read->second <= made->second.first)
      inPlace.insert(update);
  }
  // The bytes live at each point, whole.
  std::vector<double> live(end + 2, 0.0);
  for (auto &[v, s] : span) {
    if (inPlace.contains(v))
      continue;
    auto type = cast<RankedTensorType>(v.getType());
    double bytes = static_cast<double>(type.getNumElements() * elementBytes(type.getElementType()));
    live[s.first] += bytes;
    live[std::min(s.second, end) + 1] -= bytes;
  }
  for (int64_t p = 1; p <= end; ++p)
    live[p] += live[p - 1];
  live.resize(end + 1);
  std::vector<int64_t> points(live.size());
  std::iota(points.begin(), points.end(), 0);
  llvm::stable_sort(points, [&](int64_t a, int64_t b) { return live[a] > live[b]; });
  points.resize(std::min<size_t>(points.size(), options.memoryPoints));
  for (int64_t p : points) {
    Problem::MemoryPoint point;
    point.where = (rank ? "on rank " + std::to_string(*rank) + " " : std::string()) +
                  (p < end ? "at '" + timeline[p]->getName().getStringRef().str() + "' (position " +
                                 std::to_string(p) + ")"
                           : "at the return");
    // Per variable, the bytes of each strategy: of the arguments and of
    // the values, whole, and as the device's share of them.
    std::map<int, std::vector<double>> terms, argumentTerms, valueTerms;
    auto add = [&](std::map<int, std::vector<double>> &part, int node, unsigned result,
                   RankedTensorType type, double share) {
      int var = varOf(node);
      std::vector<double> &whole = part[var], &bytes = terms[var];
      whole.resize(problem.cost[var].size(), 0.0);
      bytes.resize(problem.cost[var].size(), 0.0);
      for (size_t s = 0; s < bytes.size(); ++s) {
        double b = localBytes(type, resultSharding(node, result, static_cast<int>(s)));
        whole[s] += b;
        bytes[s] += share * b;
      }
    };
    for (Value arg : held)
      if (auto it = producer.find(arg); it != producer.end())
        add(argumentTerms, it->second.first, 0, cast<RankedTensorType>(arg.getType()),
            rank ? 1.0 : options.argumentShare);
    for (auto &[v, s] : span)
      if (s.first <= p && p <= s.second && !inPlace.contains(v)) {
        auto [n, r] = producer.lookup(v);
        add(valueTerms, n, r, cast<RankedTensorType>(v.getType()), rank ? 1.0 : options.valueShare);
      }
    auto termsOf = [](std::map<int, std::vector<double>> &part) {
      std::vector<std::pair<int, std::vector<double>>> out;
      for (auto &[var, bytes] : part)
        out.push_back({var, std::move(bytes)});
      return out;
    };
    point.terms = termsOf(terms);
    memoryParts.push_back({termsOf(argumentTerms), termsOf(valueTerms)});
    problem.memory.push_back(std::move(point));
  }
}
