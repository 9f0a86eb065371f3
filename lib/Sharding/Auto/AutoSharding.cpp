//===- AutoSharding.cpp - Alpa-style intra-op auto-sharding ---------------===//
//
// Part of pmlir.
//
// See pmlir/Sharding/Auto/AutoSharding.h. This file holds its public
// interface (the sharder's build, solve, writeSeeds); its parts (graph,
// strategies, pricing, problem building) are listed in AutoSharderImpl.h.
//
//===----------------------------------------------------------------------===//

#include "AutoSharderImpl.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Reshard.h"
#include "pmlir/Support/Bytes.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <cmath>
#include <numeric>
#include <set>

#define DEBUG_TYPE "pmlir-auto-sharding"

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;
using namespace pmlir::sharding::autoshard;

AutoSharder::AutoSharder(FunctionOpInterface func, MeshAttr mesh, const Options &options)
    : impl(std::make_unique<Impl>(func, mesh, options)) {
  impl->build();
}

AutoSharder::~AutoSharder() = default;

const Problem &AutoSharder::problem() const { return impl->problem; }
const ProblemStats &AutoSharder::stats() const { return impl->stats; }
Plan AutoSharder::planOf(const Solution &solution) const { return impl->planOf(solution); }

std::optional<Plan> AutoSharder::solve(std::string &error) {
  const Problem &p = impl->problem;
  const Options &options = impl->options;
  // A budget below what the smallest choice at some point needs is not
  // searched.
  double bound = leastMemoryBound(p);
  SolveResult result;
  if (bound > p.memoryBudget)
    result.status = SolveStatus::Infeasible;
  else
    result = autoshard::solve(p, options.solver, options.timeLimitSeconds, options.nodeLimit);
  if (result.status == SolveStatus::Infeasible && std::isfinite(p.memoryBudget)) {
    SolveResult least =
        minimizePeakMemory(p, options.solver, options.timeLimitSeconds, options.nodeLimit);
    error = "cannot fit under " + pmlir::formatBytes(p.memoryBudget, 2) +
            ": the least memory any plan needs is ";
    if (least.status != SolveStatus::Solved)
      error += "at least " + pmlir::formatBytes(bound, 2) + " (" + least.error + ")";
    else if (least.solution.optimal || least.solution.objective <= bound * (1 + 1e-9))
      error += pmlir::formatBytes(least.solution.objective, 2);
    else
      error += "between " + pmlir::formatBytes(bound, 2) + " and " +
               pmlir::formatBytes(least.solution.objective, 2) + " (the search stopped)";
    return std::nullopt;
  }
  if (result.status != SolveStatus::Solved) {
    error = result.error;
    return std::nullopt;
  }
  impl->stats.solveSeconds = result.seconds;
  impl->stats.optimal = result.solution.optimal;
  return impl->planOf(result.solution);
}

//===----------------------------------------------------------------------===//
// Seeds
//===----------------------------------------------------------------------===//

