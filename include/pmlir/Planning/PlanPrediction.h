//===- PlanPrediction.h - Plans priced by compiling every rank --*- C++ -*-===//
//
// Part of pmlir.
//
// The planner (Planner.h) ranks layouts on the auto-sharder's cost model:
// fast enough for a thousand devices, but it prices a layer's ops, not the
// program a rank runs, and it holds every value for the backward. Where
// the job can be compiled here, its best plans are then predicted as
// `pmlir-run --predict` predicts a job (RankMemory.cpp, RankTime.cpp):
// every rank's program compiled to the buffers it allocates, its peak
// resident memory counted and its step priced on a device profile and
// simulated against the other ranks. Each plan is tried under every
// recomputation mode asked for; those whose heaviest rank stays under the
// memory cap are ranked by their predicted step.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_PLANNING_PLANPREDICTION_H
#define PMLIR_PLANNING_PLANPREDICTION_H

#include "pmlir/Planning/Planner.h"
#include "pmlir/Support/CompileTarget.h"
#include "pmlir/Training/Autodiff.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace pmlir::planning {

/// What turns a plan into the pmlir-run command that runs it.
struct RunCommandOptions {
  std::string pmlirRun = "pmlir-run";
  std::string model;
  bool train = false;
  /// pmlir-run's --topology and --memory-budget ("": not given).
  std::string topology = "cpu", memoryBudget;
  /// pmlir-run's --device.
  CompileTarget device = CompileTarget::Cpu;
};

/// The arguments of the pmlir-run command that runs `plan` (the first, the
/// executable), with --recompute where `recompute` is given.
std::vector<std::string> runArguments(const Plan &plan, const RunCommandOptions &options,
                                      std::optional<training::Recompute> recompute = std::nullopt);

/// The arguments as one line of shell, each quoted where it needs it.
std::string commandLine(const std::vector<std::string> &arguments);

struct PredictOptions {
  /// pmlir-run's --profile: "cpu" (measured on this host, cached), a
  /// built-in GPU's ("h100") or a JSON file of fixed rates.
  std::string profile = "cpu";
  /// The most bytes a rank's process may hold.
  double memoryCap = std::numeric_limits<double>::infinity();
  /// The recomputation modes each plan of a training step is tried under.
  std::vector<training::Recompute> recompute = {
      training::Recompute::None, training::Recompute::Selective, training::Recompute::Full};
  /// How many of the planner's fitting plans (best first) to predict.
  /// Each prediction is a pmlir-run job that ends itself: a rank that
  /// waits on a collective past pmlir-run's --timeout ends it.
  int64_t plans = 5;
};

/// One rank's predicted step and memory.
struct PredictedRank {
  int64_t peakBytes = 0;
  double stepSeconds = 0, gemmSeconds = 0, loopSeconds = 0, copySeconds = 0,
         communicationSeconds = 0, waitingSeconds = 0;
  /// What the rank spends working, not waiting.
  double busySeconds() const { return stepSeconds - waitingSeconds; }
};

struct PredictedPlan {
  Plan plan;
  std::optional<training::Recompute> recompute;
  std::vector<std::string> command;
  /// Predicted (else `error` says why not).
  bool predicted = false;
  std::string error;
  /// The heaviest rank's peak resident bytes, the step and its rates.
  int64_t peakBytes = 0;
  double stepSeconds = 0, tokensPerSecond = 0, mfu = 0;
  std::vector<PredictedRank> ranks;
  std::string profileName, profileSource;
  bool fits = false;

  /// The rank that works the longest: where the step's time goes.
  const PredictedRank &criticalRank() const;
  /// "selective", or "-" for a forward.
  std::string recomputeName() const;
};

/// Predicts the best `options.plans` fitting plans of `result` under each
/// recomputation mode (one run of pmlir-run --predict --json each) and
/// returns them, those under the cap fastest first, then the others.
std::vector<PredictedPlan> predictPlans(const PlannerResult &result,
                                        const RunCommandOptions &command,
                                        const PredictOptions &options);

/// Differences of a step's parts as "communication 1.20 s less, waiting
/// 0.30 s more", largest first, those under `significantSeconds` left out.
std::string differenceText(std::vector<std::pair<std::string, double>> parts,
                           double significantSeconds);

/// Why `best` is predicted faster than `runnerUp`: the critical ranks'
/// time by part ("communication 1.20 s less, waiting 0.30 s more, ...").
std::string whyFaster(const PredictedPlan &best, const PredictedPlan &runnerUp);

} // namespace pmlir::planning

#endif // PMLIR_PLANNING_PLANPREDICTION_H
