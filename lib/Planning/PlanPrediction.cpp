//===- PlanPrediction.cpp - Plans priced by compiling every rank ----------===//
//
// Part of pmlir.
//
// A prediction is pmlir-run's own (--predict --json) on the command the
// plan prints, so the plan is predicted as exactly the job that command
// runs: on a mesh that job is one process per rank under mpirun, each rank
// compiling and calibrating its own program, which a library call inside
// this process could not be.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Planning/PlanPrediction.h"

#include "pmlir/Support/Bytes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <algorithm>
#include <cmath>

using namespace pmlir;
using namespace pmlir::planning;

std::vector<std::string> planning::runArguments(const Plan &plan, const RunCommandOptions &options,
                                                std::optional<training::Recompute> recompute) {
  std::vector<std::string> args = {options.pmlirRun, options.model};
  if (options.train)
    args.push_back("--train");
  if (options.device == CompileTarget::Gpu)
    args.insert(args.end(), {"--device", "gpu"});
  args.insert(args.end(),
              {"--mesh", plan.meshSpec(), "--recipe", "auto", "--topology", options.topology});
  if (!options.memoryBudget.empty())
    args.insert(args.end(), {"--memory-budget", options.memoryBudget});
  if (plan.schedule) {
    args.insert(args.end(), {"--pipeline-schedule", plan.scheduleName(), "--microbatches",
                             std::to_string(plan.microbatches)});
    if (plan.virtualStages > 1)
      args.insert(args.end(), {"--virtual-stages", std::to_string(plan.virtualStages)});
    std::string split;
    for (int64_t s : plan.splitPoints)
      split += (split.empty() ? "" : ",") + std::to_string(s);
    args.insert(args.end(), {"--pipeline-split", split});
  } else if (options.train && plan.microbatches > 1) {
    args.insert(args.end(), {"--grad-accum", std::to_string(plan.microbatches)});
  }
  if (recompute)
    args.insert(args.end(), {"--recompute", training::stringifyRecompute(*recompute).str()});
  return args;
}

std::string planning::commandLine(const std::vector<std::string> &arguments) {
  std::string line;
  for (const std::string &a : arguments) {
    bool plain = !a.empty() && llvm::all_of(a, [](char c) {
      return llvm::isAlnum(c) || llvm::is_contained(llvm::StringRef("-_=.,/:+@%"), c);
    });
    std::string quoted = a;
    if (!plain) {
      quoted = "'";
      for (char c : a)
        quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
      quoted += "'";
    }
    line += (line.empty() ? "" : " ") + quoted;
  }
  return line;
}

const PredictedRank &PredictedPlan::criticalRank() const {
  static const PredictedRank none;
  if (ranks.empty())
    return none;
  return *std::max_element(ranks.begin(), ranks.end(),
                           [](const PredictedRank &a, const PredictedRank &b) {
                             return a.busySeconds() < b.busySeconds();
                           });
}

std::string PredictedPlan::recomputeName() const {
  return recompute ? training::stringifyRecompute(*recompute).str() : "-";
}

namespace {

/// What a failed pmlir-run said: its first error line (mpirun's own
/// report follows it), else its last line.
std::string failureOf(llvm::StringRef text) {
  llvm::SmallVector<llvm::StringRef> lines;
  text.trim().split(lines, '\n');
  for (llvm::StringRef line : lines)
    if (line.contains("error: "))
      return line.trim().str();
  return lines.empty() ? std::string() : lines.back().trim().str();
}

std::optional<std::string> readText(const llvm::Twine &path) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return std::nullopt;
  return (*buffer)->getBuffer().str();
}

