//===- AutoSharding.cpp - Alpa-style intra-op auto-sharding ---------------===//
//
// Part of pmlir.
//
// See pmlir/Sharding/Auto/AutoSharding.h.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Auto/AutoSharding.h"

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

namespace {

/// One way to compute a node: what it reads and what it makes.
struct Strategy {
  /// Per operand, the sharding it is read in (nullopt: the rule does not
  /// shard it).
  SmallVector<std::optional<Sharding>> operands;
  SmallVector<Sharding> results;
  double seconds = 0;
};

/// An op with a rule, a tensor argument, or a function result (what the
/// returned value is resharded to: any full value).
struct Node {
  Operation *op = nullptr;
  BlockArgument arg;
  int result = -1;
  std::vector<Strategy> strategies;
  int cls = -1;
  bool isArgument() const { return !op && result < 0; }
};

/// Nodes that share a variable: the same op of identical layers, or
/// arguments and ops outside the layers of the same structure.
struct NodeClass {
  std::vector<int> members;
  int var = -1;
  /// Per strategy of `var`, the members' strategy.
  std::vector<int> strategyOf;
  bool follower = false;
};

/// A use of a value: the consumer node and its operand (-1: the value is
/// returned as the new value of argument node `to`, a parameter update).
struct Use {
  int from;
  unsigned result;
  int to;
  int operand;
};

/// A reshard priced by the planner.
struct Price {
  double seconds = kForbidden;
  std::vector<std::pair<std::string, Prediction::Comm>> steps;
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

int64_t elementBytes(RankedTensorType type) {
  return std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

} // namespace

struct AutoSharder::Impl {
  mutable FunctionOpInterface func;
  MeshAttr mesh;
  Options options;
  MLIRContext *context;

  std::vector<Node> nodes;
  std::vector<NodeClass> classes;
  /// Per value (canonical: a layer's result is the value its body yields),
  /// its producer node and result.
  DenseMap<Value, std::pair<int, unsigned>> producer;
  std::vector<Use> uses;
  /// Per parameter node, the result that returns its new value.
  DenseMap<int, unsigned> returnedAs;
  /// Ops in program order (layer bodies inline) and each one's position.
  std::vector<Operation *> order;
  DenseMap<Operation *, int64_t> position;
  /// Per variable, its root class.
  std::vector<int> rootOf;
  Problem problem;
  ProblemStats stats;
  /// Per memory point of `problem`, its terms of the arguments and of the
  /// values, before the options' shares.
  struct MemoryParts {
    std::vector<std::pair<int, std::vector<double>>> arguments, values;
  };
  std::vector<MemoryParts> memoryParts;
  /// The edges of `problem` by the uses they stand for.
  std::map<std::tuple<int, unsigned, int, int>, int64_t> useCounts;
  mutable std::map<std::tuple<const void *, const void *, const void *>, Price> prices;

  Impl(FunctionOpInterface func, MeshAttr mesh, const Options &options)
      : func(func), mesh(mesh), options(options), context(func->getContext()) {}

  //===--------------------------------------------------------------------===//
  // The graph
  //===--------------------------------------------------------------------===//

  Axes meshAxes() const {
    Axes axes;
    for (auto [name, size] : llvm::zip(mesh.getAxes(), mesh.getSizes()))
      if (size > 1 && !llvm::is_contained(options.excludedAxes, name.getValue()))
        axes.push_back(name.getValue());
    return axes;
  }

  int axisIndex(StringRef axis) const { return static_cast<int>(mesh.axisIndex(axis)); }

  void sortAxes(Axes &axes) const {
    llvm::sort(axes, [&](StringRef a, StringRef b) { return axisIndex(a) < axisIndex(b); });
  }

  int64_t localBytes(RankedTensorType type, const Sharding &s) const {
    return localType(mesh, type, s).getNumElements() * elementBytes(type);
  }

