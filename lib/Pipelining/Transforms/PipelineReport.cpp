//===- PipelineReport.cpp - The simulated schedule as JSON ----------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Transforms/Passes.h"

#include "pmlir/Analysis/JsonReport.h"
#include "pmlir/Dialect/Pipe/IR/Pipe.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>

namespace pmlir {
#define GEN_PASS_DEF_PIPELINEREPORT
#include "pmlir/Pipelining/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

namespace {

struct PipelineReportPass : public pmlir::impl::PipelineReportBase<PipelineReportPass> {
  using PipelineReportBase::PipelineReportBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<pipe::ScheduleOp> schedules(module.getOps<pipe::ScheduleOp>());
    if (schedules.size() != 1) {
      module.emitError() << "pmlir-pipeline-report: needs one pipe.schedule, the module has "
                         << schedules.size();
      return signalPassFailure();
    }
    for (auto [name, value] : {std::pair<const char *, double>{"forward", forward},
                               {"backward-input", backwardInput},
                               {"backward-weight", backwardWeight},
                               {"transfer", transfer}})
      if (!std::isfinite(value) || value < 0) {
        module.emitError() << "pmlir-pipeline-report: " << name
                           << " must be a finite cost of 0 or more, not "
                           << llvm::formatv("{0}", value).str();
        return signalPassFailure();
      }
    pipe::ScheduleOp op = schedules.front();
    pipe::Schedule schedule = op.getSchedule();
    pipe::ActionCosts costs;
    costs.forward = forward;
    costs.backwardInput = backwardInput;
    costs.backwardWeight = backwardWeight;
    costs.transfer = transfer;
    pipe::Simulation sim = pipe::simulate(schedule, costs);
    if (sim.deadlocked) {
      op.emitOpError() << sim.deadlock;
      return signalPassFailure();
    }
    // Finite costs can add up past a double: JSON has no infinity to
    // write, and the report would be no number.
    if (!std::isfinite(sim.makespan) || !std::isfinite(sim.bubble)) {
      module.emitError() << "pmlir-pipeline-report: the simulated step's time overflows (its "
                            "makespan is "
                         << llvm::formatv("{0}", sim.makespan).str()
                         << "): the costs are too large to add up";
      return signalPassFailure();
    }
    int64_t virtualStages = schedule.stages / schedule.ranks;
    llvm::json::Object report{
        {"schedule", pipe::stringifyScheduleKind(op.getKind())},
        {"ranks", schedule.ranks},
        {"stages", schedule.stages},
        {"microbatches", schedule.microbatches},
        {"costs", llvm::json::Object{{"forward", costs.forward},
                                     {"backward_input", costs.backwardInput},
                                     {"backward_weight", costs.backwardWeight},
                                     {"transfer", costs.transfer}}},
        {"makespan", sim.makespan},
        {"bubble", sim.bubble},
    };
    if (pipe::isGenerated(op.getKind()))
      if (std::optional<double> formula = pipe::formulaBubble(
              op.getKind(), schedule.ranks, virtualStages, schedule.microbatches, costs);
          formula && std::isfinite(*formula))
        report["formula_bubble"] = *formula;
    llvm::json::Array busy, peak, timeline;
    for (double t : sim.busy)
      busy.push_back(t);
    for (int64_t n : sim.peakInFlight)
      peak.push_back(n);
    for (const pipe::SimulatedAction &a : sim.timeline)
      timeline.push_back(llvm::json::Object{
          {"rank", a.rank}, {"action", a.action.str()}, {"start", a.start}, {"end", a.end}});
    report["busy"] = std::move(busy);
    report["peak_in_flight"] = std::move(peak);
    report["timeline"] = std::move(timeline);
    if (failed(writeJsonReport(module, output, "pipeline report",
                               llvm::json::Value(std::move(report)))))
      return signalPassFailure();
  }
};

} // namespace