/// Runs `p.command` with --predict --json and reads its report into `p`.
void predictOne(PredictedPlan &p, const PredictOptions &options) {
  llvm::SmallString<128> out, err;
  if (llvm::sys::fs::createTemporaryFile("pmlir-plan-predict", "json", out) ||
      llvm::sys::fs::createTemporaryFile("pmlir-plan-predict", "txt", err)) {
    p.error = "cannot create a temporary file for pmlir-run's report";
    return;
  }
  llvm::scope_exit removeBoth([&] {
    llvm::sys::fs::remove(out);
    llvm::sys::fs::remove(err);
  });
  std::vector<std::string> args = p.command;
  args.insert(args.end(), {"--predict", "--json", "--profile", options.profile});
  std::vector<llvm::StringRef> refs(args.begin(), args.end());
  std::optional<llvm::StringRef> redirects[] = {llvm::StringRef(""), out.str(), err.str()};
  std::string launchError;
  bool launchFailed = false;
  int status = llvm::sys::ExecuteAndWait(args.front(), refs, std::nullopt, redirects, 0, 0,
                                         &launchError, &launchFailed);
  std::string stdoutText = readText(out).value_or("");
  std::string stderrText = readText(err).value_or("");
  if (launchFailed || status != 0) {
    p.error = launchFailed ? "cannot run " + args.front() + ": " + launchError
                           : "pmlir-run --predict failed (exit " + std::to_string(status) +
                                 "): " + failureOf(stderrText);
    return;
  }
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(stdoutText);
  const llvm::json::Object *report = parsed ? parsed->getAsObject() : nullptr;
  if (!parsed)
    llvm::consumeError(parsed.takeError());
  const llvm::json::Array *ranks = report ? report->getArray("ranks") : nullptr;
  if (!report || !ranks || !report->getNumber("step_seconds") ||
      !report->getInteger("peak_bytes")) {
    p.error = "pmlir-run --predict --json wrote no report of a step";
    return;
  }
  auto number = [](const llvm::json::Object &o, llvm::StringRef key) {
    return o.getNumber(key).value_or(0);
  };
  p.peakBytes = *report->getInteger("peak_bytes");
  p.stepSeconds = number(*report, "step_seconds");
  p.tokensPerSecond = number(*report, "tokens_per_second");
  p.mfu = number(*report, "mfu");
  if (const llvm::json::Object *profile = report->getObject("profile")) {
    p.profileName = profile->getString("name").value_or("").str();
    p.profileSource = profile->getString("source").value_or("").str();
  }
  for (const llvm::json::Value &value : *ranks) {
    const llvm::json::Object *r = value.getAsObject();
    if (!r)
      continue;
    PredictedRank rank;
    rank.peakBytes = r->getInteger("peak_bytes").value_or(0);
    rank.stepSeconds = number(*r, "step_seconds");
    rank.gemmSeconds = number(*r, "gemm_seconds");
    rank.loopSeconds = number(*r, "loop_seconds");
    rank.copySeconds = number(*r, "copy_seconds");
    rank.communicationSeconds = number(*r, "communication_seconds");
    rank.waitingSeconds = number(*r, "waiting_seconds");
    p.ranks.push_back(rank);
  }
  p.predicted = true;
  p.fits = static_cast<double>(p.peakBytes) <= options.memoryCap;
}

} // namespace

std::vector<PredictedPlan> planning::predictPlans(const PlannerResult &result,
                                                  const RunCommandOptions &command,
                                                  const PredictOptions &options) {
  std::vector<PredictedPlan> predicted;
  int64_t taken = 0;
  for (const Plan &plan : result.plans) {
    if (taken == options.plans || !plan.fits)
      break;
    ++taken;
    std::vector<std::optional<training::Recompute>> modes = {std::nullopt};
    if (command.train)
      modes.assign(options.recompute.begin(), options.recompute.end());
    for (std::optional<training::Recompute> mode : modes) {
      PredictedPlan p;
      p.plan = plan;
      p.recompute = mode;
      p.command = runArguments(plan, command, mode);
      predictOne(p, options);
      predicted.push_back(std::move(p));
    }
  }
  std::stable_sort(predicted.begin(), predicted.end(),
                   [](const PredictedPlan &a, const PredictedPlan &b) {
                     if (a.fits != b.fits)
                       return a.fits;
                     if (a.predicted != b.predicted)
                       return a.predicted;
                     return a.stepSeconds < b.stepSeconds;
                   });
  return predicted;
}

std::string planning::differenceText(std::vector<std::pair<std::string, double>> parts,
                                     double significantSeconds) {
  // The largest differences first: what decided it.
  std::stable_sort(parts.begin(), parts.end(), [](const auto &x, const auto &y) {
    return std::abs(x.second) > std::abs(y.second);
  });
  std::string text;
  for (const auto &[name, difference] : parts) {
    if (std::abs(difference) < significantSeconds)
      continue;
    text += (text.empty() ? "" : ", ") + name + " " + formatSeconds(std::abs(difference)) +
            (difference < 0 ? " less" : " more");
  }
  return text;
}

std::string planning::whyFaster(const PredictedPlan &best, const PredictedPlan &runnerUp) {
  const PredictedRank &a = best.criticalRank(), &b = runnerUp.criticalRank();
  // Parts within 1% of the step do not explain it.
  std::string text =
      differenceText({{"GEMMs", a.gemmSeconds - b.gemmSeconds},
                      {"loops", a.loopSeconds - b.loopSeconds},
                      {"copies", a.copySeconds - b.copySeconds},
                      {"communication", a.communicationSeconds - b.communicationSeconds},
                      {"waiting", a.waitingSeconds - b.waitingSeconds}},
                     0.01 * std::max(best.stepSeconds, runnerUp.stepSeconds));
  return text.empty() ? "every part within 1% of the step" : text;
}
