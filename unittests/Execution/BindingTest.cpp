//===- BindingTest.cpp - Arguments bound from safetensors files -----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Binding.h"
#include "../LayoutTestUtils.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <unistd.h>

using namespace pmlir;
using namespace pmlir::unittest;
using namespace pmlir::exec;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "pmlir-bind-" + std::to_string(getpid()) + "-" + name;
}

/// A weights file with "h.0.w" [5, 4] = 0, 1, ... in f64 (converted on
/// binding) and "wte.weight" [3, 2] in f32; an inputs file with input_ids
/// [2] in i32.
class BindingTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::vector<double> w(20);
    std::iota(w.begin(), w.end(), 0.0);
    std::vector<float> wte = {1, 2, 3, 4, 5, 6};
    std::vector<int32_t> ids = {2, 0};
    std::string error;
    ASSERT_TRUE(writeSafeTensors(
        weightsPath,
        {{"h.0.w", DType::F64, {5, 4}, w.data()}, {"wte.weight", DType::F32, {3, 2}, wte.data()}},
        {}, error))
        << error;
    ASSERT_TRUE(
        writeSafeTensors(inputsPath, {{"input_ids", DType::I32, {2}, ids.data()}}, {}, error))
        << error;
    weights = SafeTensorsSet::open(weightsPath, error);
    inputs = SafeTensorsFile::open(inputsPath, error);
    ASSERT_TRUE(weights && inputs) << error;
    options.weights = weights.get();
    options.inputs = inputs.get();
  }
  void TearDown() override {
    std::remove(weightsPath.c_str());
    std::remove(inputsPath.c_str());
  }

  static TensorSpec spec(const std::string &name, std::vector<int64_t> shape,
                         ElementKind element = ElementKind::F32, Role role = Role::Param) {
    TensorSpec s;
    s.name = name;
    s.shape = std::move(shape);
    s.element = element;
    s.role = role;
    return s;
  }

  std::string weightsPath = tempPath("w.safetensors"), inputsPath = tempPath("i.safetensors");
  std::unique_ptr<SafeTensorsSet> weights;
  std::unique_ptr<SafeTensorsFile> inputs;
  BindOptions options;
};

TEST_F(BindingTest, BindsByNameWithConversions) {
  std::vector<BoundArgument> bound;
  std::string error;
  ASSERT_TRUE(bindArguments({spec("input_ids", {2}, ElementKind::I64, Role::Input),
                             spec("wte.weight", {3, 2}), spec("h.0.w", {5, 4})},
                            "forward", options, bound, error))
      << error;
  const int64_t *ids = static_cast<const int64_t *>(bound[0].data);
  EXPECT_EQ(ids[0], 2);
  EXPECT_EQ(ids[1], 0);
  // f32 is used in place from the mapping; f64 is converted into a copy.
  EXPECT_EQ(bound[1].data, weights->find("wte.weight")->data);
  EXPECT_EQ(static_cast<const float *>(bound[2].data)[19], 19.0f);
}

TEST_F(BindingTest, ShardedArgumentsGetThisRanksBlockWithZeroPadding) {
  // 5 rows over tp = 2: rank 1 holds rows 3, 4 and a zero row of padding.
  Mesh mesh = parseMesh("tp=2");
  TensorSpec w = spec("h.0.w", {3, 4});
  w.sharding = DimAxes{{"tp"}, {}};
  w.global = std::vector<int64_t>{5, 4};
  std::vector<TensorSpec> args{w};
  std::vector<BoundArgument> bound;
  std::string error;
  ASSERT_TRUE(layOut(args, "argument", "forward", &mesh, mesh.coordinates(1), error)) << error;
  ASSERT_TRUE(bindArguments(args, "forward", options, bound, error)) << error;
  const float *block = static_cast<const float *>(bound[0].data);
  EXPECT_EQ(std::vector<float>(block, block + 12),
            (std::vector<float>{12, 13, 14, 15, 16, 17, 18, 19, 0, 0, 0, 0}));
  // Without a mesh a sharded argument is refused.
  EXPECT_FALSE(layOut(args, "argument", "forward", nullptr, {}, error));
  EXPECT_EQ(error, "argument 'h.0.w' of @forward is sharded (tfm.sharding); run it with --mesh");
}

TEST_F(BindingTest, MissingWeightsAreListedWithTheClosestNames) {
  std::vector<BoundArgument> bound;
  std::string error;
  EXPECT_FALSE(bindArguments({spec("h.0.v", {5, 4}), spec("wte.weight", {3, 2})}, "forward",
                             options, bound, error));
  EXPECT_EQ(error, weightsPath + " lacks 1 of the weights of @forward:\n  'h.0.v' (closest: "
                                 "'h.0.w', 'wte.weight')\n(--init-missing gives them the "
                                 "seeded init)");
  // With initMissing they get the seeded init and a warning names them.
  std::string warned;
  options.initMissing = true;
  options.warn = [&](const std::string &message) { warned += message; };
  ASSERT_TRUE(bindArguments({spec("h.0.v", {5, 4}), spec("ln.bias", {4})}, "forward", options,
                            bound, error))
      << error;
  EXPECT_TRUE(bound[0].seeded);
  EXPECT_EQ(static_cast<const float *>(bound[1].data)[3], 0.0f);
  EXPECT_EQ(warned, "--init-missing: " + weightsPath +
                        " lacks these weights, which get the seeded init: h.0.v, ln.bias");
}