  /// The shardings of a tensor of `type` with its dimensions split evenly
  /// by any of the mesh's axes (each axis on one dimension, in mesh order).
  std::vector<Sharding> evenShardings(RankedTensorType type) const {
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
  std::optional<Sharding> tensorSharding(const ShardingRule &rule,
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
  void enumerate(Operation *op, const ShardingRule &rule, std::vector<Strategy> &out) {
    Axes axes = meshAxes();
    std::vector<int> factorOf(axes.size(), -1);
    double flops = 0;
    if (auto cost = dyn_cast<CostOpInterface>(op))
      flops = cost.getFlops();
    auto build = [&](ArrayRef<Axes> perFactor, const Axes &used) {
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
        for (auto [f, factorAxes] : llvm::enumerate(perFactor))
          if (rule.sumsOver(r, f))
            llvm::append_range(sharding->pending, factorAxes);
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
      out.push_back(s);
      addPendingVariants(op, rule, s, used, out);
    };
    std::function<void(size_t)> assign = [&](size_t a) {
      if (a == axes.size()) {
        SmallVector<Axes> perFactor(rule.factors.size());
        Axes used;
        for (size_t i = 0; i < axes.size(); ++i)
          if (factorOf[i] >= 0) {
            perFactor[factorOf[i]].push_back(axes[i]);
            used.push_back(axes[i]);
          }
        for (auto [f, factorAxes] : llvm::enumerate(perFactor))
          if (rule.factors[f].size % devicesOf(mesh, factorAxes) != 0)
            return;
        build(perFactor, used);
        return;
      }
      for (int f = -1; f < static_cast<int>(rule.factors.size()); ++f) {
        if (f >= 0 && rule.factors[f].kind == FactorKind::Replicated)
          continue;
        factorOf[a] = f;
        assign(a + 1);
      }
    };
    assign(0);
  }

  /// Strategies of an op linear in its operands that take a pending sum
  /// over axes the strategy leaves free and keep it.
  void addPendingVariants(Operation *op, const ShardingRule &rule, const Strategy &base,
                          const Axes &used, std::vector<Strategy> &out) {
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

  void buildNodes() {
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (!type)
        continue;
      Node node;
      node.arg = arg;
      for (Sharding &s : evenShardings(type))
        node.strategies.push_back({{}, {std::move(s)}, 0});
      producer[arg] = {static_cast<int>(nodes.size()), 0};
      nodes.push_back(std::move(node));
      ++stats.arguments;
    }
    func->walk<WalkOrder::PreOrder>([&](Operation *op) {
      if (op == func.getOperation())
        return;
      position[op] = static_cast<int64_t>(order.size());
      order.push_back(op);
      if (op->hasTrait<mlir::OpTrait::IsTerminator>() ||
          op->hasTrait<pmlir::tfm::OpTrait::InlineBody>())
        return;
      if (!llvm::all_of(op->getResultTypes(), [](Type t) { return isa<RankedTensorType>(t); }) ||
          op->getNumResults() == 0)
        return;
      Node node;
      node.op = op;
      if (std::optional<ShardingRule> rule = getShardingRule(op)) {
        enumerate(op, *rule, node.strategies);
      } else {
        // An op sharding knows nothing of computes whole values.
        Strategy s;
        for (Value operand : op->getOperands())
          if (auto type = dyn_cast<RankedTensorType>(operand.getType()))
            s.operands.push_back(Sharding{SmallVector<Axes>(type.getRank()), {}});
          else
            s.operands.push_back(std::nullopt);
        for (Type t : op->getResultTypes())
          s.results.push_back(Sharding{SmallVector<Axes>(cast<RankedTensorType>(t).getRank()), {}});
        node.strategies.push_back(std::move(s));
      }
      for (unsigned r = 0; r < op->getNumResults(); ++r)
        producer[op->getResult(r)] = {static_cast<int>(nodes.size()), r};
      nodes.push_back(std::move(node));
      ++stats.ops;
    });
    // The uses: operands the strategies shard, and updated parameters.
    for (auto [n, node] : llvm::enumerate(nodes)) {
      if (!node.op)
        continue;
      for (auto [i, operand] : llvm::enumerate(node.op->getOperands())) {
        if (!node.strategies.front().operands[i])
          continue;
        auto it = producer.find(pmlir::tfm::yieldedValue(operand));
        if (it != producer.end())
          uses.push_back(
              {it->second.first, it->second.second, static_cast<int>(n), static_cast<int>(i)});
      }
    }
    Operation *ret = func.getFunctionBody().back().getTerminator();
    for (unsigned i = 0; i < func.getNumResults(); ++i) {
      auto like = func.getResultAttrOfType<IntegerAttr>(i, kShardedLikeAttr);
      auto type = dyn_cast<RankedTensorType>(ret->getOperand(i).getType());
      auto from = producer.find(pmlir::tfm::yieldedValue(ret->getOperand(i)));
      if (!type || from == producer.end())
        continue;
      if (!like) {
        Node node;
        node.result = static_cast<int>(i);
        for (Sharding &s : evenShardings(type))
          node.strategies.push_back({{}, {std::move(s)}, 0});
        uses.push_back(
            {from->second.first, from->second.second, static_cast<int>(nodes.size()), -1});
        nodes.push_back(std::move(node));
        continue;
      }
      if (like.getInt() < 0 || like.getInt() >= func.getNumArguments())
        continue;
      returnedAs[producer.lookup(func.getArgument(like.getInt())).first] = i;
      auto to = producer.find(func.getArgument(like.getInt()));
      if (from != producer.end() && to != producer.end() &&
          ret->getOperand(i).getType() == func.getArgument(like.getInt()).getType())
        uses.push_back({from->second.first, from->second.second, to->second.first, -1});
    }
    // An argument may also take any full sharding its users read it in (a
    // fused weight in parts).
    for (const Use &use : uses) {
      Node &from = nodes[use.from];
      if (!from.isArgument() || use.operand < 0)
        continue;
      for (const Strategy &s : nodes[use.to].strategies) {
        const Sharding &wanted = *s.operands[use.operand];
        if (!wanted.pending.empty() || llvm::any_of(from.strategies, [&](const Strategy &have) {
              return have.results[0] == wanted;
            }))
          continue;
        from.strategies.push_back({{}, {wanted}, 0});
      }
    }
    if (options.keepAnnotations)
      keepAnnotations();
    stats.nodes = static_cast<int64_t>(nodes.size());
  }

  /// The annotated values' strategies narrowed to their annotations: an
  /// argument takes its tfm.sharding, a constraint yields its sharding
  /// (reading its operand in it, or in any sharding its strategies read
  /// when none does).
  void keepAnnotations() {
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

  //===--------------------------------------------------------------------===//
  // Classes: identical layers and what only they use
  //===--------------------------------------------------------------------===//

  static std::string printed(Attribute attr) {
    std::string text;
    llvm::raw_string_ostream os(text);
    attr.print(os);
    return text;
  }

  void buildClasses() {
    // Colours: in-layer ops by their layer's class and place, fixed; the
    // others refined by their neighbours' colours until stable.
    std::vector<int64_t> colour(nodes.size());
    std::vector<bool> fixed(nodes.size(), false);
    std::map<std::string, int64_t> names;
    auto idOf = [&](const std::string &key) {
      return names.try_emplace(key, static_cast<int64_t>(names.size())).first->second;
    };
    std::map<std::string, int64_t> layerClasses;
    DenseMap<Operation *, std::pair<int64_t, int64_t>> placeInLayer;
    if (options.mergeLayers) {
      func->walk([&](Operation *layer) {
        if (!isa<LayerOp>(layer))
          return;
        ++stats.layers;
        int64_t cls =
            layerClasses
                .try_emplace(layerStructureKey(cast<LayerOp>(layer)), int64_t(layerClasses.size()))
                .first->second;
        int64_t place = 0;
        layer->getRegion(0).walk<WalkOrder::PreOrder>([&](Operation *op) {
          placeInLayer[op] = {cls, place++};
        });
      });
    }
    stats.layerClasses = static_cast<int64_t>(layerClasses.size());
    for (auto [n, node] : llvm::enumerate(nodes)) {
      std::string key;
      llvm::raw_string_ostream os(key);
      if (node.op) {
        auto place = placeInLayer.find(node.op);
        if (place != placeInLayer.end()) {
          os << "layer " << place->second.first << " op " << place->second.second;
          fixed[n] = true;
        } else if (options.mergeLayers) {
          // An op's place in a sequence (a microbatch's index) is no part
          // of its sharding rule.
          NamedAttrList attrs(node.op->getAttrDictionary());
          attrs.erase("index");
          os << node.op->getName() << printed(attrs.getDictionary(context));
          for (Type t : node.op->getOperandTypes())
            os << t;
          for (Type t : node.op->getResultTypes())
            os << t;
        } else {
          os << "op " << n;
        }
      } else if (node.result >= 0 && !options.mergeLayers) {
        os << "result " << node.result;
      } else if (node.result >= 0) {
        NamedAttrList attrs(func.getResultAttrDict(node.result));
        attrs.erase(kNameAttr);
        os << "result " << func.getResultTypes()[node.result]
           << printed(attrs.getDictionary(context));
      } else if (options.mergeLayers) {
        unsigned i = node.arg.getArgNumber();
        os << "arg " << node.arg.getType();
        NamedAttrList attrs(func.getArgAttrDict(i));
        attrs.erase(kNameAttr);
        attrs.erase(kShardedLikeAttr);
        os << printed(attrs.getDictionary(context));
      } else {
        os << "arg " << n;
      }
      colour[n] = idOf(key);
    }
    // Refine: an op or a result by its operands' colours, an argument by
    // its users'.
    std::vector<std::vector<std::pair<int, int>>> usersOf(nodes.size()), operandsOf(nodes.size());
    for (const Use &use : uses) {
      usersOf[use.from].push_back({use.to, use.operand});
      operandsOf[use.to].push_back({use.from, static_cast<int>(use.result)});
    }
    // A chain of ops of one kind (a running sum: a gradient accumulated
    // over microbatches, the squares of every gradient added up for the
    // norm) is one class: a link is told apart by what it adds, not by the
    // link it extends, which would make every depth a class of its own.
    const std::vector<int64_t> kind = colour;
    size_t count = names.size();
    for (int round = 0; round < 16 && options.mergeLayers; ++round) {
      std::map<std::vector<int64_t>, int64_t> next;
      std::vector<int64_t> refined(nodes.size());
      for (size_t n = 0; n < nodes.size(); ++n) {
        std::vector<int64_t> key{colour[n]};
        if (!fixed[n]) {
          if (!nodes[n].isArgument()) {
            for (auto [from, result] : operandsOf[n]) {
              if (kind[from] == kind[n])
                continue;
              key.push_back(colour[from]);
              key.push_back(result);
            }
          } else {
            std::vector<std::pair<int64_t, int64_t>> seen;
            for (auto [to, operand] : usersOf[n])
              seen.push_back({colour[to], operand});
            llvm::sort(seen);
            for (auto [c, o] : seen) {
              key.push_back(c);
              key.push_back(o);
            }
          }
        }
        refined[n] = next.try_emplace(key, static_cast<int64_t>(next.size())).first->second;
      }
      colour = refined;
      if (next.size() == count)
        break;
      count = next.size();
    }
    std::map<int64_t, int> classOfColour;
    for (size_t n = 0; n < nodes.size(); ++n) {
      auto [it, fresh] = classOfColour.try_emplace(colour[n], static_cast<int>(classes.size()));
      if (fresh)
        classes.emplace_back();
      classes[it->second].members.push_back(static_cast<int>(n));
      nodes[n].cls = it->second;
    }
    stats.classes = static_cast<int64_t>(classes.size());
  }

  //===--------------------------------------------------------------------===//
  // Variables and costs
  //===--------------------------------------------------------------------===//

  const Price &price(RankedTensorType type, const Sharding &from, const Sharding &to) const {
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

  /// The member strategy of class `cls` for strategy `s` of its variable.
  int strategyIn(int cls, int s) const { return classes[cls].strategyOf[s]; }

  const Sharding &resultSharding(int node, unsigned result, int varStrategy) const {
    return nodes[node].strategies[strategyIn(nodes[node].cls, varStrategy)].results[result];
  }
  const Sharding &targetSharding(const Use &use, int varStrategy) const {
    const Strategy &s = nodes[use.to].strategies[strategyIn(nodes[use.to].cls, varStrategy)];
    return use.operand < 0 ? s.results[0] : *s.operands[use.operand];
  }
  RankedTensorType typeOf(const Use &use) const {
    const Node &from = nodes[use.from];
    return cast<RankedTensorType>(from.op ? from.op->getResult(use.result).getType()
                                          : from.arg.getType());
  }
  int varOf(int node) const { return classes[nodes[node].cls].var; }

  /// Makes each class a variable, or a follower of its operand's.
  void buildVariables() {
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
        // Per strategy of the leader's variable, the cheapest block and
        // reshard of this op.
        const NodeClass &leader = classes[leaderClass];
        const Use &use = *soleUse[rep];
        int leaderNode = leader.members.front();
        size_t count = problem.cost[leader.var].size();
        std::vector<int> chosen(count, -1);
        for (size_t s = 0; s < count; ++s) {
          const Sharding &from = resultSharding(leaderNode, leaderResult, static_cast<int>(s));
          double best = kForbidden;
          for (auto [t, strategy] : llvm::enumerate(node.strategies)) {
            double c = price(typeOf(use), from, *strategy.operands[use.operand]).seconds +
                       strategy.seconds;
            if (c < best) {
              best = c;
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

  std::string describeNode(int n) const {
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

  /// The reshard edges, one per pair of classes and operand, weighted by
  /// how many uses they stand for.
  void buildEdges() {
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
  /// points (by their whole bytes).
  void buildMemory() {
    if (options.memoryPoints <= 0)
      return;
    int64_t end = static_cast<int64_t>(order.size());
    // Per value produced by an op, its last use.
    llvm::MapVector<Value, int64_t> lastUse;
    for (Operation *op : order) {
      if (op->hasTrait<mlir::OpTrait::IsTerminator>() &&
          isa_and_nonnull<LayerOp>(op->getParentOp()))
        continue;
      int64_t at =
          op->hasTrait<mlir::OpTrait::ReturnLike>() && op->getParentOp() == func.getOperation()
              ? end
              : position.lookup(op);
      for (Value v : op->getOperands()) {
        Value c = pmlir::tfm::yieldedValue(v);
        if (isa<OpResult>(c) && producer.count(c))
          lastUse[c] = std::max(lastUse.lookup(c), at);
      }
    }
    std::vector<double> live(end + 1, 0.0);
    for (auto [v, last] : lastUse) {
      int64_t def = position.lookup(v.getDefiningOp());
      auto type = cast<RankedTensorType>(v.getType());
      double bytes = static_cast<double>(type.getNumElements() * elementBytes(type));
      for (int64_t p = def; p <= last && p <= end; ++p)
        live[p] += bytes;
    }
    std::vector<int64_t> points(live.size());
    std::iota(points.begin(), points.end(), 0);
    llvm::stable_sort(points, [&](int64_t a, int64_t b) { return live[a] > live[b]; });
    points.resize(std::min<size_t>(points.size(), options.memoryPoints));
    for (int64_t p : points) {
      Problem::MemoryPoint point;
      point.where = p < end ? "at '" + order[p]->getName().getStringRef().str() + "' (position " +
                                  std::to_string(p) + ")"
                            : "at the return";
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
      for (auto [n, node] : llvm::enumerate(nodes))
        if (node.isArgument())
          add(argumentTerms, static_cast<int>(n), 0, cast<RankedTensorType>(node.arg.getType()),
              options.argumentShare);
      for (auto [v, last] : lastUse) {
        int64_t def = position.lookup(v.getDefiningOp());
        if (def <= p && p <= last) {
          auto [n, r] = producer.lookup(v);
          add(valueTerms, n, r, cast<RankedTensorType>(v.getType()), options.valueShare);
        }
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
    problem.memoryBudget = options.memoryBudget;
  }

  void build() {
    auto start = std::chrono::steady_clock::now();
    buildNodes();
    buildClasses();
    buildVariables();
    buildEdges();
    buildMemory();
    stats.buildSeconds = secondsSince(start);
    LLVM_DEBUG(llvm::dbgs() << "auto-sharding: " << stats.ops << " ops, " << stats.arguments
                            << " arguments, " << stats.classes << " classes, " << stats.followers
                            << " followers, " << stats.variables << " variables, "
                            << stats.strategies << " strategies, " << stats.edges << " edges\n");
  }

  Plan planOf(const Solution &solution) const {
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
            classIds.try_emplace({node.cls, r}, static_cast<int64_t>(classIds.size()))
                .first->second;
      }
      plan.prediction.computeSeconds += strategy.seconds;
      plan.opCosts[node.op].computeSeconds += strategy.seconds;
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
        Prediction::Comm &own = plan.opCosts[reader].comm[axes];
        own.seconds += comm.seconds;
        own.bytes += comm.bytes;
        own.wireBytes += comm.wireBytes;
        own.collectives += comm.collectives;
        Prediction::Comm &total = plan.prediction.commPerAxes[axes];
        total.seconds += comm.seconds;
        total.bytes += comm.bytes;
        total.wireBytes += comm.wireBytes;
        total.collectives += comm.collectives;
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
};

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
