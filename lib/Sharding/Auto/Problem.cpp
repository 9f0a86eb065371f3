//===- Problem.cpp - The intra-op sharding problem and its solvers --------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Auto/Problem.h"

#include "coin/Cbc_C_Interface.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>

using namespace pmlir::sharding::autoshard;

double pmlir::sharding::autoshard::evaluate(const Problem &problem, llvm::ArrayRef<int> choice) {
  double total = 0;
  for (size_t v = 0; v < problem.numVariables(); ++v)
    total += problem.cost[v][choice[v]];
  for (const Problem::Edge &e : problem.edges)
    total += e.cost[e.fromClass[choice[e.from]]][e.toClass[choice[e.to]]];
  return total;
}

double pmlir::sharding::autoshard::peakMemory(const Problem &problem, llvm::ArrayRef<int> choice) {
  double peak = 0;
  for (const Problem::MemoryPoint &point : problem.memory) {
    double bytes = point.constant;
    for (const auto &[v, perStrategy] : point.terms)
      bytes += perStrategy[choice[v]];
    peak = std::max(peak, bytes);
  }
  return peak;
}

namespace {

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// The integer program of `problem`. With `minimizeMemory`, the objective
/// is the peak memory (a column z above every point) and the costs only
/// rule out what is forbidden.
struct CbcProgram {
  std::unique_ptr<Cbc_Model, void (*)(Cbc_Model *)> model{Cbc_newModel(), Cbc_deleteModel};
  /// Per variable, its first x column.
  std::vector<int> firstColumn;
  int columns = 0;
  // CBC's default tolerances suit costs near 1: seconds become microseconds.
  static constexpr double kScale = 1e6;

  // The program is gathered first and loaded at once: CBC's addRow and
  // addCol copy the matrix each time, quadratic in a big model's size.
  std::vector<double> lower, upper, objective;
  std::vector<int> integers;
  struct Row {
    std::vector<int> cols;
    std::vector<double> coefs;
    double lower, upper;
  };
  std::vector<Row> rows;

  int addColumn(double lb, double ub, double cost, bool integer) {
    lower.push_back(lb);
    upper.push_back(ub);
    objective.push_back(cost);
    if (integer)
      integers.push_back(columns);
    return columns++;
  }
  void addRow(const std::vector<int> &cols, const std::vector<double> &coefs, char sense,
              double rhs) {
    const double inf = std::numeric_limits<double>::infinity();
    rows.push_back({cols, coefs, sense == 'L' ? -inf : rhs, sense == 'G' ? inf : rhs});
  }

  /// Hands the gathered program to CBC as one column-major matrix.
  void load() {
    std::vector<CoinBigIndex> start(columns + 1, 0);
    for (const Row &row : rows)
      for (int c : row.cols)
        ++start[c + 1];
    for (int c = 0; c < columns; ++c)
      start[c + 1] += start[c];
    std::vector<int> index(start[columns]);
    std::vector<double> value(start[columns]);
    std::vector<CoinBigIndex> next(start.begin(), start.end() - 1);
    std::vector<double> rowLower, rowUpper;
    for (size_t r = 0; r < rows.size(); ++r) {
      for (size_t i = 0; i < rows[r].cols.size(); ++i) {
        int c = rows[r].cols[i];
        index[next[c]] = static_cast<int>(r);
        value[next[c]++] = rows[r].coefs[i];
      }
      rowLower.push_back(rows[r].lower);
      rowUpper.push_back(rows[r].upper);
    }
    Cbc_loadProblem(model.get(), columns, static_cast<int>(rows.size()), start.data(), index.data(),
                    value.data(), lower.data(), upper.data(), objective.data(), rowLower.data(),
                    rowUpper.data());
    for (int c : integers)
      Cbc_setInteger(model.get(), c);
  }

