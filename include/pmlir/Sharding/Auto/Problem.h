//===- Problem.h - The intra-op sharding problem and its solvers -*- C++ -*-===//
//
// Part of pmlir.
//
// Alpa's intra-op formulation, apart from IR: variables, each choosing one
// of its strategies; a cost per variable and strategy (compute, already
// summed over the ops that share the variable); edges between variables
// whose cost depends on both choices (resharding); and memory at points of
// the program, each bounded by the per-device budget.
//
// An edge's cost depends on its ends only through a class of each end's
// strategy (the producer's result sharding, the consumer's operand
// sharding), so it is a matrix over classes, much smaller than one over
// strategies. As an integer program (solveWithCbc): a binary x per
// variable and strategy, one-hot per variable; a continuous e per edge and
// pair of classes with a finite cost, whose row sums are the x of the
// source class and column sums those of the target class, which forces e to
// the product of the x; forbidden pairs (an infinite cost: no collectives
// make the change) get no e, so their classes cannot be chosen together.
// solveExhaustively searches every choice, for tests.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_AUTO_PROBLEM_H
#define PMLIR_SHARDING_AUTO_PROBLEM_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/CommandLine.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace pmlir::sharding::autoshard {

inline constexpr double kForbidden = std::numeric_limits<double>::infinity();

struct Problem {
  /// Per variable, per strategy: its cost in seconds (kForbidden: never).
  std::vector<std::vector<double>> cost;
  /// Per variable, what it stands for (diagnostics).
  std::vector<std::string> names;

  struct Edge {
    int from = 0, to = 0;
    /// Per strategy of `from` its row in `cost`, per strategy of `to` its
    /// column.
    std::vector<int> fromClass, toClass;
    /// Seconds per pair of classes; kForbidden where no reshard exists.
    std::vector<std::vector<double>> cost;
  };
  /// Edges between distinct variables.
  std::vector<Edge> edges;

  /// The bytes a device holds at one point of the program: `constant` plus,
  /// per variable that contributes, its bytes per strategy.
  struct MemoryPoint {
    std::string where;
    double constant = 0;
    std::vector<std::pair<int, std::vector<double>>> terms;
  };
  std::vector<MemoryPoint> memory;
  double memoryBudget = std::numeric_limits<double>::infinity();

  size_t numVariables() const { return cost.size(); }
};

struct Solution {
  /// Per variable, its strategy.
  std::vector<int> choice;
  double objective = 0;
  /// Whether the solver proved it optimal (CBC within its time limit).
  bool optimal = true;
};

enum class SolveStatus { Solved, Infeasible, Failed };

struct SolveResult {
  SolveStatus status = SolveStatus::Failed;
  Solution solution;
  /// Why it failed.
  std::string error;
  double seconds = 0;
};

/// The objective of `choice` (kForbidden where it picks a forbidden
/// strategy or pair).
double evaluate(const Problem &problem, llvm::ArrayRef<int> choice);
/// The largest memory point under `choice`.
double peakMemory(const Problem &problem, llvm::ArrayRef<int> choice);

/// The largest memory point when every variable takes its smallest allowed
/// strategy there: no valid choice needs less.
double leastMemoryBound(const Problem &problem);

/// Solves with CBC (COIN-OR branch and cut), stopping after
/// `timeLimitSeconds`, or after `nodeLimit` branch-and-bound nodes when it
/// is not negative (0: the root's relaxation, cuts and heuristics), with
/// the best solution found (then not optimal).
SolveResult solveWithCbc(const Problem &problem, double timeLimitSeconds, int64_t nodeLimit = -1);
/// Searches every choice with branch and bound on the partial cost; fails
/// when the search would visit more than `maxNodes` partial choices.
SolveResult solveExhaustively(const Problem &problem, int64_t maxNodes = 20'000'000);

/// Which search solves: CBC, or every choice (small programs, for tests).
enum class Solver { Cbc, Exhaustive };

/// The alternatives of an option that takes a Solver, each with its name.
inline llvm::cl::ValuesClass solverValues() {
  return llvm::cl::values(
      clEnumValN(Solver::Cbc, "cbc", "COIN-OR branch and cut (the default)"),
      clEnumValN(Solver::Exhaustive, "exhaustive",
                 "every choice, branch and bound on the partial cost (small programs, for tests)"));
}

SolveResult solve(const Problem &problem, Solver solver, double timeLimitSeconds,
                  int64_t nodeLimit = -1);

/// The least peak memory of any valid choice (ignoring the budget and the
/// objective): what an infeasible budget is told. With `solver`.
SolveResult minimizePeakMemory(const Problem &problem, Solver solver, double timeLimitSeconds,
                               int64_t nodeLimit = -1);

} // namespace pmlir::sharding::autoshard

#endif // PMLIR_SHARDING_AUTO_PROBLEM_H
