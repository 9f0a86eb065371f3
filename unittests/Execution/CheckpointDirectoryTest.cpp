//===- CheckpointDirectoryTest.cpp - Blocks saved on one mesh, read on another
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/CheckpointDirectory.h"
#include "../LayoutTestUtils.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>

using namespace pmlir;
using namespace pmlir::unittest;
using namespace pmlir::exec;

namespace {

class CheckpointDirectoryTest : public ::testing::Test {
protected:
  void SetUp() override {
    root =
        std::filesystem::temp_directory_path() / ("pmlir-ckpt-test-" + std::to_string(::getpid()));
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root);
    dir = (root / "ck").string();
  }
  void TearDown() override { std::filesystem::remove_all(root); }

  /// Saves a [7, 5] tensor 0, 1, ..., 34 split by rows over tp = 3 (blocks
  /// of 3 rows, the last padded with a row of -1) and a scalar held whole.
  void save() {
    Mesh mesh = parseMesh("tp=3");
    std::string error;
    ASSERT_TRUE(beginCheckpointDirectory(dir, error)) << error;
    for (int64_t rank = 0; rank < 3; ++rank) {
      BlockLayout block = decodeBlock(mesh, {{"tp"}, {}}, {3, 5}, std::vector<int64_t>{7, 5}, rank);
      blocks[rank].assign(15, -1.0f);
      block.forEachRow([&](int64_t at, int64_t into, int64_t n) {
        for (int64_t k = 0; k < n; ++k)
          blocks[rank][into + k] = static_cast<float>(at + k);
      });
      std::vector<ShardToWrite> shards = {{"w", true, block, {3, 5}, blocks[rank].data()}};
      if (rank == 0)
        shards.push_back({"step", false, std::nullopt, {}, &step});
      ASSERT_TRUE(writeCheckpointShards(dir, rank, shards, error)) << error;
    }
    ASSERT_TRUE(commitCheckpointDirectory(dir, mesh.spec(), /*files=*/3, error)) << error;
  }

  std::filesystem::path root;
  std::string dir;
  std::vector<float> blocks[3];
  float step = 4.0f;
};

TEST_F(CheckpointDirectoryTest, ReadsWholeAndOnAnotherMesh) {
  save();
  EXPECT_FALSE(std::filesystem::exists(dir + ".saving"));
  std::string error;
  std::unique_ptr<CheckpointDirectory> checkpoint = CheckpointDirectory::open(dir, error);
  ASSERT_TRUE(checkpoint) << error;
  EXPECT_TRUE(checkpoint->verify(0, 1, error)) << error;
  const CheckpointDirectory::Tensor *w = checkpoint->find("w");
  ASSERT_TRUE(w);
  EXPECT_EQ(w->shape, (std::vector<int64_t>{7, 5}));
  EXPECT_EQ(w->pieces.size(), 3u);

  // Whole: every element from its piece, the padding row left out.
  std::vector<float> whole(35, -2.0f);
  uint64_t bytes = 0;
  ASSERT_TRUE(checkpoint->read("w", nullptr, whole.data(), bytes, error)) << error;
  std::vector<float> expected(35);
  std::iota(expected.begin(), expected.end(), 0.0f);
  EXPECT_EQ(whole, expected);
  EXPECT_EQ(bytes, 35 * sizeof(float));

  // Columns split over tp = 2 (blocks of 3, the last padded): each block
  // reads across the three row pieces, its padding untouched.
  Mesh tp2 = parseMesh("tp=2");
  for (int64_t rank = 0; rank < 2; ++rank) {
    BlockLayout block = decodeBlock(tp2, {{}, {"tp"}}, {7, 3}, std::vector<int64_t>{7, 5}, rank);
    std::vector<float> out(21, -2.0f);
    bytes = 0;
    ASSERT_TRUE(checkpoint->read("w", &block, out.data(), bytes, error)) << error;
    for (int64_t r = 0; r < 7; ++r)
      for (int64_t c = 0; c < 3; ++c) {
        int64_t column = rank * 3 + c;
        EXPECT_EQ(out[r * 3 + c], column < 5 ? static_cast<float>(r * 5 + column) : -2.0f);
      }
    EXPECT_EQ(bytes, (rank == 0 ? 21 : 14) * sizeof(float));
  }
  float resumed = 0;
  ASSERT_TRUE(checkpoint->read("step", nullptr, &resumed, bytes, error)) << error;
  EXPECT_EQ(resumed, 4.0f);
}