TEST_F(BindingTest, InputsAndLabelsAreNeverSeeded) {
  std::vector<BoundArgument> bound;
  std::string error;
  options.initMissing = true;
  EXPECT_FALSE(bindArguments({spec("labels", {2}, ElementKind::I64, Role::Label)}, "forward",
                             options, bound, error));
  EXPECT_EQ(error, "label 'labels' (argument #0, [2]) is in neither --inputs nor --weights");
  EXPECT_FALSE(bindArguments({spec("input_ids", {3}, ElementKind::I64, Role::Input)}, "forward",
                             options, bound, error));
  EXPECT_EQ(error, "tensor 'input_ids' in " + inputsPath +
                       ": expected shape [3] (argument #0 of @forward), got [2]");
}

TEST_F(BindingTest, SeededParametersAreTheSameOnAnyNumberOfThreads) {
  // Without --weights every parameter gets the seeded init, each tensor on
  // one of the threads (the largest first): the values of one thread.
  std::vector<TensorSpec> params = {spec("h.0.w", {64, 33}), spec("h.0.bias", {33}),
                                    spec("wte", {300, 7}), spec("ln.weight", {7}),
                                    spec("h.1.w", {5, 9})};
  std::vector<std::vector<float>> values;
  for (int threads : {1, 3, 8}) {
    BindOptions seeded;
    seeded.seed = 11;
    seeded.threads = threads;
    std::vector<BoundArgument> bound;
    std::string error;
    ASSERT_TRUE(bindArguments(params, "forward", seeded, bound, error)) << error;
    std::vector<float> all;
    for (const BoundArgument &a : bound) {
      const float *v = static_cast<const float *>(a.data);
      all.insert(all.end(), v, v + elementCount(a.shape));
    }
    values.push_back(all);
  }
  EXPECT_EQ(values[0], values[1]);
  EXPECT_EQ(values[0], values[2]);
  std::vector<float> wte(300 * 7);
  seededInit("wte", wte.data(), 300 * 7, 2, 11);
  EXPECT_TRUE(std::equal(wte.begin(), wte.end(), values[0].begin() + 64 * 33 + 33));
}

TEST(SeededInit, DependsOnTheNameAndSeedOnly) {
  std::vector<float> a(8), b(8), c(8);
  seededInit("h.0.w", a.data(), 8, 2, 7);
  seededInit("h.0.w", b.data(), 8, 2, 7);
  seededInit("h.1.w", c.data(), 8, 2, 7);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_EQ(checkpointNames("model.norm.weight"),
            (std::vector<std::string>{"model.norm.weight", "transformer.model.norm.weight",
                                      "norm.weight"}));
}

} // namespace

/// Tensors the model does not use: those that provably change nothing
/// (Hugging Face's rebuilt buffers, a tied copy of a used tensor) are told
/// apart from those that change the model.
TEST(UnusedTensorsTest, OnlyWhatChangesNothingIsHarmless) {
  std::string path = tempPath("unused.safetensors"), error;
  std::vector<float> wte = {1, 2, 3, 4}, head = wte, other = {1, 2, 3, 5}, mask = {1, 0, 1, 1};
  std::vector<uint16_t> headBf16 = {0x3f80, 0x4000, 0x4040, 0x4080}; // 1, 2, 3, 4
  ASSERT_TRUE(
      writeSafeTensors(path,
                       {{"transformer.wte.weight", DType::F32, {2, 2}, wte.data()},
                        {"lm_head.weight", DType::BF16, {2, 2}, headBf16.data()},
                        {"transformer.h.0.attn.bias", DType::F32, {1, 1, 2, 2}, mask.data()},
                        {"untied.weight", DType::F32, {2, 2}, other.data()},
                        {"h.0.attn.c_attn.bias", DType::F32, {4}, other.data()}},
                       {}, error))
      << error;
  std::unique_ptr<SafeTensorsSet> weights = SafeTensorsSet::open(path, error);
  ASSERT_TRUE(weights) << error;
  std::vector<UnusedTensor> unused = unusedTensors(*weights, {"wte.weight"});
  std::map<std::string, std::string> why;
  for (const UnusedTensor &t : unused)
    why[t.name] = t.harmless;
  EXPECT_EQ(why.size(), 4u);
  EXPECT_EQ(why.count("transformer.wte.weight"), 0u);
  EXPECT_NE(why["lm_head.weight"].find("equal to 'transformer.wte.weight'"), std::string::npos);
  EXPECT_NE(why["transformer.h.0.attn.bias"].find("mask"), std::string::npos);
  EXPECT_EQ(why["untied.weight"], "");
  // A projection's bias is no mask buffer.
  EXPECT_EQ(why["h.0.attn.c_attn.bias"], "");
  std::remove(path.c_str());
}
