//===- Strategies.cpp - Each node's ways to compute -----------------------===//
//
// Part of pmlir.
//
// The strategies of a node: from its op's factor rule, every assignment of
// mesh axes to factors (or to both factors of a pair the rule lets share
// an axis) that divides evenly, and the pending sums the op's linearity
// allows, each with its compute time from the cost model and the time of
// what the op sends itself; an argument's even shardings; the annotations
// a user gave kept.
//
//===----------------------------------------------------------------------===//

#include "AutoSharderImpl.h"

#include "llvm/ADT/StringExtras.h"

#include <functional>

#define DEBUG_TYPE "pmlir-auto-sharding"

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;
using namespace pmlir::sharding::autoshard;

/// The shardings of a tensor of `type` with its dimensions split evenly
/// by any of the mesh's axes (each axis on one dimension, in mesh order).
std::vector<Sharding> AutoSharder::Impl::evenShardings(RankedTensorType type) const {
  Axes axes = meshAxes();
  std::vector<Sharding> out;
  std::vector<int> dimOf(axes.size(), -1);
  std::function<void(size_t)> assign = [&](size_t a) {
    if (a == axes.size()) {
      Sharding s;
      s.dims.resize(type.getRank());
      for (size_t i = 0; i < axes.size(); ++i)
        if (dimOf[i] >= 0)
          s.dims[dimOf[i]].push_back(axes[i]);
      for (int64_t d = 0; d < type.getRank(); ++d)
        if (type.getDimSize(d) % devicesOf(mesh, s.dims[d]) != 0)
          return;
      out.push_back(std::move(s));
      return;
    }
    for (int d = -1; d < type.getRank(); ++d) {
      dimOf[a] = d;
      assign(a + 1);
    }
  };
  assign(0);
  return out;
}

/// The sharding of a tensor of the rule whose dimensions hold `dims`'
/// factors under `perFactor`; nullopt where a dimension cannot hold its
/// factors' axes as contiguous blocks.
std::optional<Sharding> AutoSharder::Impl::tensorSharding(const ShardingRule &rule,
                                                          ArrayRef<SmallVector<int64_t>> dims,
                                                          ArrayRef<Axes> perFactor) const {
  Sharding s;
  for (auto [d, factors] : llvm::enumerate(dims)) {
    auto [axes, parts] = dimAxes(factors, perFactor, rule, mesh);
    int64_t wanted = 1;
    for (int64_t f : factors)
      wanted *= devicesOf(mesh, perFactor[f]);
    if (devicesOf(mesh, axes) != wanted)
      return std::nullopt;
    s.dims.push_back(axes);
    s.setParts(d, parts);
  }
  return s;
}

/// The strategies of `op` from its rule: every assignment of mesh axes to
/// factors that divide evenly, and the pending variants the op's
/// linearity allows.
void AutoSharder::Impl::enumerate(Operation *op, const ShardingRule &rule,
                                  std::vector<Strategy> &out) {
  Axes axes = meshAxes();
  std::vector<int> factorOf(axes.size(), -1);
  double flops = 0;
  if (auto cost = dyn_cast<CostOpInterface>(op))
    flops = cost.getFlops();
  auto build = [&](ArrayRef<Axes> perFactor, const Axes &used, const Axes &shared) {
    Strategy s;
    for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operands)) {
      if (!dims) {
        s.operands.push_back(std::nullopt);
        continue;
      }
      std::optional<Sharding> sharding = tensorSharding(rule, *dims, perFactor);
      if (!sharding)
        return;
      s.operands.push_back(std::move(sharding));
    }
    for (unsigned r = 0; r < rule.results.size(); ++r) {
      std::optional<Sharding> sharding = tensorSharding(rule, rule.results[r], perFactor);
      if (!sharding)
        return;
      // An axis that also splits the result (shared by a pair) is no sum.
      for (auto [f, factorAxes] : llvm::enumerate(perFactor))
        if (rule.sumsOver(r, f))
          for (StringRef axis : factorAxes)
            if (llvm::none_of(sharding->dims,
                              [&](const Axes &d) { return llvm::is_contained(d, axis); }))
              sharding->pending.push_back(axis);
      sortAxes(sharding->pending);
      s.results.push_back(std::move(*sharding));
    }
    int64_t split = devicesOf(mesh, used);
    double bytes = 0;
    for (auto [operand, sharding] : llvm::zip(op->getOperands(), s.operands))
      if (sharding)
        bytes += localBytes(cast<RankedTensorType>(operand.getType()), *sharding);
    for (auto [result, sharding] : llvm::zip(op->getResults(), s.results))
      bytes += localBytes(cast<RankedTensorType>(result.getType()), sharding);
    s.seconds = options.model.computeSeconds(flops / split, bytes);
    if (!shared.empty() && rule.exchanges.count > 0) {
      // Each exchange moves a device's block of the rows: the whole split
      // by the first factors of the sharing pairs.
      SmallVector<int64_t> blockFactors;
      for (auto [f, g] : rule.sharing)
        if (!llvm::is_contained(blockFactors, f))
          blockFactors.push_back(f);
      int64_t blocks = 1;
      for (int64_t f : blockFactors)
        blocks *= devicesOf(mesh, perFactor[f]);
      int64_t perDevice = rule.exchanges.bytes / blocks;
      CollectiveCost cost =
          options.model.cost(CollectiveKind::AllToAll, perDevice, shared, devicesOf(mesh, shared));
      Prediction::Comm comm;
      comm.seconds = cost.seconds * rule.exchanges.count;
      comm.bytes = perDevice * rule.exchanges.count;
      comm.wireBytes = cost.wireBytes * rule.exchanges.count;
      comm.collectives = rule.exchanges.count;
      s.seconds += comm.seconds;
      s.comm.push_back({llvm::join(shared, ","), comm});
    }
    out.push_back(s);
    addPendingVariants(op, rule, s, used, out);
  };
  // An axis splits one factor, or both factors of a sharing pair (its
  // index after the factors'). The second factor of a pair splits only
  // with a first: the op partitions itself so (an expert-parallel group
  // routes its own tokens).
  auto isSecond = [&](int64_t g) {
    return llvm::any_of(rule.sharing, [&](const auto &pair) { return pair.second == g; });
  };
  int numFactors = static_cast<int>(rule.factors.size());
  std::function<void(size_t)> assign = [&](size_t a) {
    if (a == axes.size()) {
      SmallVector<Axes> perFactor(rule.factors.size());
      Axes used, shared;
      for (size_t i = 0; i < axes.size(); ++i) {
        int choice = factorOf[i];
        if (choice < 0)
          continue;
        used.push_back(axes[i]);
        if (choice < numFactors) {
          perFactor[choice].push_back(axes[i]);
          continue;
        }
        auto [f, g] = rule.sharing[choice - numFactors];
        perFactor[f].push_back(axes[i]);
        perFactor[g].push_back(axes[i]);
        shared.push_back(axes[i]);
      }
      for (auto [f, factorAxes] : llvm::enumerate(perFactor))
        if (rule.factors[f].size % devicesOf(mesh, factorAxes) != 0)
          return;
      build(perFactor, used, shared);
      return;
    }
    for (int f = -1; f < numFactors + static_cast<int>(rule.sharing.size()); ++f) {
      if (f >= 0 && f < numFactors &&
          (rule.factors[f].kind == FactorKind::Replicated || isSecond(f)))
        continue;
      factorOf[a] = f;
      assign(a + 1);
    }
  };
  assign(0);
}

