//===- Propagation.cpp - Complete shardings from seeds -------------------===//
//
// Part of pmlir.
//
// See pmlir/Sharding/Propagation.h.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Propagation.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"

#include <map>
#include <set>

#define DEBUG_TYPE "pmlir-sharding-propagation"

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;

namespace {

struct Propagation {
  explicit Propagation(MeshAttr mesh) : mesh(mesh) {}

  MeshAttr mesh;
  llvm::MapVector<Value, Sharding> known;

  int64_t sizeOf(ArrayRef<StringRef> axes) const { return devicesOf(mesh, axes); }

  /// Values the user annotated, and the dimensions of each that are open.
  DenseMap<Value, SmallVector<int64_t>> seeds;
  /// Ops where a user annotation lost a conflict (warned once).
  DenseSet<Operation *> warned;

  /// Makes `s` the sharding of `v`, a user annotation.
  void seed(Value v, Sharding s, ArrayRef<int64_t> open) {
    known[v] = std::move(s);
    seeds[v] = SmallVector<int64_t>(open);
  }

  /// Splits the open dimensions of the user annotation of `v` further where
  /// `s` extends them. Returns whether any changed.
  bool extendOpen(Value v, const Sharding &s) {
    auto it = seeds.find(v);
    if (it == seeds.end() || it->second.empty())
      return false;
    Sharding &have = known[v];
    bool changed = false;
    for (int64_t d : SmallVector<int64_t>(it->second)) {
      ArrayRef<StringRef> now = have.dims[d], wanted = s.dims[d];
      if (wanted.size() <= now.size() || wanted.take_front(now.size()) != now)
        continue;
      bool free = llvm::none_of(wanted.drop_front(now.size()), [&](StringRef a) {
        return llvm::is_contained(have.pending, a) ||
               llvm::any_of(have.dims,
                            [&](const Axes &axes) { return llvm::is_contained(axes, a); });
      });
      if (!free)
        continue;
      have.dims[d] = Axes(wanted);
      llvm::erase(it->second, d);
      changed = true;
    }
    return changed;
  }

  /// Warns at `op` that the user annotation of `loser` lost to that of
  /// `winner`: `loser` is resharded here.
  void warnConflict(Operation *op, Value loser, Value winner) {
    // A constraint between two annotations asks for the reshard.
    if (isa<ShardingConstraintOp>(op) || !warned.insert(op).second)
      return;
    auto describe = [&](Value v) {
      std::string text;
      llvm::raw_string_ostream os(text);
      if (auto arg = dyn_cast<BlockArgument>(v))
        os << "argument #" << arg.getArgNumber();
      else
        os << "'" << v.getDefiningOp()->getName() << "' result";
      os << " (" << known[v].toAttr(op->getContext()) << ", " << tensorBytes(v) << " bytes)";
      return text;
    };
    // Proposals weigh the bytes of every tensor of the op behind them; the
    // two seeds may be as large, the tie going to the first proposal.
    StringRef backing = tensorBytes(winner) > tensorBytes(loser) ? "more" : "at least as many";
    op->emitWarning() << "the user sharding of " << describe(loser) << " conflicts with "
                      << describe(winner) << " here; the latter is backed by " << backing
                      << " tensor bytes and wins, the former is resharded";
  }

  bool setIfUnknown(Value v, Sharding s) {
    if (known.count(v))
      return false;
    known[v] = std::move(s);
    return true;
  }

  /// Applies `rule` at `op`: decides each factor's axes and gives them to
  /// the op's results (forward) or to all its tensors (backward) that have
  /// no sharding yet. Returns whether any got one.
  bool apply(Operation *op, const ShardingRule &opRule, bool forward) {
    // Parted tensors split the factor of their parted dimensions.
    SmallVector<const Sharding *> shardingsOf;
    for (Value v : llvm::concat<Value>(op->getOperands().take_front(opRule.operands.size()),
                                       op->getResults())) {
      auto it = known.find(v);
      shardingsOf.push_back(it == known.end() ? nullptr : &it->second);
    }
    ShardingRule rule = refineForParts(opRule, shardingsOf);
    // Tensors of the rule: (value, dims' factors).
    SmallVector<std::pair<Value, ArrayRef<SmallVector<int64_t>>>> tensors;
    for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operands))
      if (dims)
        tensors.push_back({operand, *dims});
    for (auto [result, dims] : llvm::zip(op->getResults(), rule.results))
      tensors.push_back({result, dims});

