//===- Planner.cpp - Whole parallel plans: the inter-op search ------------===//
//
// Part of pmlir.
//
// The program the planner prices is the one pmlir-run builds (the
// gradient function of the entry cut into stages, its training step),
// cut into one stage per layer: each layer's forward and backward are then
// fragments whose ops the intra-op plan prices, and any stage boundary the
// dynamic program chooses is one of the cut's transfers.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Planning/Planner.h"

#include "pmlir/Compiler/CompilePipeline.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Pipelining/Pipelining.h"
#include "pmlir/Sharding/Collectives.h"
#include "pmlir/Sharding/Reshard.h"
#include "pmlir/Sharding/Transforms/Passes.h"
#include "pmlir/Support/TypeBytes.h"
#include "pmlir/Training/Autodiff.h"
#include "pmlir/Training/Optimizer.h"
#include "pmlir/Training/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <cmath>
#include <numeric>
#include <set>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::planning;
using namespace pmlir::sharding;

std::string Plan::meshSpec() const {
  std::string spec;
  for (auto [name, size] : {std::pair<const char *, int64_t>{"pp", pp}, {"dp", dp}, {"tp", tp}})
    if (size > 1)
      spec += (spec.empty() ? "" : ",") + std::string(name) + "=" + std::to_string(size);
  return spec.empty() ? "dp=1" : spec;
}

std::string Plan::scheduleName() const {
  return schedule ? pipe::stringifyScheduleKind(*schedule).str() : "-";
}

namespace {

double commSecondsOf(const CommPerAxes &comm) {
  double s = 0;
  for (const auto &[axes, c] : comm)
    s += c.seconds;
  return s;
}

} // namespace

double Plan::commSeconds() const { return commSecondsOf(comm()); }