/// Strategies of an op linear in its operands that take a pending sum
/// over axes the strategy leaves free and keep it.
void AutoSharder::Impl::addPendingVariants(Operation *op, const ShardingRule &rule,
                                           const Strategy &base, const Axes &used,
                                           std::vector<Strategy> &out) {
  if (rule.pending == PendingRule::None)
    return;
  Axes free;
  for (StringRef axis : meshAxes())
    if (!llvm::is_contained(used, axis) && llvm::none_of(base.results, [&](const Sharding &s) {
          return llvm::is_contained(s.pending, axis);
        }))
      free.push_back(axis);
  SmallVector<unsigned> floats;
  for (auto [i, operand] : llvm::enumerate(op->getOperands()))
    if (base.operands[i] &&
        isa<FloatType>(cast<RankedTensorType>(operand.getType()).getElementType()))
      floats.push_back(i);
  if (floats.empty())
    return;
  for (unsigned mask = 1; mask < (1u << free.size()); ++mask) {
    Axes pending;
    for (size_t i = 0; i < free.size(); ++i)
      if (mask & (1u << i))
        pending.push_back(free[i]);
    auto withPending = [&](ArrayRef<unsigned> operands) {
      Strategy s = base;
      for (unsigned i : operands) {
        llvm::append_range(s.operands[i]->pending, pending);
        sortAxes(s.operands[i]->pending);
      }
      for (Sharding &result : s.results) {
        llvm::append_range(result.pending, pending);
        sortAxes(result.pending);
      }
      out.push_back(std::move(s));
    };
    if (rule.pending == PendingRule::Additive)
      withPending(floats);
    else
      for (unsigned i : floats)
        withPending({i});
  }
}

/// The annotated values' strategies narrowed to their annotations: an
/// argument takes its tfm.sharding, a constraint yields its sharding
/// (reading its operand in it, or in any sharding its strategies read
/// when none does).
void AutoSharder::Impl::keepAnnotations() {
  for (Node &node : nodes) {
    if (node.isArgument()) {
      auto attr = func.getArgAttrOfType<ShardingAttr>(node.arg.getArgNumber(), kShardingAttr);
      if (!attr)
        continue;
      node.strategies = {{{}, {Sharding::of(attr)}, 0}};
      continue;
    }
    auto constraint = dyn_cast_or_null<ShardingConstraintOp>(node.op);
    if (!constraint)
      continue;
    Sharding wanted = Sharding::of(constraint.getSharding());
    std::vector<Strategy> kept;
    for (const Strategy &s : node.strategies)
      if (s.results[0] == wanted)
        kept.push_back(s);
    if (kept.empty()) {
      Strategy s = node.strategies.front();
      s.operands[0] = wanted;
      s.results[0] = wanted;
      kept.push_back(std::move(s));
    }
    node.strategies = std::move(kept);
  }
}
