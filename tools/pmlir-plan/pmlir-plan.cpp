//===- pmlir-plan.cpp - The best parallel plans of a model ----------------===//
//
// Part of pmlir.
//
//   pmlir-plan MODEL.mlir --devices N [--topology cpu|h100|FILE.json]
//              [--memory-budget B] [--train] [--microbatches M] [--top K]
//              [--schedules gpipe,1f1b,...] [--max-tp T] [--max-pp P]
//              [--time-limit S] [--search-nodes N] [--compile K]
//              [--profile cpu|FILE.json [--memory-cap B] [--predict K]
//               [--recompute none,selective,full]]
//              [--json PLANS.json]
//
// Searches every pp x dp x tp layout of N devices (pmlir/Planning/
// Planner.h), prints the best K as a table with each plan's predicted step
// time split into compute, communication per mesh axis and bubble, its
// memory per device and communication bytes (those of the program the
// printed command compiles), the arithmetic of the best one, and the
// pmlir-run command that runs each. With --profile, the best plans are then
// predicted as pmlir-run --predict predicts them, under each recomputation
// mode (pmlir/Planning/PlanPrediction.h): the fastest whose every rank
// stays under --memory-cap is the choice, printed with why it beat the
// runner-up.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Planning/PlanPrediction.h"
#include "pmlir/Planning/Planner.h"
#include "pmlir/Planning/StepTime.h"
#include "pmlir/Support/Bytes.h"
#include "pmlir/Support/OutputFile.h"
#include "pmlir/Support/ToolMain.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace pmlir;