  CbcProgram(const Problem &problem, bool minimizeMemory) {
    for (size_t v = 0; v < problem.numVariables(); ++v) {
      firstColumn.push_back(columns);
      std::vector<int> cols;
      for (double c : problem.cost[v]) {
        bool forbidden = std::isinf(c);
        cols.push_back(
            addColumn(0, forbidden ? 0 : 1, forbidden || minimizeMemory ? 0 : c * kScale, true));
      }
      addRow(cols, std::vector<double>(cols.size(), 1.0), 'E', 1.0);
    }
    for (const Problem::Edge &e : problem.edges) {
      size_t rows = e.cost.size(), cols = rows ? e.cost.front().size() : 0;
      std::vector<std::vector<int>> rowTerms(rows), colTerms(cols);
      for (size_t r = 0; r < rows; ++r)
        for (size_t c = 0; c < cols; ++c) {
          if (std::isinf(e.cost[r][c]))
            continue;
          int col = addColumn(0, 1, minimizeMemory ? 0 : e.cost[r][c] * kScale, false);
          rowTerms[r].push_back(col);
          colTerms[c].push_back(col);
        }
      auto tie = [&](std::vector<int> terms, const std::vector<int> &classOf, int var, size_t k) {
        std::vector<double> coefs(terms.size(), 1.0);
        for (size_t s = 0; s < classOf.size(); ++s)
          if (classOf[s] == static_cast<int>(k)) {
            terms.push_back(firstColumn[var] + static_cast<int>(s));
            coefs.push_back(-1.0);
          }
        addRow(terms, coefs, 'E', 0.0);
      };
      for (size_t r = 0; r < rows; ++r)
        tie(rowTerms[r], e.fromClass, e.from, r);
      for (size_t c = 0; c < cols; ++c)
        tie(colTerms[c], e.toClass, e.to, c);
    }
    int peak = minimizeMemory ? addColumn(0, std::numeric_limits<double>::max(), 1.0, false) : -1;
    for (const Problem::MemoryPoint &point : problem.memory) {
      std::vector<int> cols;
      std::vector<double> coefs;
      for (const auto &[v, perStrategy] : point.terms)
        for (size_t s = 0; s < perStrategy.size(); ++s)
          if (perStrategy[s] != 0) {
            cols.push_back(firstColumn[v] + static_cast<int>(s));
            coefs.push_back(perStrategy[s]);
          }
      if (minimizeMemory) {
        cols.push_back(peak);
        coefs.push_back(-1.0);
        addRow(cols, coefs, 'L', -point.constant);
      } else if (std::isfinite(problem.memoryBudget)) {
        addRow(cols, coefs, 'L', problem.memoryBudget - point.constant);
      }
    }
    load();
  }

  SolveResult run(const Problem &problem, double timeLimitSeconds, int64_t nodeLimit,
                  bool minimizeMemory) {
    auto start = std::chrono::steady_clock::now();
    Cbc_setLogLevel(model.get(), 0);
    Cbc_setMaximumSeconds(model.get(), timeLimitSeconds);
    // One thread and no randomness: the same plan on every run.
    Cbc_setParameter(model.get(), "threads", "1");
    Cbc_setParameter(model.get(), "randomSeed", "1");
    Cbc_setParameter(model.get(), "randomCbcSeed", "1");
    if (nodeLimit >= 0)
      Cbc_setParameter(model.get(), "maxNodes", std::to_string(nodeLimit).c_str());
    Cbc_solve(model.get());
    SolveResult result;
    result.seconds = secondsSince(start);
    if (Cbc_isProvenInfeasible(model.get())) {
      result.status = SolveStatus::Infeasible;
      result.error = "the problem has no solution";
      return result;
    }
    const double *x = Cbc_bestSolution(model.get());
    if (!x) {
      result.error = Cbc_isSecondsLimitReached(model.get())
                         ? "CBC found no solution within its time limit of " +
                               llvm::formatv("{0}", timeLimitSeconds).str() + " s"
                     : Cbc_isNodeLimitReached(model.get())
                         ? "CBC found no solution within its limit of " +
                               std::to_string(nodeLimit) + " search nodes"
                         : "CBC stopped without a solution (status " +
                               std::to_string(Cbc_status(model.get())) + ")";
      return result;
    }
    result.solution.choice.resize(problem.numVariables());
    for (size_t v = 0; v < problem.numVariables(); ++v) {
      int best = 0;
      for (size_t s = 1; s < problem.cost[v].size(); ++s)
        if (x[firstColumn[v] + s] > x[firstColumn[v] + best])
          best = static_cast<int>(s);
      result.solution.choice[v] = best;
    }
    result.solution.objective = minimizeMemory ? peakMemory(problem, result.solution.choice)
                                               : evaluate(problem, result.solution.choice);
    result.solution.optimal = Cbc_isProvenOptimal(model.get());
    result.status = SolveStatus::Solved;
    return result;
  }
};

/// Branch and bound over the variables in order: `stepCost(v, s, choice)`
/// is what choosing `s` for `v` adds given the choices of the variables
/// before it (kForbidden: not allowed); a branch whose partial cost reaches
/// the best found is cut. `combine` folds a step into the partial cost.
SolveResult branchAndBound(const Problem &problem, int64_t maxNodes,
                           const std::function<double(size_t, int, std::vector<int> &)> &stepCost,
                           const std::function<double(double, double)> &combine,
                           const std::function<bool(const std::vector<int> &)> &accept) {
  auto start = std::chrono::steady_clock::now();
  size_t n = problem.numVariables();
  std::vector<int> choice(n, -1), best;
  double bestCost = kForbidden;
  int64_t visited = 0;
  bool exhausted = false;
  std::function<void(size_t, double)> visit = [&](size_t v, double partial) {
    if (exhausted)
      return;
    if (v == n) {
      if (partial < bestCost && accept(choice)) {
        bestCost = partial;
        best = choice;
      }
      return;
    }
    for (size_t s = 0; s < problem.cost[v].size(); ++s) {
      if (++visited > maxNodes) {
        exhausted = true;
        return;
      }
      choice[v] = static_cast<int>(s);
      double step = stepCost(v, static_cast<int>(s), choice);
      if (std::isinf(step))
        continue;
      double next = combine(partial, step);
      if (next < bestCost)
        visit(v + 1, next);
    }
    choice[v] = -1;
  };
  visit(0, 0.0);
  SolveResult result;
  result.seconds = secondsSince(start);
  if (exhausted) {
    result.error = "the exhaustive search visits more than " + std::to_string(maxNodes) +
                   " partial choices; use CBC";
    return result;
  }
  if (best.empty()) {
    result.status = SolveStatus::Infeasible;
    result.error = "the problem has no solution";
    return result;
  }
  result.status = SolveStatus::Solved;
  result.solution.choice = best;
  result.solution.objective = bestCost;
  return result;
}

/// Per variable, the edges whose later end it is.
std::vector<std::vector<const Problem::Edge *>> edgesClosedBy(const Problem &problem) {
  std::vector<std::vector<const Problem::Edge *>> closed(problem.numVariables());
  for (const Problem::Edge &e : problem.edges)
    closed[std::max(e.from, e.to)].push_back(&e);
  return closed;
}

double edgeCost(const Problem::Edge &e, const std::vector<int> &choice) {
  return e.cost[e.fromClass[choice[e.from]]][e.toClass[choice[e.to]]];
}

} // namespace

