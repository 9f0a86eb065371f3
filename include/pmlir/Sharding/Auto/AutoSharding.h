//===- AutoSharding.h - Alpa-style intra-op auto-sharding -------*- C++ -*-===//
//
// Part of pmlir.
//
// The intra-op auto-sharder. Every op with a factor sharding rule is a
// node whose strategies are the assignments of mesh axes to its factors
// (contracting factors make pending sums; ops linear in an operand may also
// take and keep a pending sum); every tensor argument is a node whose
// strategies are the even splits of its dimensions and the shardings its
// users ask for. A strategy costs the roofline time of the op's block
// (pmlir/Sharding/CostModel.h); an edge costs the reshard, as the dry-run
// planner (pmlir/Sharding/Reshard.h) prices it, from the producer's result
// sharding to the consumer's operand sharding; a training step's updated
// parameters are resharded to their parameters' shardings. Memory is the
// local bytes live at the program's heaviest points (arguments always),
// bounded by the per-device budget.
//
// Two reductions keep the problem small (pmlir/Sharding/Auto/Problem.h):
// - identical layers share one set of variables: tfm.layer ops with the
//   same body are one class, op by op, and the arguments and ops outside
//   the layers are merged by their structure (colour refinement), so a
//   96-layer model costs about one layer;
// - cheap unary ops (no FLOPs) follow their operand (Alpa's s_follow): each
//   of the operand's strategies fixes theirs, the cheapest that reads the
//   operand as it is made (only where none does, the cheapest reshard and
//   block), so that a whole operand keeps its follower whole.
// The result is a sharding per value; writeSeeds turns it into the seeds
// that propagation completes to it.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_AUTO_AUTOSHARDING_H
#define PMLIR_SHARDING_AUTO_AUTOSHARDING_H

#include "pmlir/Sharding/Auto/Problem.h"
#include "pmlir/Sharding/CostModel.h"
#include "pmlir/Sharding/Propagation.h"

#include "mlir/Interfaces/FunctionInterfaces.h"

#include <map>
#include <memory>
#include <string>

namespace pmlir::sharding::autoshard {

struct Options {
  CostModel model;
  /// Bytes a device may hold.
  double memoryBudget = std::numeric_limits<double>::infinity();
  Solver solver = Solver::Cbc;
  double timeLimitSeconds = 10;
  /// CBC's branch-and-bound nodes, when not negative: 0 keeps the root's
  /// best solution (a search over many problems trades the proof of
  /// optimality for time; the result stays the same on every run).
  int64_t nodeLimit = -1;
  /// Alpa's s_follow for cheap unary ops.
  bool follow = true;
  /// Identical layers (and what only they use) share variables.
  bool mergeLayers = true;
  /// How many of the heaviest program points bound memory.
  int memoryPoints = 3;
  /// The share of the arguments' and of the live values' bytes one device
  /// holds: of a program that stands for a pipeline (one stage a layer,
  /// one microbatch), a rank holds about its stages' share of the
  /// parameters and optimizer state, and of the activations the share its
  /// in-flight microbatches keep (pipe::memoryShares).
  double argumentShare = 1, valueShare = 1;
  /// Where the function runs on several ranks that hold different values
  /// (a pipelined program's): per rank, the ops it runs in the order it
  /// runs them (pipeline::rankTimelines). Memory is then bounded on each
  /// rank: the arguments its ops read and the values live in its order,
  /// whole (the shares above are not applied). Empty: one program, in its order.
  std::vector<std::vector<mlir::Operation *>> rankTimelines;
  /// Mesh axes no value is sharded over (a pipelined program's stage
  /// axis).
  std::vector<std::string> excludedAxes;
  /// Shardings the program already carries (a tensor argument's
  /// tfm.sharding, a tfm.sharding_constraint) are kept: the plan completes
  /// them instead of choosing those values' shardings afresh. Off, they
  /// are ignored.
  bool keepAnnotations = true;
};

/// What a plan is predicted to cost one device, for one call.
struct Prediction {
  double computeSeconds = 0;
  double commSeconds = 0;
  /// Per group of mesh axes ("tp", "dp", "dp,tp"): seconds, the bytes of
  /// the buffers the collectives move (as pmlir-comm-report counts them)
  /// and the bytes one rank sends.
  struct Comm {
    double seconds = 0;
    int64_t bytes = 0;
    int64_t wireBytes = 0;
    int64_t collectives = 0;
    Comm &operator+=(const Comm &other) {
      seconds += other.seconds;
      bytes += other.bytes;
      wireBytes += other.wireBytes;
      collectives += other.collectives;
      return *this;
    }
  };
  std::map<std::string, Comm> commPerAxes;
  double peakMemoryBytes = 0;
  /// At the heaviest point, the bytes of the arguments and of the live
  /// values, whole (before the options' shares).
  double argumentBytes = 0, valueBytes = 0;
  double objective = 0;
};

/// What one op costs a device in a plan: its block's compute, and the
/// reshards of what it reads (a function result's reshard is the
/// return's).
struct OpCost {
  double computeSeconds = 0;
  std::map<std::string, Prediction::Comm> comm;
};

/// Size and solve statistics.
struct ProblemStats {
  int64_t ops = 0, arguments = 0, nodes = 0, classes = 0, followers = 0, variables = 0,
          strategies = 0, edges = 0, layerClasses = 0, layers = 0;
  double buildSeconds = 0, solveSeconds = 0;
  bool optimal = true;
};

struct Plan {
  /// Per value of the function (arguments, op results), its sharding.
  ShardingMap shardings;
  /// Per function result that is no updated parameter, the sharding it is
  /// returned in.
  std::map<unsigned, Sharding> results;
  /// Where a seed is read in another sharding than its own (an op reads an
  /// argument, the return reads a parameter's new value): the op, the
  /// operand and the sharding it reads.
  struct SeedRead {
    mlir::Operation *op;
    unsigned operand;
    Sharding sharding;
  };
  std::vector<SeedRead> seedReads;
  /// Per op, the shardings its strategy reads its operands in (nullopt:
  /// the rule does not shard the operand).
  llvm::DenseMap<mlir::Operation *, llvm::SmallVector<std::optional<Sharding>>> reads;
  /// Per op result, its class: results of one class take one sharding
  /// (the same value in identical layers).
  llvm::DenseMap<mlir::Value, int64_t> classOf;
  /// Per op, what it costs (ops of one class alike).
  llvm::DenseMap<mlir::Operation *, OpCost> opCosts;
  Prediction prediction;
  ProblemStats stats;
};

class AutoSharder {
public:
  AutoSharder(mlir::FunctionOpInterface func, MeshAttr mesh, const Options &options);
  ~AutoSharder();

  const Problem &problem() const;
  const ProblemStats &stats() const;
  /// The plan of a choice of strategies.
  Plan planOf(const Solution &solution) const;
  /// Solves and returns the best plan; fails with `error` set where the
  /// solver fails or no plan fits the budget ("cannot fit under B: the
  /// least memory any plan needs is M").
  std::optional<Plan> solve(std::string &error);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

/// Writes `plan` into `func` as seeds: each tensor argument's tfm.sharding,
/// a tfm.sharding_constraint at each operand an op reads in another
/// sharding than its own, and one where propagation from the seeds so far
/// would reach another sharding than the plan's. Returns the number of
/// constraints written.
mlir::FailureOr<int64_t> writeSeeds(mlir::FunctionOpInterface func, MeshAttr mesh,
                                    const Plan &plan);

} // namespace pmlir::sharding::autoshard

#endif // PMLIR_SHARDING_AUTO_AUTOSHARDING_H