namespace {

/// pmlir-plan's own options: --help lists these, not LLVM's.
llvm::cl::OptionCategory planOptions("pmlir-plan options");

llvm::cl::opt<std::string> modelPath(llvm::cl::Positional, llvm::cl::desc("MODEL.mlir"),
                                     llvm::cl::Required, llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t> devices("devices", llvm::cl::desc("devices to lay out"), llvm::cl::Required,
                               llvm::cl::cat(planOptions));
llvm::cl::opt<std::string>
    topologyFlag("topology",
                 llvm::cl::desc("a preset (cpu, h100, h200) or a JSON file (default: cpu)"),
                 llvm::cl::init("cpu"), llvm::cl::cat(planOptions));
llvm::cl::opt<std::string>
    memoryBudget("memory-budget",
                 llvm::cl::desc("bytes a device may hold, as 80GB (default: the topology's)"),
                 llvm::cl::cat(planOptions));
llvm::cl::opt<bool> train("train", llvm::cl::desc("plan the training step (default: the forward)"),
                          llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t>
    microbatches("microbatches",
                 llvm::cl::desc("microbatches of the model's batch per step (default 1)"),
                 llvm::cl::init(1), llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t> top("top", llvm::cl::desc("plans to print (default 5)"), llvm::cl::init(5),
                           llvm::cl::cat(planOptions));
llvm::cl::opt<std::string> schedules(
    "schedules",
    llvm::cl::desc("pipeline schedules to try (default: gpipe,1f1b,interleaved-1f1b,zb-h1)"),
    llvm::cl::init("gpipe,1f1b,interleaved-1f1b,zb-h1"), llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t> maxTp("max-tp", llvm::cl::desc("the largest tp (default: a node's devices)"),
                             llvm::cl::init(0), llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t> maxPp("max-pp", llvm::cl::desc("the largest pp (default: the layers)"),
                             llvm::cl::init(0), llvm::cl::cat(planOptions));
llvm::cl::opt<double> timeLimit("time-limit",
                                llvm::cl::desc("seconds each intra-op solve may take (default 10)"),
                                llvm::cl::init(10), llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t> searchNodes(
    "search-nodes",
    llvm::cl::desc("CBC's branch-and-bound nodes a layout's solve may explore (default 0: the "
                   "root's best solution; -1: prove each optimal)"),
    llvm::cl::init(0), llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t>
    compile("compile", llvm::cl::desc("plans to compile as pmlir-run would (default: --top)"),
            llvm::cl::init(0), llvm::cl::cat(planOptions));
llvm::cl::opt<std::string> entry("entry", llvm::cl::desc("the function to plan (default forward)"),
                                 llvm::cl::init("forward"), llvm::cl::cat(planOptions));
llvm::cl::opt<std::string> profile(
    "profile",
    llvm::cl::desc("predict the best plans as pmlir-run --predict does, on this device profile: "
                   "cpu (measured on this host, cached), h100 or h200 (the plans run with "
                   "--device gpu) or a JSON file of rates"),
    llvm::cl::cat(planOptions));
llvm::cl::opt<std::string> memoryCap(
    "memory-cap",
    llvm::cl::desc("with --profile: the most bytes a rank may hold (resident, or on a GPU its "
                   "device's), as 8GiB (default: the budget); also the search's budget where "
                   "--memory-budget is not given"),
    llvm::cl::cat(planOptions));
llvm::cl::opt<int64_t> predictCount(
    "predict", llvm::cl::desc("with --profile: the plans to predict, best first (default: --top)"),
    llvm::cl::init(0), llvm::cl::cat(planOptions));
llvm::cl::opt<std::string> recomputeModes(
    "recompute",
    llvm::cl::desc("with --profile and --train: the recomputation modes each plan is predicted "
                   "under (default: none,selective,full)"),
    llvm::cl::init(""), llvm::cl::cat(planOptions));
llvm::cl::opt<std::string> jsonPath("json", llvm::cl::desc("write every plan as JSON here"),
                                    llvm::cl::cat(planOptions));

int fail(const std::string &message) {
  llvm::WithColor::error(llvm::errs(), "pmlir-plan") << message << "\n";
  return 1;
}

/// Where the plans run: a GPU where --profile is a GPU's.
CompileTarget planDevice = CompileTarget::Cpu;

/// How the printed commands run a plan: as the budget and topology given.
planning::RunCommandOptions runCommandOptions(const std::string &budget) {
  planning::RunCommandOptions options;
  options.model = modelPath;
  options.train = train;
  options.topology = topologyFlag;
  options.memoryBudget = budget;
  options.device = planDevice;
  return options;
}

/// The budget the printed commands pass on ("" where none was given).
std::string commandBudget() { return !memoryBudget.empty() ? memoryBudget : memoryCap; }

/// The pmlir-run command that runs `plan`.
std::string runCommand(const planning::Plan &plan) {
  return planning::commandLine(planning::runArguments(plan, runCommandOptions(commandBudget())));
}

std::string commText(const planning::CommPerAxes &comm) {
  std::string text;
  for (const auto &[axes, c] : comm)
    if (c.collectives > 0)
      text += (text.empty() ? "" : ", ") + axes + " " + formatSeconds(c.seconds);
  return text.empty() ? "none" : text;
}

int64_t commBytes(const planning::CommPerAxes &comm) {
  int64_t bytes = 0;
  for (const auto &[axes, c] : comm)
    bytes += c.bytes;
  return bytes;
}

llvm::json::Object commJson(const planning::CommPerAxes &comm) {
  llvm::json::Object out;
  for (const auto &[axes, c] : comm)
    out[axes] = llvm::json::Object{{"seconds", c.seconds},
                                   {"bytes", c.bytes},
                                   {"wire_bytes_per_rank", c.wireBytes},
                                   {"collectives", c.collectives}};
  return out;
}

llvm::json::Object planJson(const planning::Plan &plan) {
  llvm::json::Array ranks, estimated;
  for (const planning::CommPerAxes &comm : plan.rankComm)
    ranks.push_back(commJson(comm));
  for (const planning::CommPerAxes &comm : plan.estimatedRankComm)
    estimated.push_back(commJson(comm));
  llvm::json::Array split;
  for (int64_t s : plan.splitPoints)
    split.push_back(s);
  return llvm::json::Object{
      {"mesh", plan.meshSpec()},
      {"pp", plan.pp},
      {"dp", plan.dp},
      {"tp", plan.tp},
      {"virtual_stages", plan.virtualStages},
      {"schedule", plan.scheduleName()},
      {"microbatches", plan.microbatches},
      {"split_points", std::move(split)},
      {"fits", plan.fits},
      {"note", plan.note},
      {"step_seconds", plan.stepSeconds},
      {"compute_seconds", plan.computeSeconds},
      {"bubble_seconds", plan.bubbleSeconds},
      {"overlapped_seconds", plan.overlappedSeconds},
      {"comm", commJson(plan.comm())},
      {"comm_per_pipeline_rank", std::move(ranks)},
      {"compiled", plan.compiled},
      {"estimated_comm_per_pipeline_rank", std::move(estimated)},
      {"memory_bytes", plan.memoryBytes},
      {"estimated_memory_bytes", plan.compiled ? llvm::json::Value(plan.estimatedMemoryBytes)
                                               : llvm::json::Value(plan.memoryBytes)},
      {"variables", plan.stats.variables},
      {"solve_seconds", plan.stats.solveSeconds},
      {"command", runCommand(plan)}};
}

/// A plan's memory a device: "~" marks the search's estimate of a plan not
/// compiled.
std::string memoryText(const planning::Plan &plan) {
  return (plan.compiled ? "" : "~") + formatBytes(plan.memoryBytes);
}

/// Why the search's best plan beat its runner-up: the step's parts that
/// differ, largest first.
std::string overRunnerUp(const planning::Plan &best, const planning::Plan &next) {
  std::vector<std::pair<std::string, double>> parts = {
      {"compute", best.computeSeconds - next.computeSeconds},
      {"bubble", best.bubbleSeconds - next.bubbleSeconds}};
  std::map<std::string, double> comm;
  for (const auto &[axes, c] : best.comm())
    comm[axes] += c.seconds;
  for (const auto &[axes, c] : next.comm())
    comm[axes] -= c.seconds;
  for (const auto &[axes, difference] : comm)
    parts.push_back({axes + " comm", difference});
  std::string text = llvm::formatv("step {0} against {1}", formatSeconds(best.stepSeconds),
                                   formatSeconds(next.stepSeconds))
                         .str();
  std::string differences = planning::differenceText(std::move(parts), 0.01 * next.stepSeconds);
  return differences.empty() ? text : text + ": " + differences;
}

llvm::json::Object predictedJson(const planning::PredictedPlan &p) {
  llvm::json::Array ranks;
  for (const planning::PredictedRank &r : p.ranks)
    ranks.push_back(llvm::json::Object{{"peak_bytes", r.peakBytes},
                                       {"step_seconds", r.stepSeconds},
                                       {"gemm_seconds", r.gemmSeconds},
                                       {"loop_seconds", r.loopSeconds},
                                       {"copy_seconds", r.copySeconds},
                                       {"communication_seconds", r.communicationSeconds},
                                       {"waiting_seconds", r.waitingSeconds}});
  return llvm::json::Object{{"mesh", p.plan.meshSpec()},
                            {"schedule", p.plan.scheduleName()},
                            {"virtual_stages", p.plan.virtualStages},
                            {"microbatches", p.plan.microbatches},
                            {"recompute", p.recomputeName()},
                            {"command", planning::commandLine(p.command)},
                            {"predicted", p.predicted},
                            {"error", p.error},
                            {"fits", p.fits},
                            {"peak_bytes", p.peakBytes},
                            {"step_seconds", p.stepSeconds},
                            {"tokens_per_second", p.tokensPerSecond},
                            {"mfu", p.mfu},
                            {"ranks", std::move(ranks)}};
}

/// The predicted plans, the choice and why it beat the runner-up.
void printPredictions(const std::vector<planning::PredictedPlan> &predicted,
                      const planning::PredictOptions &options) {
  std::string source;
  for (const planning::PredictedPlan &p : predicted)
    if (p.predicted) {
      source = p.profileName + ": " + p.profileSource;
      break;
    }
  llvm::outs() << "\npredicted by compiling every rank (pmlir-run --predict; profile "
               << (source.empty() ? options.profile : source) << "), cap "
               << (std::isfinite(options.memoryCap) ? formatBytes(options.memoryCap)
                                                    : std::string("none"))
               << " a rank:\n";
  llvm::outs() << llvm::formatv("{0,3} {1,-16} {2,-17} {3,3} {4,-10} {5,11} {6,11} {7,6} {8,11}  "
                                "{9}\n",
                                "#", "mesh", "schedule", "v", "recompute", "step", "tokens/s",
                                "MFU", "peak",
                                "slowest rank: GEMMs + loops + copies + comm + wait");
  for (auto [i, p] : llvm::enumerate(predicted)) {
    std::string head =
        llvm::formatv("{0,3} {1,-16} {2,-17} {3,3} {4,-10}", i + 1, p.plan.meshSpec(),
                      p.plan.scheduleName(), p.plan.virtualStages, p.recomputeName());
    if (!p.predicted) {
      llvm::outs() << head << " not predicted: " << p.error << "\n";
      continue;
    }
    const planning::PredictedRank &r = p.criticalRank();
    llvm::outs() << llvm::formatv(
        "{0} {1,11} {2,11:f0} {3,5:f1}% {4,11}  {5} + {6} + {7} + {8} + {9}{10}\n", head,
        formatSeconds(p.stepSeconds), p.tokensPerSecond, 100 * p.mfu, formatBytes(p.peakBytes),
        formatSeconds(r.gemmSeconds), formatSeconds(r.loopSeconds), formatSeconds(r.copySeconds),
        formatSeconds(r.communicationSeconds), formatSeconds(r.waitingSeconds),
        p.fits ? "" : " (over the cap)");
  }
  if (predicted.empty() || !predicted.front().fits) {
    llvm::outs() << "\nno predicted plan fits under the cap\n";
    return;
  }
  const planning::PredictedPlan &choice = predicted.front();
  llvm::outs() << "\nchoice: " << choice.plan.meshSpec() << ", " << choice.plan.scheduleName()
               << (choice.recompute ? ", recompute " + choice.recomputeName() : "") << ": step "
               << formatSeconds(choice.stepSeconds) << ", peak " << formatBytes(choice.peakBytes)
               << " on the heaviest rank\n";
  if (predicted.size() > 1 && predicted[1].fits) {
    const planning::PredictedPlan &next = predicted[1];
    double faster = (next.stepSeconds - choice.stepSeconds) / next.stepSeconds;
    // Plans the profile cannot tell apart (the same program on another
    // mesh's names) are a tie, kept in the search's order.
    std::string margin = faster < 5e-4 ? std::string("ties with")
                                       : llvm::formatv("{0:f1}% faster than", 100 * faster).str();
    llvm::outs() << llvm::formatv("  {0} {1}, {2}{3}: {4}\n", margin, next.plan.meshSpec(),
                                  next.plan.scheduleName(),
                                  next.recompute ? ", recompute " + next.recomputeName() : "",
                                  planning::whyFaster(choice, next));
  }
  llvm::outs() << "  run: " << planning::commandLine(choice.command) << "\n";
}

int planMain(int argc, char **argv) {
  llvm::cl::HideUnrelatedOptions(planOptions);
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "pmlir-plan: the best pp x dp x tp plans of a model on N devices\n");
  // --devices and --microbatches are checked by the planner itself.
  if (top < 1)
    return fail("--top must be at least 1, not " + std::to_string(top));
  // Left out, each has its default; given, it is a largest degree.
  for (const llvm::cl::opt<int64_t> *largest : {&maxTp, &maxPp})
    if (largest->getNumOccurrences() && *largest < 1)
      return fail("--" + largest->ArgStr.str() + " must be at least 1, not " +
                  std::to_string(*largest));
  if (!(timeLimit > 0) || std::isinf(timeLimit))
    return fail("--time-limit must be a positive finite number of seconds");
  if (searchNodes < -1)
    return fail("--search-nodes must be -1 (no limit) or at least 0, not " +
                std::to_string(searchNodes));
  // A count not given is --top's.
  if (compile.getNumOccurrences() && compile < 0)
    return fail("--compile must be at least 0, not " + std::to_string(compile));
  planning::PlannerOptions options;
  std::string error;
  std::optional<sharding::Topology> topology = sharding::Topology::load(topologyFlag, error);
  if (!topology)
    return fail(error);
  if (std::optional<std::string> unknown = topology->unknownAxis())
    return fail("--topology " + topologyFlag + ": " + *unknown);
  options.topology = *topology;
  options.topologySpec = topologyFlag;
  options.compile = compile.getNumOccurrences() ? compile : top;
  options.devices = devices;
  options.memoryBudget = topology->device.memoryBytes;
  planning::PredictOptions predicting;
  if (profile.empty()) {
    for (const llvm::cl::Option *flag : std::initializer_list<const llvm::cl::Option *>{
             &memoryCap, &predictCount, &recomputeModes})
      if (flag->getNumOccurrences() > 0)
        return fail("--" + flag->ArgStr.str() +
                    " sets how the best plans are predicted: it needs --profile");
  } else {
    predicting.profile = profile;
    // A file of rates is read now, not once per plan after the search.
    if (profile != "cpu") {
      std::optional<planning::DeviceProfile> rates = planning::DeviceProfile::load(profile, error);
      if (!rates)
        return fail(error);
      planDevice = rates->target;
    }
    predicting.plans = predictCount.getNumOccurrences() ? predictCount : top;
    if (predicting.plans < 1)
      return fail("--predict must be at least 1 plan, not " + std::to_string(predictCount));
    if (!memoryCap.empty()) {
      std::optional<double> bytes = parseBytes(memoryCap);
      if (!bytes)
        return fail("--memory-cap '" + memoryCap +
                    "' is not a positive byte count up to 4 EiB (as 8GiB, 800MB or 1e9)");
      predicting.memoryCap = *bytes;
      options.memoryBudget = *bytes;
    }
    if (recomputeModes.getNumOccurrences()) {
      if (!train)
        return fail("--recompute lists the modes a training step is predicted under: it needs "
                    "--train");
      predicting.recompute.clear();
      llvm::SmallVector<llvm::StringRef> names;
      llvm::StringRef(recomputeModes).split(names, ',');
      for (llvm::StringRef name : names) {
        std::optional<training::Recompute> mode = training::parseRecompute(name.trim());
        if (!mode)
          return fail("--recompute: unknown mode '" + name.trim().str() +
                      "' (known: none, selective, full)");
        if (llvm::is_contained(predicting.recompute, *mode))
          return fail("--recompute names '" + name.trim().str() + "' twice");
        predicting.recompute.push_back(*mode);
      }
    }
  }
  if (!memoryBudget.empty()) {
    std::optional<double> bytes = parseBytes(memoryBudget);
    if (!bytes)
      return fail("--memory-budget '" + memoryBudget +
                  "' is not a positive byte count up to 4 EiB (as 12GiB, 800MB or 1e9)");
    options.memoryBudget = *bytes;
  }
  // Without --memory-cap, a prediction is held to the search's budget.
  if (!profile.empty() && memoryCap.empty())
    predicting.memoryCap = options.memoryBudget;
  options.train = train;
  options.microbatches = microbatches;
  options.maxTensorParallel = maxTp;
  options.maxPipeline = maxPp;
  options.timeLimitSeconds = timeLimit;
  options.searchNodes = searchNodes;
  options.entry = entry;
  options.schedules.clear();
  std::stringstream list(schedules);
  for (std::string name; std::getline(list, name, ',');) {
    std::optional<pipe::ScheduleKind> kind = pipe::parseScheduleKind(name);
    if (!kind)
      return fail("--schedules: unknown schedule '" + name +
                  "' (known: gpipe, 1f1b, interleaved-1f1b, zb-h1, zb-v)");
    if (llvm::is_contained(options.schedules, *kind))
      return fail("--schedules names '" + name + "' twice");
    if (!train && schedules.getNumOccurrences() && pipe::splitsBackward(*kind))
      return fail("--schedules: " + name +
                  " splits the backward pass, and a forward plan has none: plan with --train, "
                  "or leave it out");
    options.schedules.push_back(*kind);
  }
  if (options.schedules.empty())
    return fail("--schedules lists none: name at least one schedule (gpipe, 1f1b, "
                "interleaved-1f1b, zb-h1, zb-v)");
  if (!jsonPath.empty()) {
    OutputTarget target;
    if (!resolveOutput(jsonPath, target, error))
      return fail(error);
    if (sameFile(jsonPath, modelPath))
      return fail("--json " + jsonPath + " is the model's own file: the plans would replace it");
  }

  // The dialects of a global model (the planner builds the rest); the tool
  // links no lowering.
  DialectRegistry registry;
  registry.insert<tfm::TfmDialect, pipe::PipeDialect, arith::ArithDialect, func::FuncDialect,
                  tensor::TensorDialect>();
  MLIRContext context(registry);
  std::string readError;
  if (!checkModelInput(modelPath, registry, /*trialRead=*/true, readError))
    return fail(readError);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(modelPath, sourceMgr, &context);
  if (!module)
    return 1;
  // On a terminal, one line that says where the search stands, rewritten
  // in place and cleared at the end; a log gets none of it.
  bool showProgress = llvm::errs().is_displayed();
  if (showProgress)
    options.progress = [](const planning::SearchProgress &p) {
      bool solving = p.phase == planning::SearchProgress::Phase::Solving;
      llvm::errs() << llvm::formatv("\r\x1b[Kpmlir-plan: {0} {1} of {2} ({3}), {4:f1} s",
                                    solving ? "intra-op solve" : "compiling plan", p.current,
                                    p.total, p.subject, p.seconds);
      llvm::errs().flush();
    };
  std::optional<planning::PlannerResult> result = planning::planModel(*module, options, error);
  if (showProgress)
    llvm::errs() << "\r\x1b[K";
  if (!result)
    return fail(modelPath + ": " + error);
  // A schedule asked for by name that no layout could run is said; the
  // defaults are tried where they apply.
  if (schedules.getNumOccurrences())
    for (const auto &[kind, why] : result->unpricedSchedules)
      llvm::WithColor::warning(llvm::errs(), "pmlir-plan")
          << "--schedules: " << pipe::stringifyScheduleKind(kind) << " priced no plan: " << why
          << "\n";

  llvm::outs() << llvm::formatv(
      "{0}: {1} layers, {2} of the {3} step on {4} devices ({5}, {6} a node), budget {7} a "
      "device\n",
      modelPath, result->layers, train ? "training" : "forward",
      microbatches > 1 ? std::to_string(microbatches) + "-microbatch" : std::string("one-batch"),
      devices, topology->name, topology->devicesPerNode, formatBytes(options.memoryBudget));
  llvm::outs() << llvm::formatv("searched {0} layouts ({1} intra-op solves) in {2}\n\n",
                                result->plans.size(), result->solves,
                                formatSeconds(result->seconds));
  llvm::outs() << llvm::formatv("{0,3} {1,-16} {2,-17} {3,3} {4,11} {5,11} {6,11} {7,11} {8,11}  "
                                "{9}\n",
                                "#", "mesh", "schedule", "v", "step", "compute", "comm", "bubble",
                                "memory", "comm by axis, comm bytes a device");
  int64_t shown = 0;
  bool estimatedShown = false;
  for (const planning::Plan &plan : result->plans) {
    if (shown == top)
      break;
    ++shown;
    if (plan.rankComm.empty()) {
      llvm::outs() << llvm::formatv("{0,3} {1,-16} does not fit: {2}\n", shown, plan.meshSpec(),
                                    plan.note);
      continue;
    }
    llvm::outs() << llvm::formatv(
        "{0,3} {1,-16} {2,-17} {3,3} {4,11} {5,11} {6,11} {7,11} {8,11}  {9}; {10}{11}\n", shown,
        plan.meshSpec(), plan.scheduleName(), plan.virtualStages, formatSeconds(plan.stepSeconds),
        formatSeconds(plan.computeSeconds), formatSeconds(plan.commSeconds()),
        formatSeconds(plan.bubbleSeconds), memoryText(plan), commText(plan.comm()),
        formatBytes(commBytes(plan.comm())), plan.fits ? "" : " (does not fit: " + plan.note + ")");
    estimatedShown |= !plan.compiled;
  }
  if (estimatedShown)
    llvm::outs() << "~ memory: the search's estimate of a plan not compiled (--compile)\n";
  if (!result->plans.empty() && result->plans.front().fits) {
    const planning::Plan &best = result->plans.front();
    llvm::outs() << "\nbest: " << best.meshSpec() << ", " << best.scheduleName() << "\n";
    llvm::outs() << llvm::formatv(
        "  step {0} = compute {1} + comm {2} ({3}) + bubble {4}{5}\n",
        formatSeconds(best.stepSeconds), formatSeconds(best.computeSeconds),
        formatSeconds(best.commSeconds()), commText(best.comm()), formatSeconds(best.bubbleSeconds),
        best.overlappedSeconds > 0 ? " - overlapped " + formatSeconds(best.overlappedSeconds) +
                                         " (transfers in flight while the rank computes)"
                                   : "");
    if (best.schedule) {
      std::string split;
      for (int64_t s : best.splitPoints)
        split += (split.empty() ? "" : ", ") + std::to_string(s);
      llvm::outs() << llvm::formatv("  {0} stages ({1} a pipeline rank), the first layers of "
                                    "stages 1.. at {2}; {3} microbatches\n",
                                    best.pp * best.virtualStages, best.virtualStages, split,
                                    best.microbatches);
    }
    llvm::outs() << llvm::formatv("  memory {0} a device of {1}{2}\n",
                                  formatBytes(best.memoryBytes), formatBytes(options.memoryBudget),
                                  best.compiled ? "" : " (estimated: the plan was not compiled)");
    if (result->plans.size() > 1 && result->plans[1].fits && !result->plans[1].rankComm.empty())
      llvm::outs() << "  over the runner-up, " << result->plans[1].meshSpec() << " "
                   << result->plans[1].scheduleName() << ": "
                   << overRunnerUp(best, result->plans[1]) << "\n";
    llvm::outs() << "  run: " << runCommand(best) << "\n";
  } else {
    llvm::outs() << "\nno plan fits under " << formatBytes(options.memoryBudget) << "\n";
  }
  std::vector<planning::PredictedPlan> predicted;
  if (!profile.empty()) {
    // The pmlir-run beside this pmlir-plan predicts; the printed commands
    // name it as a user types it.
    planning::RunCommandOptions running = runCommandOptions(commandBudget());
    llvm::SmallString<256> self(llvm::sys::fs::getMainExecutable(argv[0], (void *)&planMain));
    llvm::sys::path::remove_filename(self);
    llvm::sys::path::append(self, "pmlir-run");
    running.pmlirRun = self.str().str();
    predicted = planning::predictPlans(*result, running, predicting);
    for (planning::PredictedPlan &p : predicted)
      p.command.front() = "pmlir-run";
    printPredictions(predicted, predicting);
  }
  if (!jsonPath.empty()) {
    llvm::json::Array plans;
    for (const planning::Plan &plan : result->plans)
      plans.push_back(planJson(plan));
    llvm::json::Array predictions;
    for (const planning::PredictedPlan &p : predicted)
      predictions.push_back(predictedJson(p));
    llvm::json::Object report{
        {"model", modelPath.getValue()}, {"devices", devices.getValue()},
        {"topology", topology->name},    {"memory_budget_bytes", options.memoryBudget},
        {"train", train.getValue()},     {"layers", result->layers},
        {"solves", result->solves},      {"seconds", result->seconds},
        {"plans", std::move(plans)}};
    if (!profile.empty()) {
      report["predicted"] = std::move(predictions);
      report["profile"] = profile.getValue();
      // JSON has no infinity: a cap of none is null.
      report["memory_cap_bytes"] = std::isfinite(predicting.memoryCap)
                                       ? llvm::json::Value(predicting.memoryCap)
                                       : llvm::json::Value(nullptr);
    }
    std::string text = llvm::formatv("{0:2}", llvm::json::Value(std::move(report))).str() + "\n";
    if (!writeOutputFile(jsonPath, text, error))
      return fail(error);
  }
  if (!profile.empty())
    return predicted.empty() || !predicted.front().fits ? 1 : 0;
  return result->plans.empty() || !result->plans.front().fits ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  return runToolMain("pmlir-plan", [&] { return planMain(argc, argv); });
}