namespace {

void addComm(CommPerAxes &to, const CommPerAxes &from, double times = 1) {
  for (const auto &[axes, c] : from) {
    Comm &t = to[axes];
    t.seconds += times * c.seconds;
    t.bytes += static_cast<int64_t>(times * static_cast<double>(c.bytes));
    t.wireBytes += static_cast<int64_t>(times * static_cast<double>(c.wireBytes));
    t.collectives += static_cast<int64_t>(times * static_cast<double>(c.collectives));
  }
}

/// What a part of the program costs one device.
struct Cost {
  double compute = 0;
  CommPerAxes comm;
  double seconds() const { return compute + commSecondsOf(comm); }
  void add(const sharding::autoshard::OpCost &c) {
    compute += c.computeSeconds;
    addComm(comm, c.comm);
  }
  void add(const Cost &c, double times = 1) {
    compute += times * c.compute;
    addComm(comm, c.comm, times);
  }
};

/// Per layer (the cut's stage), what its forward, its backward and the
/// step's work outside both (the optimizer's) cost.
struct LayerCosts {
  std::vector<Cost> forward, backward, step;
};

/// The stage of the layer cut `op` belongs to: its fragment's, or for an op
/// outside the fragments (the optimizer's), that of the first fragment its
/// operands come from; -1 for ops of the arguments alone.
class StageOf {
public:
  int64_t operator()(Operation *op) {
    if (auto fragment = op->getParentOfType<pipe::FragmentOp>())
      return static_cast<int64_t>(fragment.getStage());
    if (auto it = memo.find(op); it != memo.end())
      return it->second;
    memo[op] = -1;
    int64_t stage = -1;
    for (Value v : op->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (!def)
        continue;
      if (auto fragment = dyn_cast<pipe::FragmentOp>(def))
        stage = static_cast<int64_t>(fragment.getStage());
      else if (auto transfer = dyn_cast<pipe::TransferOp>(def))
        stage = static_cast<int64_t>(transfer.getTo());
      else
        stage = (*this)(def);
      if (stage >= 0)
        break;
    }
    return memo[op] = stage;
  }

private:
  DenseMap<Operation *, int64_t> memo;
};

/// Cuts `cost` (per layer) into `groups` contiguous groups of the least
/// largest sum; returns the first layer of groups 1, 2, ...
std::vector<int64_t> balancedSplit(const std::vector<double> &cost, int64_t groups) {
  const int64_t n = static_cast<int64_t>(cost.size());
  std::vector<double> prefix(n + 1, 0);
  for (int64_t i = 0; i < n; ++i)
    prefix[i + 1] = prefix[i] + cost[i];
  const double inf = std::numeric_limits<double>::infinity();
  // best[g][i]: the least largest sum of the first i layers in g groups.
  std::vector<std::vector<double>> best(groups + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int64_t>> from(groups + 1, std::vector<int64_t>(n + 1, 0));
  best[0][0] = 0;
  for (int64_t g = 1; g <= groups; ++g)
    for (int64_t i = g; i <= n; ++i)
      for (int64_t j = g - 1; j < i; ++j) {
        double largest = std::max(best[g - 1][j], prefix[i] - prefix[j]);
        // Ties go to the earliest cut, so that equal layers split evenly
        // and the same way every time.
        if (largest < best[g][i] * (1 - 1e-12)) {
          best[g][i] = largest;
          from[g][i] = j;
        }
      }
  std::vector<int64_t> starts;
  for (int64_t g = groups, i = n; g > 1; --g) {
    i = from[g][i];
    starts.push_back(i);
  }
  std::reverse(starts.begin(), starts.end());
  return starts;
}

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d <= n / d; ++d)
    if (n % d == 0) {
      small.push_back(d);
      if (d != n / d)
        large.push_back(n / d);
    }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

/// The step of `plan`: its pipeline rank that ends last, that rank's
/// compute and communication, and the rest, its bubble.
void settleStep(Plan &plan) {
  plan.stepSeconds = 0;
  plan.criticalRank = 0;
  for (auto [r, end] : llvm::enumerate(plan.rankSeconds))
    if (end > plan.stepSeconds) {
      plan.stepSeconds = end;
      plan.criticalRank = static_cast<int64_t>(r);
    }
  plan.computeSeconds = plan.rankComputeSeconds[plan.criticalRank];
  double unhidden = plan.stepSeconds - plan.computeSeconds - plan.commSeconds();
  plan.bubbleSeconds = std::max(0.0, unhidden);
  // Not the rounding of a sum that meets the step. Settled again after a
  // compile, where the critical rank may change.
  plan.overlappedSeconds = -unhidden > 1e-9 * plan.stepSeconds ? -unhidden : 0;
}

/// The peak memory a device the auto-sharding report at `path` predicts
/// for @`function`; nullopt, with why in `error`, where the report cannot
/// be read or holds none.
std::optional<double> predictedPeakBytes(llvm::StringRef path, llvm::StringRef function,
                                         std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> text = llvm::MemoryBuffer::getFile(path);
  if (!text) {
    error = "cannot read the auto-sharding report " + path.str() + ": " + text.getError().message();
    return std::nullopt;
  }
  llvm::Expected<llvm::json::Value> report = llvm::json::parse((*text)->getBuffer());
  if (!report) {
    error = "the auto-sharding report " + path.str() +
            " is no JSON: " + llvm::toString(report.takeError());
    return std::nullopt;
  }
  const llvm::json::Object *root = report->getAsObject();
  const llvm::json::Object *functions = root ? root->getObject("functions") : nullptr;
  const llvm::json::Object *entry = functions ? functions->getObject(function) : nullptr;
  std::optional<double> peak = entry ? entry->getNumber("peak_memory_bytes") : std::nullopt;
  if (!peak)
    error = "the auto-sharding report " + path.str() + " holds no peak_memory_bytes of @" +
            function.str();
  return peak;
}

/// The mesh of a plan's layout, and its attribute.
std::optional<std::pair<pmlir::Mesh, MeshAttr>> meshOf(MLIRContext *context, const Plan &plan,
                                                       std::string &error) {
  std::optional<pmlir::Mesh> mesh = pmlir::Mesh::parse(plan.meshSpec(), "", error);
  if (!mesh)
    return std::nullopt;
  return std::make_pair(*mesh, MeshAttr::get(context, *mesh));
}

struct Planner {
  const PlannerOptions &options;
  MLIRContext *context;
  /// The model, and the program priced: its step cut into one stage a layer.
  ModuleOp source;
  func::FuncOp program;
  int64_t layers = 0;
  PlannerResult result;
  /// Why each schedule asked for has priced no plan yet (erased once one
  /// is priced).
  std::map<pipe::ScheduleKind, std::string> unpriced;
  std::set<pipe::ScheduleKind> explained;

