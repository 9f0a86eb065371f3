//===- LayoutTest.cpp - Blocks of sharded tensors: sub-axes, padding ------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Layout.h"
#include "../LayoutTestUtils.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

using namespace pmlir;
using namespace pmlir::unittest;

namespace {

TEST(MeshSubAxes, NamesParseAndResolve) {
  Mesh mesh = parseMesh("dp=2,tp=4");
  std::optional<SubAxis> major = mesh.subAxis("tp:(1)2"), minor = mesh.subAxis("tp:(2)2");
  ASSERT_TRUE(major && minor);
  EXPECT_EQ(major->index, 1);
  EXPECT_EQ(major->stride(4), 2);
  EXPECT_EQ(minor->stride(4), 1);
  EXPECT_FALSE(major->overlaps(*minor));
  EXPECT_TRUE(mesh.subAxis("tp")->overlaps(*minor));
  // A part that does not divide the axis, a malformed suffix, no such axis.
  EXPECT_FALSE(mesh.subAxis("tp:(3)2"));
  EXPECT_FALSE(mesh.subAxis("tp:(1)8"));
  EXPECT_FALSE(mesh.subAxis("tp:(0)2"));
  EXPECT_FALSE(mesh.subAxis("tp:(1)2x"));
  EXPECT_FALSE(mesh.subAxis("tp:(1"));
  EXPECT_FALSE(mesh.subAxis("tp:(99999999999999999999)2"));
  EXPECT_FALSE(mesh.subAxis("pp"));
  EXPECT_EQ(subAxisName("tp", 4, 1, 4), "tp");
  EXPECT_EQ(subAxisName("tp", 4, 2, 2), "tp:(2)2");
}

TEST(MeshSubAxes, BlockIndexReadsMajorPartsFirst) {
  Mesh mesh = parseMesh("dp=2,tp=4");
  // tp coordinate c: the major half is c / 2, the minor half c % 2.
  for (int64_t c = 0; c < 4; ++c) {
    std::vector<int64_t> coords = {0, c};
    EXPECT_EQ(mesh.blockIndex({"tp:(1)2"}, coords), c / 2);
    EXPECT_EQ(mesh.blockIndex({"tp:(2)2"}, coords), c % 2);
    EXPECT_EQ(mesh.blockIndex({"tp"}, coords), c);
    EXPECT_EQ(mesh.blockIndex({"tp:(1)2", "tp:(2)2"}, coords), c);
  }
  // Two axes on one dimension: the first is major.
  EXPECT_EQ(mesh.blockIndex({"dp", "tp"}, {1, 2}), 6);
  EXPECT_EQ(mesh.blockIndex({"tp", "dp"}, {1, 2}), 5);
  EXPECT_EQ(mesh.blockIndex({"ep"}, {0, 0}), -1);
}

TEST(BlockLayout, SubAxisSplitsKeepKvHeadsWithTheirQueries) {
  // 2 kv heads of 3 rows on a tp of 4: ranks 0, 1 hold head 0, ranks 2, 3
  // head 1 (the split Megatron's recipe writes as "tp:(1)2").
  Mesh mesh = parseMesh("tp=4");
  for (int64_t rank = 0; rank < 4; ++rank) {
    BlockLayout layout = decodeBlock(mesh, {{"tp:(1)2"}, {}}, {3, 5}, std::nullopt, rank);
    EXPECT_EQ(layout.global, (std::vector<int64_t>{6, 5}));
    EXPECT_EQ(layout.offset, (std::vector<int64_t>{3 * (rank / 2), 0}));
  }
}

TEST(BlockLayout, PaddedBlocksCopyOnlyWhatExists) {
  // 5 rows over tp = 2: blocks of 3, the second holds rows 3, 4 and padding.
  Mesh mesh = parseMesh("tp=2");
  std::vector<float> global(5 * 2);
  std::iota(global.begin(), global.end(), 1.0f);
  BlockLayout last = decodeBlock(mesh, {{"tp"}, {}}, {3, 2}, std::vector<int64_t>{5, 2}, 1);
  EXPECT_EQ(last.offset, (std::vector<int64_t>{3, 0}));
  std::vector<float> block(6, -1.0f);
  last.copyOut(global.data(), sizeof(float), block.data());
  EXPECT_EQ(block, (std::vector<float>{7, 8, 9, 10, -1, -1}));
  std::vector<float> pasted(10, 0.0f);
  last.pasteIn(block.data(), sizeof(float), pasted.data());
  EXPECT_EQ(pasted, (std::vector<float>{0, 0, 0, 0, 0, 0, 7, 8, 9, 10}));
  // A padded minor dimension: 3 columns over 2, blocks of 2.
  BlockLayout columns = decodeBlock(mesh, {{}, {"tp"}}, {2, 2}, std::vector<int64_t>{2, 3}, 1);
  std::vector<float> small = {1, 2, 3, 4, 5, 6}, out(4, -1.0f);
  columns.copyOut(small.data(), sizeof(float), out.data());
  EXPECT_EQ(out, (std::vector<float>{3, -1, 6, -1}));
}

TEST(BlockLayout, EveryRanksBlocksTileTheGlobalTensor) {
  Mesh mesh = parseMesh("dp=2,tp=4");
  std::vector<int64_t> global = {4, 6, 10};
  DimAxes dims = {{"dp"}, {"tp:(2)2"}, {"tp:(1)2"}};
  std::vector<int64_t> local = {2, 3, 5};
  std::vector<int32_t> data(4 * 6 * 10), rebuilt(data.size(), -1);
  std::iota(data.begin(), data.end(), 0);
  for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
    BlockLayout layout = decodeBlock(mesh, dims, local, global, rank);
    std::vector<int32_t> block(2 * 3 * 5);
    layout.copyOut(data.data(), sizeof(int32_t), block.data());
    layout.pasteIn(block.data(), sizeof(int32_t), rebuilt.data());
  }
  EXPECT_EQ(rebuilt, data);
}

