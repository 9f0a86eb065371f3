//===- PipelineSchedule.cpp - Each pipeline rank's actions ----------------===//
//
// Part of pmlir.
//
// Generates (or reads from a CSV) the schedule, checks it, and writes it
// as a pipe.schedule; the generators and checks are pipe/Schedule.h's. A
// forward-only program (inference) gets the schedule's forwards alone.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Transforms/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Pipelining/Pipelining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/MemoryBuffer.h"

namespace pmlir {
#define GEN_PASS_DEF_PIPELINESCHEDULE
#include "pmlir/Pipelining/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

namespace {

struct PipelineSchedulePass : public pmlir::impl::PipelineScheduleBase<PipelineSchedulePass> {
  using PipelineScheduleBase::PipelineScheduleBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto fail = [&](const Twine &message) {
      module.emitError() << "pmlir-pipeline-schedule: " << message;
      signalPassFailure();
    };
    if (!module.getOps<pipe::ScheduleOp>().empty())
      return fail("the module already has a pipe.schedule");
    if (virtualStages < 1)
      return fail("virtual-stages must be at least 1, not " + Twine(virtualStages));
    if (ranks < 0)
      return fail("ranks must be 0 (the stages over virtual-stages) or more, not " + Twine(ranks));
    if (microbatches < 1)
      return fail("microbatches must be at least 1, not " + Twine(microbatches));
    int64_t stages = 0;
    SmallVector<func::FuncOp> pipelined;
    for (auto func : module.getOps<func::FuncOp>())
      if (auto attr = func->getAttrOfType<IntegerAttr>(pipe::kStagesAttr)) {
        stages = attr.getInt();
        pipelined.push_back(func);
      }
    if (stages == 0)
      return fail("no function is cut into pipeline stages (pipe.stages): run "
                  "pmlir-pipeline-partition first");
    std::string error;
    std::optional<pipe::Schedule> built;
    if (schedule == pipe::ScheduleKind::None)
      return fail("schedule=none schedules nothing: give a generator or csv");
    if (schedule == pipe::ScheduleKind::Csv) {
      auto file = llvm::MemoryBuffer::getFile(csvFile);
      if (!file)
        return fail("cannot read the schedule '" + csvFile + "': " + file.getError().message());
      built = pipe::parseScheduleCsv((*file)->getBuffer().str(), stages, microbatches, error);
    } else {
      int64_t p = ranks > 0 ? ranks : stages / virtualStages;
      if (p * virtualStages != stages)
        return fail("the program has " + Twine(stages) + " stages, not " + Twine(p) + " ranks x " +
                    Twine(virtualStages) + " virtual stages");
      built = pipe::buildSchedule(schedule, p, virtualStages, microbatches, error);
    }
    if (built && ranks > 0 && built->ranks != ranks)
      return fail("the schedule has " + Twine(built->ranks) + " ranks, not " + Twine(ranks));
    // A forward-only program (inference) runs a schedule's forwards alone.
    // A program repeated over microbatches (its fragments name theirs)
    // runs the schedule's; one that is not yet stands for any.
    bool backward = false;
    int64_t programMicrobatches = 0;
    for (func::FuncOp func : pipelined)
      for (auto fragment : func.front().getOps<pipe::FragmentOp>()) {
        backward |= fragment.getKind() != pipe::ActionKind::Forward;
        if (std::optional<uint64_t> micro = fragment.getMicrobatch())
          programMicrobatches = std::max<int64_t>(programMicrobatches, *micro + 1);
      }
    if (built && !backward && schedule != pipe::ScheduleKind::Csv)
      built = built->forwardOnly();
    if (built && !pipe::verifySchedule(*built, error))
      built.reset();
    if (!built)
      return fail(error);
    if (backward != built->hasBackward())
      return fail(backward
                      ? "the schedule runs no backward, but @" + pipelined.front().getName() +
                            " has backward fragments"
                      : "the schedule runs backward actions, but @" + pipelined.front().getName() +
                            " is a forward (no backward fragments): give it forwards alone");
    if (programMicrobatches > 0 && programMicrobatches != built->microbatches)
      return fail("the schedule runs " + Twine(built->microbatches) + " microbatches, but @" +
                  pipelined.front().getName() + " is repeated over " + Twine(programMicrobatches) +
                  " (pmlir-microbatch, or the training step's grad-accum)");
    pipe::Simulation sim = pipe::simulate(*built, pipe::ActionCosts(), /*withTimeline=*/false);
    if (sim.deadlocked)
      return fail(sim.deadlock);
    if (meetingTransfers)
      built = built->withMeetingTransfers(pipe::ActionCosts());
    // Zero-bubble schedules run each backward as I and W.
    if (built->splitsBackward())
      for (func::FuncOp func : pipelined)
        if (failed(pipeline::splitBackwardFragments(func)))
          return signalPassFailure();
    OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
    SmallVector<Attribute> lists;
    for (const auto &list : built->actions) {
      SmallVector<Attribute> actions;
      for (const pipe::Action &a : list)
        actions.push_back(pipe::ActionAttr::get(b.getContext(), a.stage, a.kind, a.microbatch));
      lists.push_back(b.getArrayAttr(actions));
    }
    pipe::ScheduleOp::create(b, module.getLoc(), schedule, built->ranks, built->stages,
                             built->microbatches, b.getArrayAttr(lists));
  }
};

} // namespace