    // Candidate axes per factor, weighted by the bytes of the tensors that
    // propose them.
    size_t numFactors = rule.factors.size();
    SmallVector<std::map<Axes, int64_t>> candidates(numFactors);
    // Per factor, the user annotations that propose axes for it.
    SmallVector<SmallVector<std::pair<Value, Axes>>> proposals(numFactors);
    bool anyKnown = false;
    for (auto [value, dims] : tensors) {
      auto it = known.find(value);
      if (it == known.end())
        continue;
      anyKnown = true;
      SmallVector<Axes> perFactor(numFactors);
      for (auto [d, factors] : llvm::enumerate(dims))
        factorAxes(factors, it->second.dims[d], rule, mesh, perFactor, it->second.partsOf(d));
      for (size_t f = 0; f < numFactors; ++f) {
        candidates[f][perFactor[f]] += tensorBytes(value);
        if (seeds.count(value) && !perFactor[f].empty())
          proposals[f].push_back({value, perFactor[f]});
      }
    }
    // An op that knows nothing yet waits; one without operands (arange)
    // takes its result's sharding from its users.
    if (!anyKnown)
      return false;

    // Heaviest decisions first; an axis serves one factor only.
    struct Choice {
      int64_t weight;
      size_t factor;
      Axes axes;
    };
    SmallVector<Choice> choices;
    for (size_t f = 0; f < numFactors; ++f)
      if (rule.factors[f].kind != FactorKind::Replicated)
        for (auto &[axes, weight] : candidates[f])
          if (!axes.empty())
            choices.push_back({weight, f, axes});
    llvm::stable_sort(choices, [](const Choice &a, const Choice &b) {
      if (a.weight != b.weight)
        return a.weight > b.weight;
      if (a.factor != b.factor)
        return a.factor < b.factor;
      return a.axes < b.axes;
    });
    SmallVector<Axes> decided(numFactors);
    SmallVector<bool> done(numFactors, false);
    Axes used;
    SmallVector<size_t> usedBy; // the factor of each of `used`
    auto isUsed = [&](StringRef a) {
      return llvm::any_of(used, [&](StringRef u) { return mesh.overlap(a, u); });
    };
    auto takenFrom = [&](size_t f, StringRef a) {
      for (auto [u, g] : llvm::zip(used, usedBy))
        if (mesh.overlap(a, u) && !rule.share(f, g))
          return true;
      return false;
    };
    for (const Choice &c : choices) {
      if (done[c.factor] ||
          llvm::any_of(c.axes, [&](StringRef a) { return takenFrom(c.factor, a); })) {
        LLVM_DEBUG(llvm::dbgs() << op->getName() << " at " << op->getLoc() << ": factor "
                                << c.factor << " on [" << llvm::join(c.axes, ", ") << "] lost ("
                                << c.weight << " bytes) to [" << llvm::join(decided[c.factor], ", ")
                                << "]\n");
        continue;
      }
      LLVM_DEBUG(llvm::dbgs() << op->getName() << " at " << op->getLoc() << ": factor " << c.factor
                              << " on [" << llvm::join(c.axes, ", ") << "], " << c.weight
                              << " bytes\n");
      done[c.factor] = true;
      decided[c.factor] = c.axes;
      for (StringRef a : c.axes) {
        used.push_back(a);
        usedBy.push_back(c.factor);
      }
    }

    // A user annotation whose axes lost to another's (for the same factor,
    // or the same axes for another factor) is resharded: say so, unless
    // the winner only splits it further (a local slice, as a ZeRO update
    // reads its whole parameter on shards).
    for (size_t f = 0; f < numFactors; ++f)
      for (auto &[loser, axes] : proposals[f]) {
        if (axes == decided[f] || (decided[f].size() > axes.size() &&
                                   ArrayRef(decided[f]).take_front(axes.size()) == ArrayRef(axes)))
          continue;
        for (size_t g = 0; g < numFactors; ++g)
          for (auto &[winner, won] : proposals[g])
            if (winner != loser && won == decided[g] &&
                (g == f ||
                 llvm::any_of(axes, [&](StringRef a) { return llvm::is_contained(won, a); })))
              warnConflict(op, loser, winner);
      }