double pmlir::sharding::autoshard::leastMemoryBound(const Problem &problem) {
  double bound = 0;
  for (const Problem::MemoryPoint &point : problem.memory) {
    double bytes = point.constant;
    for (const auto &[v, perStrategy] : point.terms) {
      double least = std::numeric_limits<double>::infinity();
      for (size_t s = 0; s < perStrategy.size(); ++s)
        if (!std::isinf(problem.cost[v][s]))
          least = std::min(least, perStrategy[s]);
      if (std::isfinite(least))
        bytes += least;
    }
    bound = std::max(bound, bytes);
  }
  return bound;
}

SolveResult pmlir::sharding::autoshard::solveWithCbc(const Problem &problem,
                                                     double timeLimitSeconds, int64_t nodeLimit) {
  CbcProgram program(problem, /*minimizeMemory=*/false);
  return program.run(problem, timeLimitSeconds, nodeLimit, /*minimizeMemory=*/false);
}

SolveResult pmlir::sharding::autoshard::solveExhaustively(const Problem &problem,
                                                          int64_t maxNodes) {
  auto closed = edgesClosedBy(problem);
  // The memory points' partial sums only grow: a branch over the budget is cut.
  auto step = [&](size_t v, int s, std::vector<int> &choice) {
    double c = problem.cost[v][s];
    for (const Problem::Edge *e : closed[v])
      c += edgeCost(*e, choice);
    return c;
  };
  auto fits = [&](const std::vector<int> &choice) {
    return peakMemory(problem, choice) <= problem.memoryBudget;
  };
  return branchAndBound(
      problem, maxNodes, step, [](double a, double b) { return a + b; }, fits);
}

SolveResult pmlir::sharding::autoshard::solve(const Problem &problem, Solver solver,
                                              double timeLimitSeconds, int64_t nodeLimit) {
  return solver == Solver::Cbc ? solveWithCbc(problem, timeLimitSeconds, nodeLimit)
                               : solveExhaustively(problem);
}

SolveResult pmlir::sharding::autoshard::minimizePeakMemory(const Problem &problem, Solver solver,
                                                           double timeLimitSeconds,
                                                           int64_t nodeLimit) {
  if (solver == Solver::Cbc) {
    CbcProgram program(problem, /*minimizeMemory=*/true);
    return program.run(problem, timeLimitSeconds, nodeLimit, /*minimizeMemory=*/true);
  }
  auto closed = edgesClosedBy(problem);
  // The cost is the peak of the points' partial sums, which only grows.
  auto step = [&](size_t v, int s, std::vector<int> &choice) {
    if (std::isinf(problem.cost[v][s]))
      return kForbidden;
    for (const Problem::Edge *e : closed[v])
      if (std::isinf(edgeCost(*e, choice)))
        return kForbidden;
    double peak = 0;
    for (const Problem::MemoryPoint &point : problem.memory) {
      double bytes = point.constant;
      for (const auto &[u, perStrategy] : point.terms)
        if (static_cast<size_t>(u) <= v)
          bytes += perStrategy[choice[u]];
      peak = std::max(peak, bytes);
    }
    return peak;
  };
  return branchAndBound(
      problem, 20'000'000, step, [](double, double b) { return b; },
      [](const std::vector<int> &) { return true; });
}