  /// Compiles `plan` as pmlir-run runs it: the program built (the step over
  /// the plan's microbatches, cut into its stages and scheduled), auto-
  /// sharded on the plan's mesh, propagated and partitioned, and each
  /// pipeline rank's program cut out. Its collectives per pipeline rank
  /// (what --comm-report counts on the rank's first device) replace the
  /// estimate, and the step is priced again: each pipeline rank ends later
  /// or earlier by the difference in its communication time.
  LogicalResult compile(Plan &plan, std::string &why) {
    std::optional<pmlir::Mesh> mesh = pmlir::Mesh::parse(plan.meshSpec(), "", why);
    if (!mesh)
      return failure();
    CompilePipelineOptions phases;
    phases.entry = options.entry;
    phases.program = options.train ? ProgramKind::Train : ProgramKind::Forward;
    if (plan.schedule) {
      phases.pipelineSchedule = *plan.schedule;
      phases.microbatches = plan.microbatches;
      phases.virtualStages = plan.virtualStages;
      phases.pipelineSplit = llvm::ArrayRef<int64_t>(plan.splitPoints);
    } else if (options.train) {
      phases.gradAccum = plan.microbatches;
    }
    phases.mesh = plan.meshSpec();
    phases.recipe = CompilePipelineOptions::Recipe::Auto;
    phases.topology = options.topologySpec;
    if (std::isfinite(options.memoryBudget))
      phases.memoryBudget = std::to_string(static_cast<int64_t>(options.memoryBudget));
    // The auto-sharder's prediction of the program compiled: its memory is
    // what the command's budget holds it to.
    llvm::SmallString<128> report;
    if (std::error_code ec =
            llvm::sys::fs::createTemporaryFile("pmlir-plan-auto-sharding", "json", report)) {
      why = "cannot create a temporary file for the auto-sharding report: " + ec.message();
      return failure();
    }
    llvm::scope_exit removeReport([&] { llvm::sys::fs::remove(report); });
    phases.autoShardingReport = report.str().str();
    std::string diagnostics;
    ScopedDiagnosticHandler capture(context, [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error)
        diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
      return success();
    });
    // Runs the phases after `from` up to `to` of the plan's job on `module`.
    auto runPhases = [&](CompilePhase from, CompilePhase to, ModuleOp module) {
      phases.from = from;
      phases.to = to;
      PassManager pm(context);
      if (failed(buildCompilePipeline(pm, phases, why)))
        return failure();
      if (failed(pm.run(module))) {
        why = diagnostics.empty() ? "the sharding pipeline failed" : diagnostics;
        return failure();
      }
      return success();
    };
    OwningOpRef<ModuleOp> copy = source.clone();
    if (failed(runPhases(CompilePhase::Global, CompilePhase::Sharded, *copy)))
      return failure();
    std::optional<double> peakBytes = predictedPeakBytes(report, compiledEntryName(phases), why);
    if (!peakBytes)
      return failure();
    // The report is read and its file goes on return: the phases below
    // (cutting out the pipeline ranks) are not to name it.
    phases.autoShardingReport = "";
    sharding::CostModel model = options.topology.costModel(*mesh);
    std::vector<CommPerAxes> realised(plan.pp);
    for (int64_t r = 0; r < plan.pp; ++r) {
      OwningOpRef<ModuleOp> rankProgram;
      ModuleOp counted = *copy;
      if (plan.schedule) {
        rankProgram = copy->clone();
        phases.pipelineRank = r;
        if (failed(runPhases(CompilePhase::Sharded, CompilePhase::Rank, *rankProgram))) {
          why = "cutting out pipeline rank " + std::to_string(r) + " failed: " + why;
          return failure();
        }
        counted = *rankProgram;
      }
      FailureOr<std::vector<sharding::Collective>> collectives =
          sharding::collectivesOf(counted, model);
      if (failed(collectives)) {
        why = "the partitioned program's grid does not fit its mesh";
        return failure();
      }
      for (const auto &[axes, total] : sharding::totalsPerAxes(*collectives))
        realised[r][axes] = Comm{total.seconds, total.bytes, total.wireBytes, total.count};
    }
    for (int64_t r = 0; r < plan.pp; ++r)
      plan.rankSeconds[r] += commSecondsOf(realised[r]) - commSecondsOf(plan.rankComm[r]);
    plan.estimatedRankComm = std::move(plan.rankComm);
    plan.rankComm = std::move(realised);
    plan.estimatedMemoryBytes = plan.memoryBytes;
    plan.memoryBytes = *peakBytes;
    plan.compiled = true;
    settleStep(plan);
    return success();
  }