    // Pending sums of each result: the contracting factors it sums over,
    // and what passes through the op's linearity.
    Axes passed = passedPending(op, rule);
    auto pendingOf = [&](unsigned r) {
      Axes pending;
      for (size_t f = 0; f < numFactors; ++f)
        if (rule.sumsOver(r, f))
          llvm::append_range(pending, decided[f]);
      for (StringRef a : passed)
        if (!llvm::is_contained(pending, a) && !isUsed(a))
          pending.push_back(a);
      return pending;
    };

    // A factor no operand holds (the rows of an embedding's gradient) is
    // told by the result's users, not settled forward from the operands.
    auto inSomeOperand = [&](int64_t f) {
      return llvm::any_of(rule.operands, [&](const auto &dims) {
        return dims && llvm::any_of(*dims, [&](const SmallVector<int64_t> &factors) {
                 return llvm::is_contained(factors, f);
               });
      });
    };
    bool changed = false;
    for (auto [i, entry] : llvm::enumerate(tensors)) {
      auto [value, dims] = entry;
      bool isResult = isa<OpResult>(value) && value.getDefiningOp() == op;
      if (forward && !isResult)
        continue;
      if (forward && llvm::any_of(dims, [&](const SmallVector<int64_t> &factors) {
            return llvm::any_of(factors, [&](int64_t f) {
              return !inSomeOperand(f) && rule.factors[f].kind != FactorKind::Replicated;
            });
          }))
        continue;
      Sharding s;
      for (const SmallVector<int64_t> &factors : dims) {
        auto [axes, parts] = dimAxes(factors, decided, rule, mesh);
        s.dims.push_back(axes);
        s.setParts(s.dims.size() - 1, parts);
      }
      if (isResult)
        s.pending = pendingOf(cast<OpResult>(value).getResultNumber());
      changed |= setIfUnknown(value, s) || extendOpen(value, s);
    }
    return changed;
  }

  /// Whether `user` needs its operands' full values: an op without a rule
  /// that passes pending sums (a norm, a nonlinearity, a return).
  static bool needsWhole(Operation *user) {
    if (isa<ShardingConstraintOp>(user))
      return false;
    std::optional<ShardingRule> rule = getShardingRule(user);
    return !rule || rule->pending == PendingRule::None;
  }

  /// Whether `operand` of `op` has another user that needs it whole.
  static bool reducedElsewhere(Operation *op, Value operand) {
    return llvm::any_of(operand.getUsers(),
                        [&](Operation *user) { return user != op && needsWhole(user); });
  }

  /// The pending axes that reach the results through the op's linearity.
  Axes passedPending(Operation *op, const ShardingRule &rule) {
    SmallVector<Axes> perOperand;
    SmallVector<Value> ruledOperands;
    for (auto [operand, dims] : llvm::zip(op->getOperands(), rule.operands)) {
      if (!dims)
        continue;
      auto it = known.find(operand);
      perOperand.push_back(it == known.end() ? Axes{} : it->second.pending);
      ruledOperands.push_back(operand);
    }
    if (perOperand.empty())
      return {};
    switch (rule.pending) {
    case PendingRule::None:
      return {};
    case PendingRule::LinearInOne: {
      unsigned pendingOperands =
          llvm::count_if(perOperand, [](const Axes &a) { return !a.empty(); });
      if (pendingOperands != 1)
        return {};
      // As for sums below: the pending operand, reduced anyway for another
      // user (a gradient a norm's backward needs whole), is read reduced.
      unsigned pending =
          llvm::find_if(perOperand, [](const Axes &a) { return !a.empty(); }) - perOperand.begin();
      if (reducedElsewhere(op, ruledOperands[pending]))
        return {};
      return perOperand[pending];
    }
    case PendingRule::Additive: {
      Axes common = perOperand.front();
      for (const Axes &other : perOperand)
        if (other != common)
          return {};
      // A sum whose operand is reduced anyway (another user needs it
      // whole: a norm, the residual stream of a sequential block) gains
      // nothing by staying pending, and would keep a full-size partial
      // alive: reduce each operand instead, as Megatron does. Sums of
      // operands used nowhere else (parallel attention and MLP branches)
      // stay pending and are reduced once.
      for (Value operand : ruledOperands)
        if (reducedElsewhere(op, operand))
          return {};
      return common;
    }
    }
    return {};
  }

  /// Values that are the same tensor: a layer's operands and its region's
  /// arguments, its yields and its results.
  bool copyAcross(Value from, Value to) {
    auto it = known.find(from);
    if (it == known.end())
      return false;
    Sharding s = it->second;
    return setIfUnknown(to, s);
  }

  bool step(Operation *op, bool forward) {
    if (op->hasTrait<pmlir::tfm::OpTrait::InlineBody>()) {
      bool changed = false;
      Block &body = op->getRegion(0).front();
      for (auto [operand, arg] : llvm::zip(op->getOperands(), body.getArguments()))
        changed |= copyAcross(operand, arg) | copyAcross(arg, operand);
      for (auto [yielded, result] :
           llvm::zip(body.getTerminator()->getOperands(), op->getResults()))
        changed |= copyAcross(yielded, result) | copyAcross(result, yielded);
      return changed;
    }
    if (std::optional<ShardingRule> rule = getShardingRule(op))
      return apply(op, *rule, forward);
    return false;
  }
};

} // namespace

