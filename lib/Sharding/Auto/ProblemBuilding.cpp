//===- ProblemBuilding.cpp - The auto-sharder's integer program -----------===//
//
// Part of pmlir.
//
// Classes made variables, or followers of the variable their one operand
// comes from (Alpa's s_follow); the integer program assembled from the
// graph, strategies and prices; a solution read back as a plan with its
// predicted costs.
//
//===----------------------------------------------------------------------===//

#include "AutoSharderImpl.h"

#include "llvm/Support/Debug.h"

#include <chrono>
#include <numeric>

#define DEBUG_TYPE "pmlir-auto-sharding"

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;
using namespace pmlir::sharding::autoshard;

/// Makes each class a variable, or a follower of its operand's.
void AutoSharder::Impl::buildVariables() {
  // A class follows when its ops are cheap, read one sharded tensor, and
  // every member reads it from one class, already placed.
  std::vector<const Use *> soleUse(nodes.size(), nullptr);
  std::vector<int> ruledOperands(nodes.size(), 0);
  for (const Use &use : uses)
    if (use.operand >= 0) {
      ++ruledOperands[use.to];
      soleUse[use.to] = &use;
    }
  for (auto [c, cls] : llvm::enumerate(classes)) {
    int rep = cls.members.front();
    const Node &node = nodes[rep];
    bool follows = options.follow && node.op && ruledOperands[rep] == 1;
    if (follows)
      if (auto cost = dyn_cast<CostOpInterface>(node.op))
        follows = cost.getFlops() == 0;
    int leaderClass = -1;
    unsigned leaderResult = 0;
    if (follows) {
      for (int m : cls.members) {
        if (ruledOperands[m] != 1) {
          follows = false;
          break;
        }
        const Use &use = *soleUse[m];
        int from = nodes[use.from].cls;
        if (leaderClass == -1) {
          leaderClass = from;
          leaderResult = use.result;
        } else if (leaderClass != from || leaderResult != use.result) {
          follows = false;
          break;
        }
      }
      follows = follows && leaderClass >= 0 && leaderClass != static_cast<int>(c) &&
                classes[leaderClass].var >= 0;
    }
    if (follows) {
      // Per strategy of the leader's variable, the cheapest block of this
      // op that reads its operand as the leader makes it (Alpa's s_follow
      // keeps the leader's sharding); only where none does, the cheapest
      // block and reshard. Picking by block and reshard alone would split
      // a follower of a whole leader (a free slice, half the block), and
      // what reads the follower would pay to gather it again: no plan
      // would keep the program whole.
      const NodeClass &leader = classes[leaderClass];
      const Use &use = *soleUse[rep];
      int leaderNode = leader.members.front();
      size_t count = problem.cost[leader.var].size();
      std::vector<int> chosen(count, -1);
      for (size_t s = 0; s < count; ++s) {
        const Sharding &from = resultSharding(leaderNode, leaderResult, static_cast<int>(s));
        double best = kForbidden;
        bool kept = false;
        for (auto [t, strategy] : llvm::enumerate(node.strategies)) {
          bool keeps = *strategy.operands[use.operand] == from && strategy.seconds < kForbidden;
          if (kept && !keeps)
            continue;
          double c = keeps ? strategy.seconds
                           : price(typeOf(use), from, *strategy.operands[use.operand]).seconds +
                                 strategy.seconds;
          if ((keeps && !kept) || c < best) {
            best = c;
            kept = keeps;
            chosen[s] = static_cast<int>(t);
          }
        }
        if (chosen[s] < 0) {
          follows = false;
          break;
        }
      }
      if (follows) {
        cls.var = leader.var;
        cls.strategyOf = std::move(chosen);
        cls.follower = true;
        ++stats.followers;
      }
    }
    if (!cls.follower) {
      cls.var = static_cast<int>(problem.cost.size());
      cls.strategyOf.resize(node.strategies.size());
      std::iota(cls.strategyOf.begin(), cls.strategyOf.end(), 0);
      problem.cost.emplace_back(node.strategies.size(), 0.0);
      rootOf.push_back(static_cast<int>(c));
      problem.names.push_back(
          describeNode(rep) +
          (cls.members.size() > 1 ? " (x" + std::to_string(cls.members.size()) + ")" : ""));
    }
    // The class's blocks, once per member.
    for (size_t s = 0; s < problem.cost[cls.var].size(); ++s)
      problem.cost[cls.var][s] += cls.members.size() * node.strategies[cls.strategyOf[s]].seconds;
  }
  stats.variables = static_cast<int64_t>(problem.cost.size());
  for (const std::vector<double> &c : problem.cost)
    stats.strategies += static_cast<int64_t>(c.size());
}