  /// Compiles the best options.compile plans that fit (pmlir-plan prints
  /// them), and orders the plans again.
  void compileBest() {
    int64_t toCompile = 0;
    for (const Plan &plan : result.plans) {
      if (toCompile == options.compile || !plan.fits)
        break;
      ++toCompile;
    }
    for (int64_t i = 0; i < toCompile; ++i) {
      Plan &plan = result.plans[i];
      tell(SearchProgress::Phase::Compiling, i + 1, toCompile, plan);
      std::string why;
      if (failed(compile(plan, why))) {
        plan.fits = false;
        plan.note = "compiling it failed: " + why;
      }
    }
    sortPlans();
  }

  std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();

  void tell(SearchProgress::Phase phase, int64_t current, int64_t total, const Plan &layout) {
    if (!options.progress)
      return;
    SearchProgress progress;
    progress.phase = phase;
    progress.current = current;
    progress.total = total;
    progress.subject = layout.meshSpec();
    if (phase == SearchProgress::Phase::Compiling)
      progress.subject += " " + layout.scheduleName();
    progress.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    options.progress(progress);
  }

  void sortPlans() {
    std::stable_sort(result.plans.begin(), result.plans.end(), [](const Plan &a, const Plan &b) {
      if (a.fits != b.fits)
        return a.fits;
      if (a.compiled != b.compiled)
        return a.compiled;
      return a.stepSeconds < b.stepSeconds;
    });
  }

  /// Per pipeline rank of a schedule, the stages it holds.
  static std::vector<std::vector<int64_t>> stagesOfRanks(const pipe::Schedule &schedule) {
    std::vector<std::vector<int64_t>> out(schedule.ranks);
    for (int64_t s = 0; s < schedule.stages; ++s)
      out[schedule.rankOf(s)].push_back(s);
    return out;
  }

  /// A schedule as the plans of every layout with its pp run it, built
  /// once: its transfers explicit and the memory shares it keeps. Without
  /// a schedule, why it cannot be built.
  struct PipelineSchedule {
    std::optional<pipe::Schedule> schedule;
    pipe::MemoryShares shares;
    std::string error;
  };
  std::map<std::tuple<pipe::ScheduleKind, int64_t, int64_t>, PipelineSchedule> schedules;

  const PipelineSchedule &scheduleOf(pipe::ScheduleKind kind, int64_t pp, int64_t v) {
    auto [it, inserted] = schedules.try_emplace({kind, pp, v});
    PipelineSchedule &built = it->second;
    if (!inserted)
      return built;
    built.schedule = pipe::buildSchedule(kind, pp, v, options.microbatches, built.error);
    if (!built.schedule)
      return built;
    if (!options.train)
      built.schedule = built.schedule->forwardOnly();
    built.schedule->placeStages();
    built.schedule = built.schedule->withTransfers();
    built.shares = pipe::memoryShares(*built.schedule);
    return built;
  }

  /// The layers' costs under an intra-op plan.
  LayerCosts layerCosts(const sharding::autoshard::Plan &plan) {
    LayerCosts costs;
    costs.forward.resize(layers);
    costs.backward.resize(layers);
    costs.step.resize(layers);
    StageOf stageOf;
    // In program order: the sums are then the same on every run (the map's
    // order is its pointers').
    program.walk([&](Operation *op) {
      auto it = plan.opCosts.find(op);
      if (it == plan.opCosts.end())
        return;
      const sharding::autoshard::OpCost &cost = it->second;
      int64_t stage = std::max<int64_t>(0, stageOf(op));
      auto fragment = op->getParentOfType<pipe::FragmentOp>();
      if (!fragment)
        costs.step[stage].add(cost);
      else if (fragment.getKind() == pipe::ActionKind::Forward)
        costs.forward[stage].add(cost);
      else
        costs.backward[stage].add(cost);
    });
    return costs;
  }