ShardingMap pmlir::sharding::propagateShardings(FunctionOpInterface func, MeshAttr mesh,
                                                ArrayRef<ShardingSeed> seeds,
                                                ArrayRef<std::pair<Value, Sharding>> resultHints) {
  Propagation p(mesh);
  // Post-order: a layer's body comes before the layer, whose step makes its
  // results the yielded values.
  SmallVector<Operation *> ops;
  func->walk<WalkOrder::PostOrder>([&](Operation *op) {
    if (op != func.getOperation())
      ops.push_back(op);
  });

  // Rounds of increasing priority. In each, forward to a fixed point first,
  // so that what the inputs say reaches every activation before a backward
  // step settles a value from partial information; then one backward sweep
  // (weights, biases, values only consumers know about), and again.
  std::set<int64_t> priorities;
  for (const ShardingSeed &seed : seeds)
    priorities.insert(seed.priority);
  if (priorities.empty())
    priorities.insert(0);
  for (int64_t priority : priorities) {
    for (const ShardingSeed &seed : seeds)
      if (seed.priority == priority)
        p.seed(seed.value, seed.sharding, seed.open);
    for (bool changed = true; changed;) {
      changed = false;
      for (bool forward = true; forward;) {
        forward = false;
        for (Operation *op : ops)
          forward |= p.step(op, /*forward=*/true);
        changed |= forward;
      }
      for (Operation *op : llvm::reverse(ops))
        changed |= p.step(op, /*forward=*/false);
      // Result hints are what nothing else decides: they wait for the
      // last round's seeds (a value a later annotation reaches, as ZeRO's
      // gradient shards reach the gradient norm, is not settled whole).
      if (priority == *priorities.rbegin())
        for (auto &[value, s] : resultHints)
          changed |= p.setIfUnknown(value, s);
    }
  }
  return std::move(p.known);
}

FailureOr<Sharding> pmlir::sharding::checkSharding(MeshAttr mesh, Value v, ShardingAttr attr,
                                                   function_ref<InFlightDiagnostic()> emitError,
                                                   StringRef what) {
  auto type = cast<RankedTensorType>(v.getType());
  if (attr.getRank() != type.getRank())
    return emitError() << what << " has sharding " << attr << " of rank " << attr.getRank()
                       << " for " << type;
  Sharding s;
  Axes seen;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    Axes axes = mesh.mergeSubAxes(attr.axesOf(d));
    for (StringRef a : axes) {
      if (!mesh.subAxis(a))
        return emitError() << what << " names mesh axis '" << a << "', which the mesh " << mesh
                           << " does not have";
      for (StringRef b : seen)
        if (mesh.overlap(a, b))
          return emitError() << what << " names mesh axes '" << b << "' and '" << a
                             << "', which share devices (sharding " << attr << ")";
      seen.push_back(a);
    }
    int64_t parts = attr.partsOf(d);
    if (type.getShape()[d] % parts != 0)
      return emitError() << what << " makes dimension " << d << " of " << type << " of " << parts
                         << " parts, which do not divide it (sharding " << attr << ")";
    if (type.getShape()[d] / parts < devicesOf(mesh, axes))
      return emitError() << what << " splits " << (parts == 1 ? "" : "each part of ")
                         << "dimension " << d << " of " << type << " over " << devicesOf(mesh, axes)
                         << " devices, more than its size (sharding " << attr << ")";
    s.dims.push_back(axes);
    s.setParts(d, parts);
  }
  s.pending = attr.pendingAxes();
  for (StringRef a : s.pending)
    if (!mesh.subAxis(a))
      return emitError() << what << " names mesh axis '" << a << "', which the mesh " << mesh
                         << " does not have";
  return s;
}