TEST_F(CheckpointDirectoryTest, SavesOverTheOldAndRefusesForeignFiles) {
  save();
  step = 5.0f;
  save();
  std::string error;
  std::unique_ptr<CheckpointDirectory> checkpoint = CheckpointDirectory::open(dir, error);
  ASSERT_TRUE(checkpoint) << error;
  float resumed = 0;
  uint64_t bytes = 0;
  ASSERT_TRUE(checkpoint->read("step", nullptr, &resumed, bytes, error)) << error;
  EXPECT_EQ(resumed, 5.0f);
  EXPECT_FALSE(std::filesystem::exists(dir + ".saving"));
  EXPECT_TRUE(checkCheckpointTarget(dir, error)) << error;
  std::ofstream(dir + "/notes.txt") << "mine";
  EXPECT_FALSE(checkCheckpointTarget(dir, error));
  EXPECT_NE(error.find("notes.txt"), std::string::npos) << error;
}

/// Index entries that would place elements outside the tensor or the
/// piece are refused when the index is read, never followed.
TEST_F(CheckpointDirectoryTest, RefusesCorruptLayouts) {
  save();
  nlohmann::json index;
  std::ifstream(dir + "/index.json") >> index;
  auto openWith = [&](const std::function<void(nlohmann::json &)> &edit) {
    nlohmann::json edited = index;
    edit(edited);
    std::ofstream(dir + "/index.json") << edited.dump();
    std::string error;
    EXPECT_FALSE(CheckpointDirectory::open(dir, error));
    return error;
  };
  auto piece = [](nlohmann::json &j) -> nlohmann::json & { return j["tensors"]["w"]["pieces"][1]; };
  // The view must hold the tensor's elements.
  EXPECT_NE(openWith([&](nlohmann::json &j) { piece(j)["global"][0] = 90; }).find("does not hold"),
            std::string::npos);
  // A block wider than its view, or starting past its padding: the flat
  // indices of its rows would leave the tensor.
  EXPECT_NE(openWith([&](nlohmann::json &j) { piece(j)["local"][0] = 9; }).find("does not lie"),
            std::string::npos);
  EXPECT_NE(
      openWith([&](nlohmann::json &j) { piece(j)["offset"][0] = 1 << 30; }).find("does not lie"),
      std::string::npos);
  // A negative offset, a file beyond the list, no checksum, another format.
  EXPECT_NE(openWith([&](nlohmann::json &j) { piece(j)["offset"][0] = -3; }).find("whole numbers"),
            std::string::npos);
  EXPECT_NE(openWith([&](nlohmann::json &j) { piece(j)["file"] = 7; }).find("names no file"),
            std::string::npos);
  EXPECT_NE(openWith([&](nlohmann::json &j) { piece(j).erase("crc32"); }).find("no checksum"),
            std::string::npos);
  EXPECT_NE(openWith([&](nlohmann::json &j) { j["format"] = "x"; }).find("format"),
            std::string::npos);
  // A file name that is no rank file's (a path out of the directory).
  EXPECT_NE(openWith([&](nlohmann::json &j) {
              j["files"][1] = "../rank-00001.safetensors";
            }).find("no rank file's name"),
            std::string::npos);
  // A head-tail order whose blocks are not equal.
  EXPECT_NE(openWith([&](nlohmann::json &j) {
              piece(j)["ordered_dim"] = 0;
              piece(j)["order"] = {2, 7};
            }).find("head-tail"),
            std::string::npos);
  // A file that does not hold the piece the index says: found when read.
  std::ofstream(dir + "/index.json") << index.dump();
  std::string error;
  std::unique_ptr<CheckpointDirectory> checkpoint = CheckpointDirectory::open(dir, error);
  ASSERT_TRUE(checkpoint) << error;
  std::filesystem::copy_file(dir + "/rank-00000.safetensors", dir + "/rank-00001.safetensors",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_FALSE(checkpoint->verify(0, 1, error));
  EXPECT_NE(error.find("does not match the checksum"), std::string::npos) << error;
}

} // namespace