TEST(BlockLayout, FusedPartsHoldEachRanksBlockOfEveryPart) {
  // GPT-2's fused QKV weight, 2 rows of 3 parts of 4 columns (q0..q3,
  // k0..k3, v0..v3), each part split over tp = 2: rank 1 holds columns 2, 3
  // of every part, 6 of the 12, in part order.
  Mesh mesh = parseMesh("tp=2");
  std::vector<float> global(2 * 12);
  std::iota(global.begin(), global.end(), 0.0f);
  std::string error;
  std::optional<BlockLayout> layout = BlockLayout::decode(
      mesh, {{}, {"tp"}}, {2, 6}, std::vector<int64_t>{2, 12}, {1}, error, {1, 3});
  ASSERT_TRUE(layout) << error;
  EXPECT_EQ(layout->shape, (std::vector<int64_t>{2, 12}));
  std::vector<float> block(12, -1.0f);
  layout->copyOut(global.data(), sizeof(float), block.data());
  EXPECT_EQ(block, (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23}));
  // Every rank's blocks rebuild the tensor, padded parts included (5
  // columns a part over tp = 2: blocks of 3, the last one padded).
  std::vector<float> fused(2 * 15), rebuilt(fused.size(), -1.0f);
  std::iota(fused.begin(), fused.end(), 0.0f);
  for (int64_t rank = 0; rank < 2; ++rank) {
    std::optional<BlockLayout> part = BlockLayout::decode(
        mesh, {{}, {"tp"}}, {2, 9}, std::vector<int64_t>{2, 15}, {rank}, error, {1, 3});
    ASSERT_TRUE(part) << error;
    std::vector<float> b(2 * 9, 0.0f);
    part->copyOut(fused.data(), sizeof(float), b.data());
    part->pasteIn(b.data(), sizeof(float), rebuilt.data());
  }
  EXPECT_EQ(rebuilt, fused);
  // Parts that do not divide the dimension are named.
  EXPECT_FALSE(BlockLayout::decode(mesh, {{"tp"}}, {4}, std::nullopt, {0}, error, {3}));
  EXPECT_EQ(error, "has dimension 0 of 4 elements here, which is not made of 3 equal parts");
}

TEST(HeadTailOrder, EachRankHoldsAHeadAndATailChunk) {
  // 8 positions on 2 ranks: rank 0 holds chunks 0 and 3, rank 1 chunks 1
  // and 2 (Megatron-LM's order).
  HeadTailOrder even{2, 8};
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < 8; ++i)
    positions.push_back(even.position(i));
  EXPECT_EQ(positions, (std::vector<int64_t>{0, 1, 6, 7, 2, 3, 4, 5}));
  EXPECT_EQ(even.run(0), 2);
  EXPECT_EQ(even.run(3), 1);
  // Blocks of 3 (a sequence of 6 that 2 * cp does not divide): heads of 2,
  // tails of 1, no padding; every position once.
  HeadTailOrder odd{2, 6};
  positions.clear();
  for (int64_t i = 0; i < 6; ++i)
    positions.push_back(odd.position(i));
  EXPECT_EQ(positions, (std::vector<int64_t>{0, 1, 5, 2, 3, 4}));
  HeadTailOrder four{4, 20};
  std::vector<bool> seen(20, false);
  for (int64_t i = 0; i < 20; ++i)
    seen[four.position(i)] = true;
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](bool b) { return b; }));
}

