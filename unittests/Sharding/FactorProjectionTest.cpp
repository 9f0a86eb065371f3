//===- FactorProjectionTest.cpp - A dimension's axes onto its factors ----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "ShardingTestUtils.h"

using namespace pmlir::sharding;
using namespace pmlir::sharding::testing;
using pmlir::tfm::FactorKind;

namespace {

/// A rule with one result dimension made of factors of `sizes`, major
/// first, each parallel.
ShardingRule oneDimension(std::initializer_list<int64_t> sizes) {
  ShardingRule rule;
  llvm::SmallVector<int64_t> factors;
  for (int64_t size : sizes) {
    factors.push_back(rule.factors.size());
    rule.factors.push_back({size, FactorKind::Parallel});
  }
  rule.results.push_back({factors});
  return rule;
}

llvm::SmallVector<Axes> project(const ShardingRule &rule, MeshAttr mesh,
                                std::initializer_list<llvm::StringRef> dimAxes) {
  llvm::SmallVector<Axes> perFactor(rule.factors.size());
  factorAxes(rule.results[0][0], Axes(dimAxes), rule, mesh, perFactor);
  return perFactor;
}

class FactorProjectionTest : public ::testing::Test {
protected:
  void SetUp() override { loadDialects(context); }
  mlir::MLIRContext context;
};

TEST_F(FactorProjectionTest, MajorFactorTakesAxesWhileTheyDivide) {
  MeshAttr mesh = parseMesh(context, "dp = 2, tp = 2");
  // [batch 2, seq 16] merged, split over dp then tp: dp fills the batch, tp
  // goes to the sequence.
  auto perFactor = project(oneDimension({2, 16}), mesh, {"dp", "tp"});
  EXPECT_EQ(perFactor[0], Axes({"dp"}));
  EXPECT_EQ(perFactor[1], Axes({"tp"}));
  // A batch of 8 takes both.
  perFactor = project(oneDimension({8, 16}), mesh, {"dp", "tp"});
  EXPECT_EQ(perFactor[0], Axes({"dp", "tp"}));
  EXPECT_TRUE(perFactor[1].empty());
}

TEST_F(FactorProjectionTest, AxisLargerThanFactorSplitsIntoSubAxes) {
  MeshAttr mesh = parseMesh(context, "tp = 4");
  // 2 kv heads on a tp of 4: the heads take its major half, the query
  // group the minor half.
  auto perFactor = project(oneDimension({2, 4, 8}), mesh, {"tp"});
  EXPECT_EQ(perFactor[0], Axes({"tp:(1)2"}));
  EXPECT_EQ(perFactor[1], Axes({"tp:(2)2"}));
  EXPECT_TRUE(perFactor[2].empty());
}

TEST_F(FactorProjectionTest, MinorFactorBelowAnUnsplitMajorGetsNothing) {
  MeshAttr mesh = parseMesh(context, "tp = 2");
  // GPT-2's fused QKV: 3 parts, major, cannot be split in 2; the hidden
  // dimension below them is not a contiguous block of the dimension.
  auto perFactor = project(oneDimension({3, 64}), mesh, {"tp"});
  EXPECT_TRUE(perFactor[0].empty());
  EXPECT_TRUE(perFactor[1].empty());
}

TEST_F(FactorProjectionTest, LastMinorFactorSplitsUnevenly) {
  MeshAttr mesh = parseMesh(context, "dp = 2, tp = 2");
  // 5 rows over 2 devices: padded shards of 3.
  auto perFactor = project(oneDimension({5}), mesh, {"tp"});
  EXPECT_EQ(perFactor[0], Axes({"tp"}));
  // 5 over 4 still fits; 3 over 4 would leave a device with nothing at all.
  perFactor = project(oneDimension({5}), mesh, {"dp", "tp"});
  EXPECT_EQ(perFactor[0], Axes({"dp", "tp"}));
  perFactor = project(oneDimension({3}), mesh, {"dp", "tp"});
  EXPECT_EQ(perFactor[0], Axes({"dp"}));
  // A factor that is not minor everywhere is not split unevenly: another
  // dimension has a factor below it.
  ShardingRule rule = oneDimension({5});
  rule.factors.push_back({4, FactorKind::Parallel});
  rule.results.push_back({{0, 1}});
  perFactor = project(rule, mesh, {"tp"});
  EXPECT_TRUE(perFactor[0].empty());
}

} // namespace