  /// The plans of one submesh and its intra-op plan, for each schedule.
  void addPlans(int64_t pp, int64_t dp, int64_t tp, MeshAttr mesh, const CostModel &model,
                const sharding::autoshard::Plan &intra) {
    LayerCosts costs = layerCosts(intra);
    std::vector<double> perLayer(layers);
    for (int64_t l = 0; l < layers; ++l)
      perLayer[l] = costs.forward[l].seconds() + costs.backward[l].seconds();
    const int64_t M = options.microbatches;
    // The bytes a transfer moves: the local block of what it carries.
    auto localBytes = [&](Value v) {
      v = tfm::yieldedValue(v);
      auto type = cast<RankedTensorType>(v.getType());
      auto it = intra.shardings.find(v);
      RankedTensorType local =
          it == intra.shardings.end() ? type : localType(mesh, type, it->second);
      return local.getNumElements() * elementBytes(type.getElementType());
    };

    auto kinds = options.schedules;
    if (pp == 1)
      kinds = {pipe::ScheduleKind::GPipe}; // stands for "no pipeline"
    for (pipe::ScheduleKind kind : kinds) {
      int64_t v = kind == pipe::ScheduleKind::Interleaved1F1B ? 2
                  : kind == pipe::ScheduleKind::ZeroBubbleV   ? 2
                                                              : 1;
      if (!options.train && pipe::splitsBackward(kind))
        continue; // forwards only: as 1F1B's
      // Why `kind` priced nothing at the smallest pp that could not take
      // it, kept where no layout prices it.
      auto skip = [&](const std::string &why) {
        if (unpriced.count(kind) && explained.insert(kind).second)
          unpriced[kind] = why;
      };
      if (pp * v > layers) {
        skip(llvm::formatv("it runs {0} stages on each pipeline rank: pp = {1} needs {2} "
                           "layers, and the model has {3}",
                           v, pp, pp * v, layers)
                 .str());
        continue;
      }
      const int64_t stages = pp * v;
      std::vector<int64_t> starts = balancedSplit(perLayer, stages);
      std::vector<int64_t> stageOfLayer(layers, 0);
      for (int64_t l = 0, s = 0; l < layers; ++l) {
        while (s + 1 < stages && l >= starts[s])
          ++s;
        stageOfLayer[l] = s;
      }
      const PipelineSchedule *pipelined = nullptr;
      if (pp > 1) {
        pipelined = &scheduleOf(kind, pp, v);
        if (!pipelined->schedule) {
          skip("at pp = " + std::to_string(pp) + ": " + pipelined->error);
          continue;
        }
        unpriced.erase(kind);
      }
      const pipe::Schedule *schedule = pipelined ? &*pipelined->schedule : nullptr;
      std::vector<Cost> forward(stages), backward(stages), step(stages);
      for (int64_t l = 0; l < layers; ++l) {
        forward[stageOfLayer[l]].add(costs.forward[l]);
        backward[stageOfLayer[l]].add(costs.backward[l]);
        step[stageOfLayer[l]].add(costs.step[l]);
      }
      std::vector<int64_t> rankOfStage(stages);
      for (int64_t s = 0; s < stages; ++s)
        rankOfStage[s] = schedule ? schedule->rankOf(s) : 0;
      // Stage-to-stage traffic per microbatch: each crossing transfer is a
      // send on one rank and a receive on another; a stage sum across
      // ranks, an all-reduce over pp on each.
      std::vector<CommPerAxes> perMicrobatch(pp), perStep(pp);
      // The global gradient norm a training step returns sums its stages'
      // squares over pp once a step.
      if (options.train && pp > 1)
        for (int64_t r = 0; r < pp; ++r) {
          Comm &norm = perStep[r]["pp"];
          CollectiveCost c = model.cost(CollectiveKind::AllReduce, 4, {"pp"}, pp);
          norm.seconds += c.seconds;
          norm.bytes += 4;
          norm.wireBytes += c.wireBytes;
          ++norm.collectives;
        }
      double transferSeconds = 0;
      std::map<std::pair<int64_t, int64_t>, double> boundarySeconds;
      program.walk([&](Operation *op) {
        if (auto transfer = dyn_cast<pipe::TransferOp>(op)) {
          int64_t from = stageOfLayer[transfer.getFrom()], to = stageOfLayer[transfer.getTo()];
          int64_t rf = rankOfStage[from], rt = rankOfStage[to];
          if (rf == rt)
            return;
          int64_t bytes = localBytes(transfer.getInput());
          CollectiveCost c = model.cost(CollectiveKind::Send, bytes, {"pp"}, 2);
          Comm &send = perMicrobatch[rf]["pp"];
          send.seconds += c.seconds;
          send.bytes += bytes;
          send.wireBytes += c.wireBytes;
          ++send.collectives;
          Comm &recv = perMicrobatch[rt]["pp"];
          recv.bytes += bytes;
          ++recv.collectives;
          boundarySeconds[{from, to}] += c.seconds;
        } else if (auto sum = dyn_cast<pipe::StageSumOp>(op)) {
          std::set<int64_t> ranks;
          for (int64_t s : sum.getStages())
            ranks.insert(rankOfStage[stageOfLayer[s]]);
          if (ranks.size() < 2)
            return;
          int64_t bytes = localBytes(sum.getResult());
          CollectiveCost c = model.cost(CollectiveKind::AllReduce, bytes, {"pp"}, pp);
          // Once a step: the sums of a training step add up the gradients
          // and losses of all its microbatches.
          for (int64_t r : ranks) {
            Comm &all = perStep[r]["pp"];
            all.seconds += c.seconds;
            all.bytes += bytes;
            all.wireBytes += c.wireBytes;
            ++all.collectives;
          }
        }
      });
      for (const auto &[edge, seconds] : boundarySeconds)
        transferSeconds = std::max(transferSeconds, seconds);

      Plan plan;
      plan.pp = pp;
      plan.dp = dp;
      plan.tp = tp;
      plan.virtualStages = v;
      plan.microbatches = M;
      if (pp > 1) {
        plan.schedule = kind;
        plan.splitPoints = starts;
      }
      plan.stats = intra.stats;
      plan.rankComm.assign(pp, {});
      std::vector<double> stepOfRank(pp, 0), endOfRank(pp, 0);
      std::vector<Cost> workOfRank(pp);
      for (int64_t s = 0; s < stages; ++s) {
        int64_t r = rankOfStage[s];
        workOfRank[r].add(forward[s], static_cast<double>(M));
        workOfRank[r].add(backward[s], static_cast<double>(M));
        workOfRank[r].add(step[s]);
        stepOfRank[r] += step[s].seconds();
      }
      for (int64_t r = 0; r < pp; ++r) {
        addComm(workOfRank[r].comm, perMicrobatch[r], static_cast<double>(M));
        addComm(workOfRank[r].comm, perStep[r]);
        plan.rankComm[r] = workOfRank[r].comm;
        // The once-a-step sums over pp (the gradient norm, stage sums) run
        // after the pipeline drains, beside the optimizer: nothing hides
        // them.
        stepOfRank[r] += commSecondsOf(perStep[r]);
      }
      pipe::MemoryShares shares;
      if (schedule) {
        pipe::ActionCosts actionCosts;
        for (int64_t s = 0; s < stages; ++s) {
          double b = backward[s].seconds();
          actionCosts.stages.push_back({forward[s].seconds(), b / 2, b / 2});
        }
        actionCosts.transfer = transferSeconds;
        pipe::Simulation sim = pipe::simulate(*schedule, actionCosts, /*withTimeline=*/false);
        // The generators' schedules do not deadlock (ScheduleTest); were
        // one to, its plan is not priced rather than priced on a partial run.
        if (sim.deadlocked) {
          skip("at pp = " + std::to_string(pp) + ": " + sim.deadlock);
          continue;
        }
        endOfRank = sim.rankEnd;
        shares = pipelined->shares;
      } else {
        // Without a pipeline the microbatches run one after another.
        endOfRank[0] =
            static_cast<double>(M) * std::accumulate(perLayer.begin(), perLayer.end(), 0.0);
      }
      for (int64_t r = 0; r < pp; ++r) {
        plan.rankSeconds.push_back(endOfRank[r] + stepOfRank[r]);
        plan.rankComputeSeconds.push_back(workOfRank[r].compute);
      }
      settleStep(plan);
      plan.memoryBytes = shares.state * intra.prediction.argumentBytes +
                         shares.activations * intra.prediction.valueBytes;
      plan.fits = plan.memoryBytes <= options.memoryBudget;
      if (!plan.fits)
        plan.note = "needs " + std::to_string(static_cast<int64_t>(plan.memoryBytes)) + " bytes";
      result.plans.push_back(std::move(plan));
    }
  }