TEST(BlockLayout, HeadTailDimBlocksHoldAHeadAndATail) {
  // Token ids [2, 6] with the sequence on cp = 2 in head-tail order: rank 1
  // holds positions 2, 3, 4 of each row; the blocks rebuild the tensor.
  Mesh mesh = parseMesh("cp=2,dp=2");
  std::vector<int64_t> ids(12), rebuilt(12, -1);
  std::iota(ids.begin(), ids.end(), 0);
  for (int64_t rank = 0; rank < 4; ++rank) {
    BlockLayout layout =
        decodeBlock(mesh, {{}, {"cp"}}, {2, 3}, std::vector<int64_t>{2, 6}, rank, 1);
    std::vector<int64_t> block(6, -1);
    layout.copyOut(ids.data(), sizeof(int64_t), block.data());
    if (rank == 1) {
      EXPECT_EQ(block, (std::vector<int64_t>{2, 3, 4, 8, 9, 10}));
    }
    if (rank == 0) {
      EXPECT_EQ(block, (std::vector<int64_t>{0, 1, 5, 6, 7, 11}));
    }
    layout.pasteIn(block.data(), sizeof(int64_t), rebuilt.data());
  }
  EXPECT_EQ(rebuilt, ids);
  // Logits [1, 4, 2]: the ordered dimension outside the rows.
  std::vector<float> logits(8);
  std::iota(logits.begin(), logits.end(), 0.0f);
  BlockLayout rank0 =
      decodeBlock(mesh, {{}, {"cp"}, {}}, {1, 2, 2}, std::vector<int64_t>{1, 4, 2}, 0, 1);
  std::vector<float> block(4);
  rank0.copyOut(logits.data(), sizeof(float), block.data());
  EXPECT_EQ(block, (std::vector<float>{0, 1, 6, 7}));
  // Split over more than one axis, or over none: refused; a dimension the
  // tensor does not have too.
  std::string error;
  EXPECT_FALSE(BlockLayout::decode(mesh, {{"cp", "dp"}}, {2}, std::vector<int64_t>{8},
                                   mesh.coordinates(0), error, {}, 0));
  EXPECT_EQ(error, "has dimension 0 of 8 split over 'cp', 'dp': a sequence in head-tail order "
                   "(tfm.head_tail_dim) is split over one axis alone, in equal blocks");
  EXPECT_FALSE(BlockLayout::decode(mesh, {{}, {"cp"}}, {8, 2}, std::nullopt, mesh.coordinates(0),
                                   error, {}, 0));
  EXPECT_EQ(error, "has dimension 0 of 8 split over no axis: a sequence in head-tail order "
                   "(tfm.head_tail_dim) is split over one axis alone, in equal blocks");
  EXPECT_FALSE(
      BlockLayout::decode(mesh, {{"cp"}}, {2}, std::nullopt, mesh.coordinates(0), error, {}, 1));
  EXPECT_EQ(error, "has tfm.head_tail_dim 1 for 1 dimensions");
  // The same split without the order: contiguous blocks.
  EXPECT_EQ(decodeBlock(mesh, {{"cp"}}, {3}, std::vector<int64_t>{6}, 2).orderedDim, std::nullopt);
}

TEST(BlockLayout, MismatchesAreNamed) {
  Mesh mesh = parseMesh("tp=2");
  std::string error;
  EXPECT_FALSE(BlockLayout::decode(mesh, {{"cp"}}, {4}, std::nullopt, {0}, error));
  EXPECT_EQ(error, "tfm.sharding names mesh axis 'cp', which --mesh does not have");
  EXPECT_FALSE(BlockLayout::decode(mesh, {{"tp"}}, {4}, std::vector<int64_t>{9}, {0}, error));
  EXPECT_EQ(error, "has blocks of 4 in dimension 0, which is not 9 split in 2");
  EXPECT_FALSE(BlockLayout::decode(mesh, {{"tp"}, {}}, {4}, std::nullopt, {0}, error));
  EXPECT_EQ(error, "has 2 entries in tfm.sharding for 1 dimensions");
  EXPECT_FALSE(BlockLayout::decode(mesh, {{"tp"}}, {4}, std::vector<int64_t>{8, 1}, {0}, error));
  EXPECT_EQ(error, "has a global shape of rank 2 for 1 dimensions");
}

} // namespace
