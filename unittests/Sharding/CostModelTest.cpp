//===- CostModelTest.cpp - Ring bytes and time of collectives ------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/CostModel.h"

#include <gtest/gtest.h>

using namespace pmlir::sharding;

namespace {

TEST(CostModelTest, RingWireBytes) {
  CostModel model;
  // 2(n-1)/n of an all_reduce's tensor; (n-1)/n of a gather's buffer.
  EXPECT_EQ(model.cost(CollectiveKind::AllReduce, 8192, {"tp"}, 4).wireBytes, 12288);
  EXPECT_EQ(model.cost(CollectiveKind::AllGather, 8192, {"tp"}, 4).wireBytes, 6144);
  EXPECT_EQ(model.cost(CollectiveKind::ReduceScatter, 8192, {"tp"}, 4).wireBytes, 6144);
  EXPECT_EQ(model.cost(CollectiveKind::AllToAll, 8192, {"tp"}, 2).wireBytes, 4096);
  EXPECT_EQ(model.cost(CollectiveKind::Send, 100, {"pp"}, 2).wireBytes, 100);
  EXPECT_EQ(model.cost(CollectiveKind::AllSlice, 8192, {"tp"}, 4).wireBytes, 0);
  EXPECT_EQ(model.cost(CollectiveKind::Recv, 8192, {"pp"}, 2).wireBytes, 0);
  // A reduce_scatter and an all_gather cost what an all_reduce costs.
  CollectiveCost split = model.cost(CollectiveKind::ReduceScatter, 8192, {"tp"}, 4);
  split += model.cost(CollectiveKind::AllGather, 8192, {"tp"}, 4);
  CollectiveCost whole = model.cost(CollectiveKind::AllReduce, 8192, {"tp"}, 4);
  EXPECT_EQ(split.wireBytes, whole.wireBytes);
  EXPECT_DOUBLE_EQ(split.seconds, whole.seconds);
  // A group of one moves nothing and takes no time.
  EXPECT_EQ(model.cost(CollectiveKind::AllReduce, 8192, {"tp"}, 1).wireBytes, 0);
  EXPECT_EQ(model.cost(CollectiveKind::AllReduce, 8192, {"tp"}, 1).seconds, 0);
}

TEST(CostModelTest, TimeIsStepsTimesLatencyPlusBytesOverBandwidth) {
  std::string error;
  std::optional<CostModel> model = CostModel::parse("tp=50:10,dp=25:20,*=200:1", error);
  ASSERT_TRUE(model) << error;
  // 6 steps of 10 us and 12288 bytes at 50 GB/s.
  EXPECT_DOUBLE_EQ(model->cost(CollectiveKind::AllReduce, 8192, {"tp"}, 4).seconds,
                   6 * 10e-6 + 12288 / 50e9);
  // A sub-axis runs on its axis' link.
  EXPECT_DOUBLE_EQ(model->cost(CollectiveKind::AllGather, 8192, {"tp:(1)2"}, 2).seconds,
                   1 * 10e-6 + 4096 / 50e9);
  // A group over two axes runs at the slowest link's pace.
  EXPECT_DOUBLE_EQ(model->cost(CollectiveKind::AllReduce, 8000, {"tp", "dp"}, 4).seconds,
                   6 * 20e-6 + 12000 / 25e9);
  // Axes not named use `*`.
  EXPECT_DOUBLE_EQ(model->cost(CollectiveKind::Send, 1000, {"pp"}, 2).seconds, 1e-6 + 1000 / 200e9);
  // Without links: 100 GB/s and 5 us.
  CostModel fallback;
  EXPECT_DOUBLE_EQ(fallback.cost(CollectiveKind::AllReduce, 8192, {"tp"}, 4).seconds,
                   6 * 5e-6 + 12288 / 100e9);
}

TEST(CostModelTest, MalformedLinks) {
  for (const char *spec : {"tp", "tp=50", "tp=:1", "=50:1", "tp=0:1", "tp=-1:1", "tp=50:-1",
                           "tp=fast:1", "tp=50:1:2", "tp=inf:1"}) {
    std::string error;
    EXPECT_FALSE(CostModel::parse(spec, error)) << spec;
    EXPECT_NE(error.find("is not AXIS=GBPS:US"), std::string::npos) << spec << ": " << error;
  }
  std::string error;
  EXPECT_FALSE(CostModel::parse("tp=1:1,tp=2:2", error));
  EXPECT_EQ(error, "link of axis 'tp' given twice");
  EXPECT_TRUE(CostModel::parse("", error));
}

} // namespace