FailureOr<int64_t> pmlir::sharding::autoshard::writeSeeds(FunctionOpInterface func, MeshAttr mesh,
                                                          const Plan &plan) {
  MLIRContext *context = func->getContext();
  // Constraints enter propagation first (priority 0) and decide the values
  // between them and the arguments (priority 1): a constraint on an op's
  // result then also gives the op its sharding.
  auto withPriority = [&](const Sharding &s, int64_t priority) {
    return ShardingAttr::get(context, s.dims, s.pending, /*open=*/{}, priority, s.parts);
  };
  std::vector<ShardingSeed> seeds;
  for (BlockArgument arg : func.getArguments()) {
    auto it = plan.shardings.find(arg);
    if (it == plan.shardings.end())
      continue;
    func.setArgAttr(arg.getArgNumber(), kShardingAttr, withPriority(it->second, 1));
    seeds.push_back({arg, it->second, {}, 1});
  }
  for (const auto &[i, s] : plan.results)
    func.setResultAttr(i, kShardingAttr, s.toAttr(context));
  // Constraints where propagation reaches another sharding: at the first
  // ops whose operands all agree, in every layer of the op's class at once.
  DenseMap<int64_t, SmallVector<Value>> members;
  for (auto [v, cls] : plan.classOf)
    members[cls].push_back(v);
  // Values whose operands were pinned, and values settled: their result
  // pinned, or left to propagation (a pending sum cannot be pinned).
  DenseSet<Value> operandsPinned, settled;
  int64_t written = 0;
  // Where the plan reads an argument in another sharding than its own, or
  // returns a parameter's new value in another sharding than the one it
  // computes, a constraint at the read says so (two seeds meeting at an op
  // would be a conflict that propagation warns of).
  for (const Plan::SeedRead &read : plan.seedReads) {
    Value v = read.op->getOperand(read.operand);
    OpBuilder b(read.op);
    auto constraint =
        ShardingConstraintOp::create(b, v.getLoc(), v.getType(), v, withPriority(read.sharding, 0));
    read.op->setOperand(read.operand, constraint.getResult());
    seeds.push_back({constraint.getResult(), read.sharding, {}, 0});
    ++written;
  }
  // Whether an operand can be pinned to what the op reads it in: a full
  // value cannot become a pending sum (such a read is the op's own, a count
  // every rank makes in full), and a value already pinned stays so.
  auto pinnable = [&](Value operand, const std::optional<Sharding> &read) {
    auto own = plan.shardings.find(pmlir::tfm::yieldedValue(operand));
    return read && own != plan.shardings.end() && llvm::all_of(read->pending, [&](StringRef a) {
             return llvm::is_contained(own->second.pending, a);
           });
  };
  auto readsOwnAsPlanned = [&](Value operand, const std::optional<Sharding> &read) {
    return !pinnable(operand, read) ||
           plan.shardings.find(pmlir::tfm::yieldedValue(operand))->second == *read;
  };
  // Where an op reads an operand in another sharding than the operand's
  // own, a constraint at the read makes the reshard the plan priced: left
  // to itself, partition would pick its own way to meet the operands and
  // the result (gather an operand whole, slice the result).
  func->walk([&](Operation *op) {
    if (isa<ShardingConstraintOp>(op) || op->hasTrait<pmlir::tfm::OpTrait::InlineBody>())
      return;
    auto reads = plan.reads.find(op);
    if (reads == plan.reads.end())
      return;
    for (auto [i, read] : llvm::enumerate(reads->second)) {
      if (readsOwnAsPlanned(op->getOperand(i), read))
        continue;
      OpBuilder b(op);
      Value operand = op->getOperand(i);
      auto constraint = ShardingConstraintOp::create(b, operand.getLoc(), operand.getType(),
                                                     operand, withPriority(*read, 0));
      op->setOperand(i, constraint.getResult());
      seeds.push_back({constraint.getResult(), *read, {}, 0});
      ++written;
    }
  });
  for (int round = 0; round < 1000; ++round) {
    ShardingMap known;
    {
      // The rounds' conflicts are the plan's reshards, not the user's.
      ScopedDiagnosticHandler quiet(context, [](Diagnostic &d) {
        return success(d.getSeverity() == DiagnosticSeverity::Warning);
      });
      known = propagateShardings(func, mesh, seeds);
    }
    auto agrees = [&](Value v) {
      v = pmlir::tfm::yieldedValue(v);
      auto want = plan.shardings.find(v);
      if (want == plan.shardings.end())
        return true;
      auto it = known.find(v);
      if (it == known.end())
        return llvm::all_of(want->second.dims, [](const Axes &a) { return a.empty(); }) &&
               want->second.pending.empty();
      // Pending axes are a set: a sum pending over tp and dp is one over dp
      // and tp.
      auto pendingSet = [](const Sharding &s) {
        std::set<std::string> axes(s.pending.begin(), s.pending.end());
        return axes;
      };
      return it->second.dims == want->second.dims &&
             pendingSet(it->second) == pendingSet(want->second) &&
             it->second.parts == want->second.parts;
    };
    // At the first ops whose operands agree and results do not: the
    // operands are pinned to what the op reads (their own sharding
    // included: a constraint enters propagation before the arguments, so
    // the op computes as planned, a pending sum included), or, where they
    // are pinned already, the result.
    std::set<int64_t> fix;
    func->walk([&](Operation *op) {
      if (isa<ShardingConstraintOp>(op) || op->hasTrait<pmlir::tfm::OpTrait::InlineBody>())
        return;
      for (Value r : op->getResults())
        if (plan.classOf.count(r) && !settled.contains(r) && !agrees(r) &&
            llvm::all_of(op->getOperands(), [&](Value v) { return agrees(v); }))
          fix.insert(plan.classOf.lookup(r));
    });
    if (fix.empty())
      return written;
    auto constrain = [&](Value v, Operation *user, const Sharding &s) {
      OpBuilder b(context);
      if (user)
        b.setInsertionPoint(user);
      else
        b.setInsertionPointAfterValue(v);
      auto constraint =
          ShardingConstraintOp::create(b, v.getLoc(), v.getType(), v, withPriority(s, 0));
      if (user)
        user->replaceUsesOfWith(v, constraint.getResult());
      else
        v.replaceAllUsesExcept(constraint.getResult(), constraint);
      seeds.push_back({constraint.getResult(), s, {}, 0});
      ++written;
    };
    for (int64_t cls : fix)
      for (Value v : members[cls]) {
        // A member whose operands propagation has not brought to the plan
        // yet waits for a later round: pinned now, an operand could be
        // asked to become a pending sum it is not (a running sum's link,
        // before the link it extends agrees).
        Operation *op = v.getDefiningOp();
        if (settled.contains(v) ||
            !llvm::all_of(op->getOperands(), [&](Value o) { return agrees(o); }))
          continue;
        if (operandsPinned.insert(v).second) {
          bool pinned = false;
          auto reads = plan.reads.find(op);
          if (reads != plan.reads.end())
            for (auto [i, read] : llvm::enumerate(reads->second)) {
              Value operand = op->getOperand(i);
              if (!pinnable(operand, read))
                continue;
              constrain(operand, op, *read);
              pinned = true;
            }
          // A later round sees whether the pinned reads were enough.
          if (pinned)
            continue;
        }
        settled.insert(v);
        if (plan.shardings.lookup(v).pending.empty())
          constrain(v, nullptr, plan.shardings.lookup(v));
      }
  }
  return func->emitError("auto-sharding: propagation does not reach the plan after 1000 rounds "
                         "of constraints");
}
