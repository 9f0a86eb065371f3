//===- AutoSharderImpl.h - The auto-sharder's parts -------------*- C++ -*-===//
//
// Part of pmlir.
//
// The state of the auto-sharder (pmlir/Sharding/Auto/AutoSharding.h) and
// its parts, each in a file of its own:
// - Graph.cpp: the nodes (ops with a rule, tensor arguments, results), the
//   uses between them, and the classes of nodes that share a variable
//   (the same op of identical layers);
// - Strategies.cpp: each node's ways to compute, from its op's factor rule
//   (every even assignment of mesh axes to factors, and the pending sums
//   its linearity allows), narrowed to the user's annotations;
// - Pricing.cpp: what a choice costs: reshards on the uses priced by the
//   cost model, and the memory live at each program point;
// - ProblemBuilding.cpp: classes made variables (or followers), the
//   integer program assembled, and a solution read back as a plan;
// - AutoSharding.cpp: the public interface (solve, writeSeeds).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_SHARDING_AUTO_AUTOSHARDERIMPL_H
#define PMLIR_LIB_SHARDING_AUTO_AUTOSHARDERIMPL_H

#include "pmlir/Sharding/Auto/AutoSharding.h"

#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Reshard.h"
#include "pmlir/Support/TypeBytes.h"

#include <chrono>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace pmlir::sharding::autoshard {

using llvm::ArrayRef;
using llvm::cast;
using llvm::DenseMap;
using llvm::dyn_cast;
using llvm::isa;
using llvm::SmallVector;
using llvm::StringRef;
using mlir::Attribute;
using mlir::BlockArgument;
using mlir::FunctionOpInterface;
using mlir::MLIRContext;
using mlir::Operation;
using mlir::RankedTensorType;
using mlir::Value;

/// One way to compute a node: what it reads and what it makes.
struct Strategy {
  /// Per operand, the sharding it is read in (nullopt: the rule does not
  /// shard it).
  SmallVector<std::optional<Sharding>> operands;
  SmallVector<Sharding> results;
  /// The op's time on a device: its compute and what it sends itself.
  double seconds = 0;
  /// What it sends itself (its expert exchanges), by mesh axes: part of
  /// `seconds`.
  std::vector<std::pair<std::string, Prediction::Comm>> comm;
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

inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

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
  // The graph (Graph.cpp) and each node's strategies (Strategies.cpp)
  //===--------------------------------------------------------------------===//

  Axes meshAxes() const;

  int axisIndex(StringRef axis) const { return static_cast<int>(mesh.axisIndex(axis)); }

  void sortAxes(Axes &axes) const {
    llvm::sort(axes, [&](StringRef a, StringRef b) { return axisIndex(a) < axisIndex(b); });
  }

  int64_t localBytes(RankedTensorType type, const Sharding &s) const {
    return localType(mesh, type, s).getNumElements() * elementBytes(type.getElementType());
  }

  /// The shardings of a tensor of `type` with its dimensions split evenly
  /// by any of the mesh's axes (each axis on one dimension, in mesh order).
  std::vector<Sharding> evenShardings(RankedTensorType type) const;

  /// The sharding of a tensor of the rule whose dimensions hold `dims`'
  /// factors under `perFactor`; nullopt where a dimension cannot hold its
  /// factors' axes as contiguous blocks.
  std::optional<Sharding> tensorSharding(const ShardingRule &rule,
                                         ArrayRef<SmallVector<int64_t>> dims,
                                         ArrayRef<Axes> perFactor) const;

  /// The strategies of `op` from its rule: every assignment of mesh axes to
  /// factors that divide evenly, and the pending variants the op's
  /// linearity allows.
  void enumerate(Operation *op, const ShardingRule &rule, std::vector<Strategy> &out);

  /// Strategies of an op linear in its operands that take a pending sum
  /// over axes the strategy leaves free and keep it.
  void addPendingVariants(Operation *op, const ShardingRule &rule, const Strategy &base,
                          const Axes &used, std::vector<Strategy> &out);

  void buildNodes();

  /// The annotated values' strategies narrowed to their annotations: an
  /// argument takes its tfm.sharding, a constraint yields its sharding
  /// (reading its operand in it, or in any sharding its strategies read
  /// when none does).
  void keepAnnotations();

  //===--------------------------------------------------------------------===//
  // Classes: identical layers and what only they use (Graph.cpp)
  //===--------------------------------------------------------------------===//

  static std::string printed(Attribute attr);

  void buildClasses();

  //===--------------------------------------------------------------------===//
  // Variables (ProblemBuilding.cpp) and costs (Pricing.cpp)
  //===--------------------------------------------------------------------===//

  const Price &price(RankedTensorType type, const Sharding &from, const Sharding &to) const;

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
  void buildVariables();

  std::string describeNode(int n) const;

  /// The reshard edges, one per pair of classes and operand, weighted by
  /// how many uses they stand for.
  void buildEdges();

  /// Memory: the arguments, and the values live at the program's heaviest
  /// points (by their whole bytes); of a program on several ranks
  /// (options.rankTimelines), each rank's.
  void buildMemory();
  /// The memory points of `timeline`: the heaviest of the values it makes
  /// and reads (its return at the end), with the arguments it holds: all
  /// of a single program's, those its ops read on rank `rank`.
  void addMemoryPoints(llvm::ArrayRef<Operation *> timeline, std::optional<int64_t> rank);

  void build();

  Plan planOf(const Solution &solution) const;
};

} // namespace pmlir::sharding::autoshard

#endif // PMLIR_LIB_SHARDING_AUTO_AUTOSHARDERIMPL_H
