//===- RankTimelineTest.cpp - The order each pipeline rank runs ops in ----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Pipelining/Pipelining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

using namespace mlir;
using namespace pmlir;

namespace {

// Two stages, two microbatches, written microbatch by microbatch as the
// pipeline passes write them; each top-level op is named by its location.
constexpr const char *kProgram = R"mlir(
func.func @step(%w: tensor<4xf32>) -> tensor<4xf32> attributes {pipe.stages = 2 : i64} {
  %one = tfm.fill 1.000000e+00 : tensor<4xf32> loc("one")
  %f00 = pipe.fragment stage 0 "F" microbatch 0 : tensor<4xf32> {
    %y = tfm.add %w, %one : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("0F0")
  %s00 = pipe.transfer %f00 from 0 to 1 : tensor<4xf32> loc("act0")
  %f10 = pipe.fragment stage 1 "F" microbatch 0 : tensor<4xf32> {
    %y = tfm.gelu %s00 tanh : tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("1F0")
  %b10 = pipe.fragment stage 1 "B" microbatch 0 : tensor<4xf32> {
    %y = tfm.add %f10, %s00 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("1B0")
  %g00 = pipe.transfer %b10 from 1 to 0 : tensor<4xf32> loc("grad0")
  %b00 = pipe.fragment stage 0 "B" microbatch 0 : tensor<4xf32> {
    %y = tfm.add %g00, %f00 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("0B0")
  %f01 = pipe.fragment stage 0 "F" microbatch 1 : tensor<4xf32> {
    %y = tfm.add %w, %one : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("0F1")
  %s01 = pipe.transfer %f01 from 0 to 1 : tensor<4xf32> loc("act1")
  %f11 = pipe.fragment stage 1 "F" microbatch 1 : tensor<4xf32> {
    %y = tfm.gelu %s01 tanh : tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("1F1")
  %b11 = pipe.fragment stage 1 "B" microbatch 1 : tensor<4xf32> {
    %y = tfm.add %f11, %s01 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("1B1")
  %g01 = pipe.transfer %b11 from 1 to 0 : tensor<4xf32> loc("grad1")
  %b01 = pipe.fragment stage 0 "B" microbatch 1 : tensor<4xf32> {
    %y = tfm.add %g01, %f01 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("0B1")
  %sum = tfm.add %b00, %b01 : tensor<4xf32>, tensor<4xf32> loc("sum")
  return %sum : tensor<4xf32> loc("return")
}
)mlir";

/// The names of the top-level ops of a timeline, in order.
std::vector<std::string> topLevelNames(func::FuncOp func, ArrayRef<Operation *> timeline) {
  std::vector<std::string> names;
  for (Operation *op : timeline)
    if (op->getParentOp() == func.getOperation())
      names.push_back(cast<NameLoc>(op->getLoc()).getName().str());
  return names;
}

/// A parsed program and the schedule its ranks run, placed.
struct Pipelined {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  func::FuncOp func;
  std::optional<pipe::Schedule> schedule;
  std::string error;

  Pipelined(const char *program, pipe::ScheduleKind kind, int64_t microbatches) {
    context.loadDialect<tfm::TfmDialect, pipe::PipeDialect, func::FuncDialect>();
    module = parseSourceString<ModuleOp>(program, &context);
    if (module)
      func = cast<func::FuncOp>(module->getBody()->front());
    schedule = pipe::buildSchedule(kind, 2, 1, microbatches, error);
    if (schedule)
      schedule->placeStages();
  }
  bool ready() const { return func && schedule; }
};

TEST(RankTimelineTest, EachRankRunsItsScheduleInOrder) {
  Pipelined p(kProgram, pipe::ScheduleKind::OneFOneB, 2);
  ASSERT_TRUE(p.ready()) << p.error;
  func::FuncOp func = p.func;
  auto ranks = pipeline::rankTimelines(func, *p.schedule);
  ASSERT_TRUE(succeeded(ranks));
  std::vector<std::vector<Operation *>> &timelines = *ranks;
  ASSERT_EQ(timelines.size(), 2u);
  // Rank 0 runs 0F0 0F1 0B0 0B1: both forwards before the first backward,
  // so both microbatches' activations are held at once (the order of the
  // program would hold one). The fill of the arguments alone runs before
  // its first reader, each activation is sent after its fragment, each
  // gradient received before the backward that reads it, and the running
  // sum after its last term.
  EXPECT_EQ(topLevelNames(func, timelines[0]),
            (std::vector<std::string>{"one", "0F0", "act0", "0F1", "act1", "grad0", "0B0", "grad1",
                                      "0B1", "sum", "return"}));
  // Rank 1 runs 1F0 1B0 1F1 1B1.
  EXPECT_EQ(topLevelNames(func, timelines[1]),
            (std::vector<std::string>{"act0", "1F0", "1B0", "grad0", "act1", "1F1", "1B1", "grad1",
                                      "return"}));
  // A fragment's ops run with it, in their order: each rank runs its four
  // fragments' add or gelu and yield.
  for (const std::vector<Operation *> &timeline : timelines) {
    int64_t nested = 0;
    for (auto [i, op] : llvm::enumerate(timeline)) {
      if (!isa<pipe::FragmentOp>(op->getParentOp()))
        continue;
      ++nested;
      Operation *before = timeline[i - 1];
      EXPECT_TRUE(before == op->getParentOp() || before->getParentOp() == op->getParentOp())
          << "a fragment's op does not run with its fragment";
    }
    EXPECT_EQ(nested, 8);
  }
}

// One microbatch on two stages, with what lowerToPipelineRank builds around
// the fragments: an op outside the fragments between a transfer and its
// reader (a reshard), and a clipped update: each stage's gradient scaled by
// a norm summed over the stages (pipe.stage_sum).
constexpr const char *kClippedProgram = R"mlir(
func.func @step(%w0: tensor<4xf32>, %w1: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {pipe.stages = 2 : i64} {
  %f0 = pipe.fragment stage 0 "F" microbatch 0 : tensor<4xf32> {
    %y = tfm.add %w0, %w0 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("0F0")
  %s = pipe.transfer %f0 from 0 to 1 : tensor<4xf32> loc("act0")
  %r = tfm.gelu %s tanh : tensor<4xf32> loc("reshard")
  %f1 = pipe.fragment stage 1 "F" microbatch 0 : tensor<4xf32> {
    %y = tfm.add %r, %w1 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("1F0")
  %b1 = pipe.fragment stage 1 "B" microbatch 0 : tensor<4xf32> {
    %y = tfm.add %f1, %w1 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("1B0")
  %g = pipe.transfer %b1 from 1 to 0 : tensor<4xf32> loc("grad0")
  %b0 = pipe.fragment stage 0 "B" microbatch 0 : tensor<4xf32> {
    %y = tfm.add %g, %f0 : tensor<4xf32>, tensor<4xf32>
    pipe.yield %y : tensor<4xf32>
  } loc("0B0")
  %q0 = tfm.mul %b0, %b0 : tensor<4xf32>, tensor<4xf32> loc("square0")
  %q1 = tfm.mul %b1, %b1 : tensor<4xf32>, tensor<4xf32> loc("square1")
  %norm = pipe.stage_sum %q0, %q1 stages [0, 1] : tensor<4xf32>, tensor<4xf32> -> tensor<4xf32> loc("norm")
  %u0 = tfm.mul %b0, %norm : tensor<4xf32>, tensor<4xf32> loc("update0")
  %u1 = tfm.mul %b1, %norm : tensor<4xf32>, tensor<4xf32> loc("update1")
  return %u0, %u1 : tensor<4xf32>, tensor<4xf32> loc("return")
}
)mlir";

TEST(RankTimelineTest, StageSumsRunEverywhereAndWhatReadsAStageStaysOnIt) {
  Pipelined p(kClippedProgram, pipe::ScheduleKind::OneFOneB, 1);
  ASSERT_TRUE(p.ready()) << p.error;
  func::FuncOp func = p.func;
  auto ranks = pipeline::rankTimelines(func, *p.schedule);
  ASSERT_TRUE(succeeded(ranks));
  // Each rank squares its own stage's gradient, sums the norm with the
  // other rank after its actions and updates only its own stage (an
  // update that read the norm alone would have run on both ranks, each
  // holding both stages' state). The reshard between the activation's
  // transfer and its reader is received before it, on rank 1 alone.
  EXPECT_EQ(topLevelNames(func, (*ranks)[0]),
            (std::vector<std::string>{"0F0", "act0", "grad0", "0B0", "square0", "norm", "update0",
                                      "return"}));
  EXPECT_EQ(topLevelNames(func, (*ranks)[1]),
            (std::vector<std::string>{"act0", "reshard", "1F0", "1B0", "square1", "grad0", "norm",
                                      "update1", "return"}));
}

TEST(RankTimelineTest, AFragmentNoActionRunsIsRefused) {
  // GPipe without backward actions: a forward-only schedule.
  Pipelined p(kClippedProgram, pipe::ScheduleKind::GPipe, 1);
  ASSERT_TRUE(p.ready()) << p.error;
  for (auto &actions : p.schedule->actions)
    llvm::erase_if(actions,
                   [](const pipe::Action &a) { return a.kind != pipe::ActionKind::Forward; });
  std::string diagnostic;
  ScopedDiagnosticHandler handler(&p.context, [&](Diagnostic &d) {
    diagnostic = d.str();
    return success();
  });
  EXPECT_TRUE(failed(pipeline::rankTimelines(p.func, *p.schedule)));
  EXPECT_EQ(diagnostic, "'pipe.fragment' op is stage 1's B of microbatch 0, which no action of the "
                        "pipeline schedule runs");
}

} // namespace
