//===- Planner.h - Whole parallel plans: the inter-op search ----*- C++ -*-===//
//
// Part of pmlir.
//
// The planner behind pmlir-plan and pmlir-run --recipe auto's choice of a
// mesh: Alpa's inter-op search on top of the intra-op auto-sharder. For
// every way to lay `devices` out as pp x dp x tp (tp within the
// topology's nodes), the auto-sharder solves the training step (or the
// forward) on the dp x tp submesh, with the memory a pipeline rank holds;
// each layer's forward and backward then cost what the plan's ops and
// reshards in it cost. A dynamic program cuts the layers into pp x v
// stages of the least largest cost (so the pipeline's steady state is as
// short as it can be), and the pipeline simulator (pmlir/Dialect/Pipe/
// Schedule.h) runs each schedule over the step's microbatches: its
// makespan includes the bubble and the stage-to-stage transfers. Every
// stage shares one submesh shape, as one named mesh gives pmlir-run. The
// best plans are then compiled as pmlir-run compiles them, and their
// collectives are the program's.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PLANNING_PLANNER_H
#define PMLIR_PLANNING_PLANNER_H

#include "pmlir/Pipelining/Schedule.h"
#include "pmlir/Sharding/Auto/AutoSharding.h"
#include "pmlir/Sharding/Topology.h"

#include "mlir/IR/BuiltinOps.h"

#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::planning {

/// The most devices and microbatches a plan is searched for: a million
/// devices is beyond any cluster built, and each plan's schedule is
/// simulated action by action over its microbatches.
inline constexpr int64_t kMaxDevices = int64_t(1) << 20;
inline constexpr int64_t kMaxMicrobatches = int64_t(1) << 16;

/// Where a search stands, told as each step of it starts: a layout's
/// intra-op solve (the `current` of `total` solves), then each of the best
/// plans' compile.
struct SearchProgress {
  enum class Phase { Solving, Compiling } phase = Phase::Solving;
  int64_t current = 0, total = 0;
  /// The layout being solved ("pp=2,dp=4"), or the plan being compiled
  /// ("pp=2,dp=4 1f1b").
  std::string subject;
  double seconds = 0;
};

struct PlannerOptions {
  sharding::Topology topology;
  /// The topology as pmlir-run --topology names it (a preset or a JSON
  /// file): the plans the planner compiles are auto-sharded on it.
  std::string topologySpec = "cpu";
  /// Devices to lay out.
  int64_t devices = 1;
  /// Bytes a device may hold.
  double memoryBudget = std::numeric_limits<double>::infinity();
  /// Plans of a training step (pmlir-run --train's), or of the forward.
  bool train = false;
  /// Microbatches of the model's batch per step (a training step's
  /// gradient accumulation without pipelining).
  int64_t microbatches = 1;
  /// The pipeline schedules to try.
  std::vector<pipe::ScheduleKind> schedules = {
      pipe::ScheduleKind::GPipe, pipe::ScheduleKind::OneFOneB, pipe::ScheduleKind::Interleaved1F1B,
      pipe::ScheduleKind::ZeroBubbleH1};
  /// The largest tp (0: a node's devices) and pp (0: the layers).
  int64_t maxTensorParallel = 0;
  int64_t maxPipeline = 0;
  /// Seconds each intra-op solve may take.
  double timeLimitSeconds = 10;
  /// CBC's branch-and-bound nodes for each layout's solve (-1: no limit,
  /// each solve proven optimal). The default keeps the root's best
  /// solution: a layout costs its relaxation and heuristics, not the proof.
  int64_t searchNodes = 0;
  /// How many of the best plans to compile as pmlir-run does (the program
  /// built, auto-sharded, partitioned and cut into pipeline ranks): their
  /// collectives become the program's, their step is priced again with
  /// them, and a plan that does not compile does not fit.
  int64_t compile = 5;
  std::string entry = "forward";
  /// Called as each layout's solve and each compile starts, where set: a
  /// search on many devices solves hundreds of layouts, each up to
  /// timeLimitSeconds.
  std::function<void(const SearchProgress &)> progress;
};

using Comm = sharding::autoshard::Prediction::Comm;
using CommPerAxes = std::map<std::string, Comm>;

/// One whole plan and what it is predicted to cost a step.
struct Plan {
  int64_t pp = 1, dp = 1, tp = 1;
  int64_t virtualStages = 1;
  int64_t microbatches = 1;
  /// With pp > 1.
  std::optional<pipe::ScheduleKind> schedule;
  /// The first layer of stages 1, 2, ...
  std::vector<int64_t> splitPoints;

  /// A step on the pipeline rank that finishes last (criticalRank): its
  /// time, split into compute, communication (comm()) and what is left,
  /// the bubble (waiting for other stages). Where the step is shorter than
  /// compute and communication together, the difference is communication
  /// overlapped: stage-to-stage transfers in flight while the rank computes
  /// other microbatches.
  double stepSeconds = 0, computeSeconds = 0, bubbleSeconds = 0, overlappedSeconds = 0;
  int64_t criticalRank = 0;
  /// Per pipeline rank, the collectives and transfers of its program per
  /// group of mesh axes ("tp", "dp,tp", "pp"), what pmlir-run --comm-report
  /// counts on its first rank. Empty for a layout without an intra-op plan.
  /// Of a compiled plan, the program's own; of others, the intra-op plan's
  /// reshards priced on the layer cut.
  std::vector<CommPerAxes> rankComm;
  /// Per pipeline rank, when its step ends and its compute.
  std::vector<double> rankSeconds, rankComputeSeconds;
  /// Compiled: rankComm is the program's, and estimatedRankComm what the
  /// intra-op plan priced before.
  bool compiled = false;
  std::vector<CommPerAxes> estimatedRankComm;
  /// The bytes the heaviest pipeline rank's devices hold. Compiled: what
  /// the auto-sharder predicts for the program the command compiles (each
  /// pipeline rank in its schedule's order), whose budget the command is
  /// held to; else the search's estimate, from the one-stage-a-layer step
  /// scaled by the schedule's memory shares.
  double memoryBytes = 0;
  /// Compiled: the search's estimate of memoryBytes.
  double estimatedMemoryBytes = 0;
  bool fits = true;
  /// Why it does not fit.
  std::string note;
  sharding::autoshard::ProblemStats stats;

  /// The critical rank's communication, and its seconds.
  const CommPerAxes &comm() const {
    static const CommPerAxes none;
    return rankComm.empty() ? none : rankComm[criticalRank];
  }
  double commSeconds() const;

  /// "pp=2,dp=2,tp=2" (axes of size 1 left out; "dp=1" for one device).
  std::string meshSpec() const;
  /// The schedule's name, or "-" without pipelining.
  std::string scheduleName() const;
};

struct PlannerResult {
  /// Fitting plans fastest first, then those that do not fit.
  std::vector<Plan> plans;
  int64_t layers = 0;
  /// The schedules asked for that priced no plan, in the order asked, and
  /// why (a pipeline rank's stages outnumber the layers, no layout has a
  /// pp axis, a forward has no backward to split, ...).
  std::vector<std::pair<pipe::ScheduleKind, std::string>> unpricedSchedules;
  /// Intra-op problems solved.
  int64_t solves = 0;
  double seconds = 0;
};

/// Plans `options.entry` of `module` (a global program with tfm.layer ops)
/// on `options.devices`; fails with `error` set on a program the planner
/// cannot cut or differentiate.
std::optional<PlannerResult> planModel(mlir::ModuleOp module, const PlannerOptions &options,
                                       std::string &error);

} // namespace pmlir::planning

#endif // PMLIR_PLANNING_PLANNER_H