std::string AutoSharder::Impl::describeNode(int n) const {
  const Node &node = nodes[n];
  std::string text;
  llvm::raw_string_ostream os(text);
  if (node.result >= 0) {
    os << "result #" << node.result;
  } else if (!node.op) {
    os << "argument #" << node.arg.getArgNumber();
    if (auto name = func.getArgAttrOfType<StringAttr>(node.arg.getArgNumber(), kNameAttr))
      os << " '" << name.getValue() << "'";
  } else {
    os << "'" << node.op->getName() << "'";
    if (auto layer = node.op->getParentOfType<LayerOp>())
      os << " in layer " << layer.getIndex() << (layer.getBackward() ? " backward" : "");
    os << " at position " << position.lookup(node.op);
  }
  return text;
}

void AutoSharder::Impl::build() {
  auto start = std::chrono::steady_clock::now();
  buildNodes();
  buildClasses();
  buildVariables();
  buildEdges();
  buildMemory();
  stats.buildSeconds = secondsSince(start);
  LLVM_DEBUG(llvm::dbgs() << "auto-sharding: " << stats.ops << " ops, " << stats.arguments
                          << " arguments, " << stats.classes << " classes, " << stats.followers
                          << " followers, " << stats.variables << " variables, " << stats.strategies
                          << " strategies, " << stats.edges << " edges\n");
}

Plan AutoSharder::Impl::planOf(const Solution &solution) const {
  Plan plan;
  plan.stats = stats;
  std::map<std::pair<int, size_t>, int64_t> classIds;
  for (auto [n, node] : llvm::enumerate(nodes)) {
    int s = solution.choice[varOf(static_cast<int>(n))];
    const Strategy &strategy = node.strategies[strategyIn(node.cls, s)];
    if (node.result >= 0) {
      plan.results[node.result] = strategy.results[0];
      continue;
    }
    if (!node.op) {
      plan.shardings[node.arg] = strategy.results[0];
      continue;
    }
    plan.reads[node.op] = strategy.operands;
    for (auto [r, result] : llvm::enumerate(node.op->getResults())) {
      plan.shardings[result] = strategy.results[r];
      plan.classOf[result] =
          classIds.try_emplace({node.cls, r}, static_cast<int64_t>(classIds.size())).first->second;
    }
    double sent = 0;
    for (const auto &[axes, comm] : strategy.comm) {
      plan.opCosts[node.op].comm[axes] += comm;
      plan.prediction.commPerAxes[axes] += comm;
      sent += comm.seconds;
    }
    plan.prediction.commSeconds += sent;
    plan.prediction.computeSeconds += strategy.seconds - sent;
    plan.opCosts[node.op].computeSeconds += strategy.seconds - sent;
  }
  for (const Use &use : uses) {
    int sFrom = solution.choice[varOf(use.from)], sTo = solution.choice[varOf(use.to)];
    const Sharding &from = resultSharding(use.from, use.result, sFrom);
    const Sharding &to = targetSharding(use, sTo);
    if (from != to && nodes[use.from].isArgument() && nodes[use.to].op)
      plan.seedReads.push_back({nodes[use.to].op, static_cast<unsigned>(use.operand), to});
    if (from != to && use.operand < 0 && nodes[use.to].isArgument())
      plan.seedReads.push_back(
          {func.getFunctionBody().back().getTerminator(), returnedAs.lookup(use.to), to});
    const Price &p = price(typeOf(use), from, to);
    // A reshard is the reader's: an op's, or the return's for a result.
    Operation *reader =
        use.operand >= 0 ? nodes[use.to].op : func.getFunctionBody().back().getTerminator();
    for (const auto &[axes, comm] : p.steps) {
      plan.opCosts[reader].comm[axes] += comm;
      plan.prediction.commPerAxes[axes] += comm;
      plan.prediction.commSeconds += comm.seconds;
    }
  }
  plan.prediction.peakMemoryBytes = peakMemory(problem, solution.choice);
  auto bytesOf = [&](const std::vector<std::pair<int, std::vector<double>>> &terms) {
    double sum = 0;
    for (const auto &[var, bytes] : terms)
      sum += bytes[solution.choice[var]];
    return sum;
  };
  double heaviest = -1;
  for (const MemoryParts &point : memoryParts) {
    double arguments = bytesOf(point.arguments), values = bytesOf(point.values);
    double held = options.argumentShare * arguments + options.valueShare * values;
    if (held > heaviest) {
      heaviest = held;
      plan.prediction.argumentBytes = arguments;
      plan.prediction.valueBytes = values;
    }
  }
  plan.prediction.objective = evaluate(problem, solution.choice);
  return plan;
}
