//===- pmlir-plan.cpp - The best parallel plans of a model ----------------===//
//
// Part of pmlir.
//
//   pmlir-plan MODEL.mlir --devices N [--topology cpu|h100|FILE.json]
//              [--memory-budget B] [--train] [--microbatches M] [--top K]
//              [--schedules gpipe,1f1b,...] [--max-tp T] [--max-pp P]
//              [--time-limit S] [--search-nodes N] [--compile K]
//              [--json PLANS.json]
//
// Searches every pp x dp x tp layout of N devices (pmlir/Planning/
// Planner.h), prints the best K as a table with each plan's predicted step
// time split into compute, communication per mesh axis and bubble, its
// memory per device and communication bytes (those of the program the
// printed command compiles), the arithmetic of the best one, and the
// pmlir-run command that runs each.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Planning/Planner.h"
#include "pmlir/Support/Bytes.h"
#include "pmlir/Support/OutputFile.h"
#include "pmlir/Support/ToolMain.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <sstream>

using namespace mlir;
using namespace pmlir;

namespace {

llvm::cl::opt<std::string> modelPath(llvm::cl::Positional, llvm::cl::desc("MODEL.mlir"),
                                     llvm::cl::Required);
llvm::cl::opt<int64_t> devices("devices", llvm::cl::desc("devices to lay out"), llvm::cl::Required);
llvm::cl::opt<std::string>
    topologyFlag("topology", llvm::cl::desc("a preset (cpu, h100) or a JSON file (default: cpu)"),
                 llvm::cl::init("cpu"));
llvm::cl::opt<std::string>
    memoryBudget("memory-budget",
                 llvm::cl::desc("bytes a device may hold, as 80GB (default: the topology's)"));
llvm::cl::opt<bool> train("train", llvm::cl::desc("plan the training step (default: the forward)"));
llvm::cl::opt<int64_t>
    microbatches("microbatches",
                 llvm::cl::desc("microbatches of the model's batch per step (default 1)"),
                 llvm::cl::init(1));
llvm::cl::opt<int64_t> top("top", llvm::cl::desc("plans to print (default 5)"), llvm::cl::init(5));
llvm::cl::opt<std::string> schedules(
    "schedules",
    llvm::cl::desc("pipeline schedules to try (default: gpipe,1f1b,interleaved-1f1b,zb-h1)"),
    llvm::cl::init("gpipe,1f1b,interleaved-1f1b,zb-h1"));
llvm::cl::opt<int64_t> maxTp("max-tp", llvm::cl::desc("the largest tp (default: a node's devices)"),
                             llvm::cl::init(0));
llvm::cl::opt<int64_t> maxPp("max-pp", llvm::cl::desc("the largest pp (default: the layers)"),
                             llvm::cl::init(0));
llvm::cl::opt<double> timeLimit("time-limit",
                                llvm::cl::desc("seconds each intra-op solve may take (default 10)"),
                                llvm::cl::init(10));
llvm::cl::opt<int64_t> searchNodes(
    "search-nodes",
    llvm::cl::desc("CBC's branch-and-bound nodes a layout's solve may explore (default 0: the "
                   "root's best solution; -1: prove each optimal)"),
    llvm::cl::init(0));
llvm::cl::opt<int64_t>
    compile("compile", llvm::cl::desc("plans to compile as pmlir-run would (default: --top)"),
            llvm::cl::init(-1));
llvm::cl::opt<std::string> entry("entry", llvm::cl::desc("the function to plan (default forward)"),
                                 llvm::cl::init("forward"));
llvm::cl::opt<std::string> jsonPath("json", llvm::cl::desc("write every plan as JSON here"));

int fail(const std::string &message) {
  llvm::WithColor::error(llvm::errs(), "pmlir-plan") << message << "\n";
  return 1;
}

std::string seconds(double s) {
  if (s >= 1)
    return llvm::formatv("{0:f2} s", s).str();
  if (s >= 1e-3)
    return llvm::formatv("{0:f2} ms", s * 1e3).str();
  return llvm::formatv("{0:f1} us", s * 1e6).str();
}

/// The pmlir-run command that runs `plan`.
std::string runCommand(const planning::Plan &plan) {
  std::string cmd = "pmlir-run " + modelPath;
  if (train)
    cmd += " --train";
  cmd += " --mesh " + plan.meshSpec() + " --recipe auto --topology " + topologyFlag;
  if (!memoryBudget.empty())
    cmd += " --memory-budget " + memoryBudget;
  if (plan.schedule) {
    cmd += " --pipeline-schedule " + plan.scheduleName() + " --microbatches " +
           std::to_string(plan.microbatches);
    if (plan.virtualStages > 1)
      cmd += " --virtual-stages " + std::to_string(plan.virtualStages);
    std::string split;
    for (int64_t s : plan.splitPoints)
      split += (split.empty() ? "" : ",") + std::to_string(s);
    cmd += " --pipeline-split " + split;
  } else if (train && plan.microbatches > 1) {
    cmd += " --grad-accum " + std::to_string(plan.microbatches);
  }
  return cmd;
}

std::string commText(const planning::CommPerAxes &comm) {
  std::string text;
  for (const auto &[axes, c] : comm)
    if (c.collectives > 0)
      text += (text.empty() ? "" : ", ") + axes + " " + seconds(c.seconds);
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
  return llvm::json::Object{{"mesh", plan.meshSpec()},
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
                            {"comm", commJson(plan.comm())},
                            {"comm_per_pipeline_rank", std::move(ranks)},
                            {"compiled", plan.compiled},
                            {"estimated_comm_per_pipeline_rank", std::move(estimated)},
                            {"memory_bytes", plan.memoryBytes},
                            {"variables", plan.stats.variables},
                            {"solve_seconds", plan.stats.solveSeconds},
                            {"command", runCommand(plan)}};
}

int planMain(int argc, char **argv) {
  llvm::cl::ParseCommandLineOptions(
      argc, argv, "pmlir-plan: the best pp x dp x tp plans of a model on N devices\n");
  // --devices and --microbatches are checked by the planner itself.
  if (top < 1)
    return fail("--top must be at least 1, not " + std::to_string(top));
  if (!(timeLimit > 0))
    return fail("--time-limit must be a positive number of seconds");
  if (searchNodes < -1)
    return fail("--search-nodes must be -1 (no limit) or at least 0, not " +
                std::to_string(searchNodes));
  if (compile < -1)
    return fail("--compile must be at least 0, not " + std::to_string(compile));
  planning::PlannerOptions options;
  std::string error;
  std::optional<sharding::Topology> topology = sharding::Topology::load(topologyFlag, error);
  if (!topology)
    return fail(error);
  options.topology = *topology;
  options.topologySpec = topologyFlag;
  options.compile = compile < 0 ? top : compile;
  options.devices = devices;
  options.memoryBudget = topology->device.memoryBytes;
  if (!memoryBudget.empty()) {
    std::optional<double> bytes = parseBytes(memoryBudget);
    if (!bytes)
      return fail("--memory-budget '" + memoryBudget +
                  "' is not a positive byte count (as 12GiB, 800MB or 1e9)");
    options.memoryBudget = *bytes;
  }
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
    options.schedules.push_back(*kind);
  }
  if (!jsonPath.empty()) {
    OutputTarget target;
    if (!resolveOutput(jsonPath, target, error))
      return fail(error);
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
  std::optional<planning::PlannerResult> result = planning::planModel(*module, options, error);
  if (!result)
    return fail(modelPath + ": " + error);

  llvm::outs() << llvm::formatv(
      "{0}: {1} layers, {2} of the {3} step on {4} devices ({5}, {6} a node), budget {7} a "
      "device\n",
      modelPath, result->layers, train ? "training" : "forward",
      microbatches > 1 ? std::to_string(microbatches) + "-microbatch" : std::string("one-batch"),
      devices, topology->name, topology->devicesPerNode, formatBytes(options.memoryBudget));
  llvm::outs() << llvm::formatv("searched {0} layouts ({1} intra-op solves) in {2}\n\n",
                                result->plans.size(), result->solves, seconds(result->seconds));
  llvm::outs() << llvm::formatv("{0,3} {1,-16} {2,-17} {3,3} {4,11} {5,11} {6,11} {7,11} {8,11}  "
                                "{9}\n",
                                "#", "mesh", "schedule", "v", "step", "compute", "comm", "bubble",
                                "memory", "comm by axis, comm bytes a device");
  int64_t shown = 0;
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
        plan.meshSpec(), plan.scheduleName(), plan.virtualStages, seconds(plan.stepSeconds),
        seconds(plan.computeSeconds), seconds(plan.commSeconds()), seconds(plan.bubbleSeconds),
        formatBytes(plan.memoryBytes), commText(plan.comm()), formatBytes(commBytes(plan.comm())),
        plan.fits ? "" : " (does not fit: " + plan.note + ")");
  }
  if (!result->plans.empty() && result->plans.front().fits) {
    const planning::Plan &best = result->plans.front();
    llvm::outs() << "\nbest: " << best.meshSpec() << ", " << best.scheduleName() << "\n";
    llvm::outs() << llvm::formatv("  step {0} = compute {1} + comm {2} ({3}) + bubble {4}\n",
                                  seconds(best.stepSeconds), seconds(best.computeSeconds),
                                  seconds(best.commSeconds()), commText(best.comm()),
                                  seconds(best.bubbleSeconds));
    if (best.schedule) {
      std::string split;
      for (int64_t s : best.splitPoints)
        split += (split.empty() ? "" : ", ") + std::to_string(s);
      llvm::outs() << llvm::formatv("  {0} stages ({1} a pipeline rank), the first layers of "
                                    "stages 1.. at {2}; {3} microbatches\n",
                                    best.pp * best.virtualStages, best.virtualStages, split,
                                    best.microbatches);
    }
    llvm::outs() << llvm::formatv("  memory {0} a device of {1}\n", formatBytes(best.memoryBytes),
                                  formatBytes(options.memoryBudget));
    llvm::outs() << "  run: " << runCommand(best) << "\n";
  } else {
    llvm::outs() << "\nno plan fits under " << formatBytes(options.memoryBudget) << "\n";
  }
  if (!jsonPath.empty()) {
    llvm::json::Array plans;
    for (const planning::Plan &plan : result->plans)
      plans.push_back(planJson(plan));
    llvm::json::Object report{
        {"model", modelPath.getValue()}, {"devices", devices.getValue()},
        {"topology", topology->name},    {"memory_budget_bytes", options.memoryBudget},
        {"train", train.getValue()},     {"layers", result->layers},
        {"solves", result->solves},      {"seconds", result->seconds},
        {"plans", std::move(plans)}};
    std::string text = llvm::formatv("{0:2}", llvm::json::Value(std::move(report))).str() + "\n";
    if (!writeOutputFile(jsonPath, text, error))
      return fail(error);
  }
  return result->plans.empty() || !result->plans.front().fits ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  return runToolMain("pmlir-plan", [&] { return planMain(argc, argv); });
}