  std::optional<PlannerResult> run(std::string &error) {
    start = std::chrono::steady_clock::now();
    int64_t maxTp =
        options.maxTensorParallel > 0 ? options.maxTensorParallel : options.topology.devicesPerNode;
    int64_t maxPp = options.maxPipeline > 0 ? std::min(options.maxPipeline, layers) : layers;
    // A forward runs its microbatches only through a pipeline's stages:
    // without one, pmlir-run runs the model's one batch, so a plan without
    // pp would price a job no command runs.
    bool needsPipeline = !options.train && options.microbatches > 1;
    for (pipe::ScheduleKind kind : options.schedules)
      unpriced[kind] =
          !options.train && pipe::splitsBackward(kind)
              ? "it splits the backward, and a forward has none (plan a training step)"
              : "no layout of " + std::to_string(options.devices) +
                    " devices with a pp axis was priced (pp divides the devices, is at most " +
                    std::to_string(maxPp) +
                    " here, and needs an intra-op plan that fits; --max-pp and the model's "
                    "layers bound it)";
    // The layouts searched, each solved once.
    std::vector<std::pair<int64_t, int64_t>> layouts;
    for (int64_t pp : divisors(options.devices)) {
      if (pp > maxPp || (pp == 1 && needsPipeline))
        continue;
      for (int64_t tp : divisors(options.devices / pp))
        if (tp <= maxTp)
          layouts.emplace_back(pp, tp);
    }
    for (auto [index, layout] : llvm::enumerate(layouts)) {
      auto [pp, tp] = layout;
      // The layouts come by pp: the schedules of a smaller pp serve no
      // later layout (each holds pp x microbatches actions).
      if (index > 0 && layouts[index - 1].first != pp)
        schedules.clear();
      int64_t dp = options.devices / pp / tp;
      Plan shape;
      shape.pp = pp;
      shape.dp = dp;
      shape.tp = tp;
      tell(SearchProgress::Phase::Solving, static_cast<int64_t>(index) + 1,
           static_cast<int64_t>(layouts.size()), shape);
      auto mesh = meshOf(context, shape, error);
      if (!mesh)
        return std::nullopt;
      MeshAttr meshAttr = mesh->second;
      sharding::autoshard::Options intra;
      intra.model = options.topology.costModel(mesh->first);
      intra.memoryBudget = options.memoryBudget;
      intra.timeLimitSeconds = options.timeLimitSeconds;
      intra.nodeLimit = options.searchNodes;
      intra.excludedAxes = {"pp"};
      // A pipeline rank's share of the memory, as 1F1B keeps it (the
      // other schedules' are checked against the budget after).
      if (pp > 1)
        if (const PipelineSchedule &oneFOneB = scheduleOf(pipe::ScheduleKind::OneFOneB, pp, 1);
            oneFOneB.schedule) {
          intra.argumentShare = oneFOneB.shares.state;
          intra.valueShare = oneFOneB.shares.activations;
        }
      sharding::autoshard::AutoSharder sharder(program, meshAttr, intra);
      std::string why;
      std::optional<sharding::autoshard::Plan> plan = sharder.solve(why);
      ++result.solves;
      if (!plan) {
        shape.fits = false;
        shape.note = why;
        shape.stats = sharder.stats();
        result.plans.push_back(std::move(shape));
        continue;
      }
      addPlans(pp, dp, tp, meshAttr, intra.model, *plan);
    }
    if (needsPipeline && result.plans.empty()) {
      error = std::to_string(options.microbatches) +
              " microbatches of a forward run through pipeline stages, and no layout of " +
              std::to_string(options.devices) + (options.devices == 1 ? " device" : " devices") +
              " has a pp axis (pp is at most " + std::to_string(maxPp) +
              " here: --max-pp and the model's layers bound it): plan a forward with 1 "
              "microbatch, or a training step";
      return std::nullopt;
    }
    for (pipe::ScheduleKind kind : options.schedules)
      if (auto it = unpriced.find(kind); it != unpriced.end())
        result.unpricedSchedules.emplace_back(kind, it->second);
    sortPlans();
    compileBest();
    result.layers = layers;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return std::move(result);
  }
};

} // namespace

std::optional<PlannerResult>
pmlir::planning::planModel(ModuleOp module, const PlannerOptions &options, std::string &error) {
  MLIRContext *context = module.getContext();
  if (options.devices < 1 || options.devices > kMaxDevices) {
    error = "devices must be from 1 to " + std::to_string(kMaxDevices) +
            " (more than any cluster holds), not " + std::to_string(options.devices);
    return std::nullopt;
  }
  if (options.microbatches < 1 || options.microbatches > kMaxMicrobatches) {
    error = "microbatches must be from 1 to " + std::to_string(kMaxMicrobatches) +
            " (each plan's schedule is simulated action by action), not " +
            std::to_string(options.microbatches);
    return std::nullopt;
  }
  auto forward = module.lookupSymbol<func::FuncOp>(options.entry);
  if (!forward || forward.isExternal()) {
    error = "the model has no function @" + options.entry + " to plan";
    return std::nullopt;
  }
  int64_t layers = 0;
  for (Operation &op : forward.getBody().front())
    if (isa<tfm::LayerOp>(op))
      ++layers;
  if (layers == 0) {
    error = "@" + options.entry + " has no tfm.layer ops: the planner cuts stages at layers";
    return std::nullopt;
  }
  // What the engines below create.
  context->loadDialect<tfm::TfmDialect, pipe::PipeDialect, arith::ArithDialect,
                       tensor::TensorDialect>();
  // The program, cut into one stage per layer, in a module of its own.
  OwningOpRef<ModuleOp> copy = module.clone();
  auto entry = copy->lookupSymbol<func::FuncOp>(options.entry);
  std::string diagnostics;
  ScopedDiagnosticHandler capture(context, [&](Diagnostic &d) {
    if (d.getSeverity() == DiagnosticSeverity::Error)
      diagnostics += (diagnostics.empty() ? "" : "; ") + d.str();
    return success();
  });
  pipeline::StagePartitionOptions cut;
  cut.stages = layers;
  for (int64_t l = 1; l < layers; ++l)
    cut.splitPoints.push_back(l);
  func::FuncOp program = entry;
  if (options.train) {
    training::AutodiffOptions autodiff;
    autodiff.entry = options.entry;
    autodiff.name = training::gradientName(options.entry);
    FailureOr<func::FuncOp> grad = training::buildGradientFunction(entry, autodiff);
    if (failed(grad) || failed(pipeline::partitionIntoStages(*grad, cut))) {
      error = "differentiating @" + options.entry + " failed: " + diagnostics;
      return std::nullopt;
    }
    training::OptimizerOptions step;
    step.entry = autodiff.name;
    step.name = training::kTrainStepName.str();
    FailureOr<func::FuncOp> trainStep = training::buildTrainStep(*grad, step);
    if (failed(trainStep)) {
      error = "building a training step of @" + options.entry + " failed: " + diagnostics;
      return std::nullopt;
    }
    program = *trainStep;
  } else if (failed(pipeline::partitionIntoStages(entry, cut))) {
    error = "cutting @" + options.entry + " into layers failed: " + diagnostics;
    return std::nullopt;
  }
  Planner planner{options, context, module, program, layers, {}};
  return planner.run(error);
}
