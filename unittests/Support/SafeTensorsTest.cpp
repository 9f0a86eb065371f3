//===- SafeTensorsTest.cpp - safetensors reading and writing --------------===//
//
// Part of pmlir.
//
// Files are built byte by byte from the format's definition, independently of
// the writer, and corrupt files are built by damaging valid ones.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/SafeTensors.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

using namespace pmlir;

namespace {

std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "pmlir-st-" + std::to_string(getpid()) + "-" + name;
}

/// A safetensors file from its parts: length, header text, data bytes.
std::string fileBytes(const std::string &header, const std::string &data) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i)
    out[i] = static_cast<char>(n >> (8 * i));
  return out + header + data;
}

void writeFile(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string floatsAsBytes(std::initializer_list<float> values) {
  std::string out;
  for (float v : values)
    out.append(reinterpret_cast<const char *>(&v), sizeof(v));
  return out;
}

/// Whether SafeTensorsFile::open refuses a file of these bytes with an error
/// that contains `fault`.
::testing::AssertionResult refusedWith(const std::string &bytes, const std::string &fault) {
  std::string path = tempPath("corrupt");
  writeFile(path, bytes);
  std::string error;
  auto file = SafeTensorsFile::open(path, error);
  std::remove(path.c_str());
  if (file)
    return ::testing::AssertionFailure() << "opened a corrupt file";
  if (error.find(fault) == std::string::npos)
    return ::testing::AssertionFailure() << "error '" << error << "' lacks '" << fault << "'";
  return ::testing::AssertionSuccess();
}

} // namespace

TEST(SafeTensors, ReadsAFileBuiltFromTheSpec) {
  std::string header = R"({"__metadata__":{"format":"pt"},)"
                       R"("b":{"dtype":"F32","shape":[3],"data_offsets":[8,20]},)"
                       R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  std::string path = tempPath("spec");
  writeFile(path, fileBytes(header, floatsAsBytes({1, 2, 3, 4, 5})));
  std::string error;
  auto file = SafeTensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  ASSERT_EQ(file->tensors().size(), 2u);
  EXPECT_EQ(file->tensors()[0].name, "a"); // ordered by data offset
  const TensorView *b = file->find("b");
  ASSERT_TRUE(b);
  EXPECT_EQ(b->shape, (std::vector<int64_t>{3}));
  float out[3];
  ASSERT_TRUE(convertToF32(*b, out, error)) << error;
  EXPECT_EQ(out[0], 3.0f);
  EXPECT_EQ(out[2], 5.0f);
  EXPECT_EQ(file->metadata().at("format"), "pt");
  EXPECT_EQ(file->find("c"), nullptr);
  std::remove(path.c_str());
}

TEST(SafeTensors, WriterOutputFollowsTheSpecAndReadsBack) {
  std::string path = tempPath("write");
  float w[6] = {0.5f, -1, 2, 3, 4, 5};
  int64_t ids[2] = {7, 50256};
  std::string error;
  ASSERT_TRUE(writeSafeTensors(
      path, {{"w", DType::F32, {2, 3}, w}, {"input_ids", DType::I64, {1, 2}, ids}}, {}, error))
      << error;
  std::string bytes = readFile(path);
  uint64_t headerBytes = 0;
  for (int i = 7; i >= 0; --i)
    headerBytes = (headerBytes << 8) | static_cast<uint8_t>(bytes[i]);
  EXPECT_EQ(headerBytes % 8, 0u) << "header padded to 8 bytes";
  std::string header = bytes.substr(8, headerBytes);
  EXPECT_NE(header.find(R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]})"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find(R"("input_ids":{"dtype":"I64","shape":[1,2],"data_offsets":[24,40]})"),
            std::string::npos)
      << header;
  EXPECT_EQ(bytes.size(), 8 + headerBytes + 40);

  auto file = SafeTensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  const TensorView *t = file->find("input_ids");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->dtype, DType::I64);
  EXPECT_EQ(reinterpret_cast<const int64_t *>(t->data)[1], 50256);
  std::remove(path.c_str());
}

TEST(SafeTensors, FailedWriteLeavesExistingFileUntouched) {
  std::string error;
  float x = 1;
  EXPECT_FALSE(
      writeSafeTensors("/nonexistent-dir/x.safetensors", {{"x", DType::F32, {1}, &x}}, {}, error));
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
  std::string path = tempPath("keep");
  writeFile(path, "keep");
  EXPECT_FALSE(writeSafeTensors(path, {{"x", DType::F32, {-1}, &x}}, {}, error));
  EXPECT_EQ(readFile(path), "keep");
  std::remove(path.c_str());
}

TEST(SafeTensors, HalfAndBfloat16Conversion) {
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0xc000), -2.0f);
  EXPECT_EQ(halfToFloat(0x7bff), 65504.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24));    // smallest subnormal
  EXPECT_EQ(halfToFloat(0x03ff), std::ldexp(1023.0f, -24)); // largest subnormal
  EXPECT_EQ(halfToFloat(0x8000), -0.0f);
  EXPECT_TRUE(std::isinf(halfToFloat(0x7c00)));
  EXPECT_TRUE(std::isnan(halfToFloat(0x7e00)));
  EXPECT_EQ(bfloat16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(bfloat16ToFloat(0xc0a0), -5.0f);
  EXPECT_EQ(bfloat16ToFloat(0x3e20), 0.15625f);

  std::string path = tempPath("half");
  uint16_t halfs[3] = {0x3c00, 0x3800, 0xbc00}; // 1, 0.5, -1
  uint16_t bf16s[2] = {0x4049, 0xbf00};         // 3.140625, -0.5
  double f64s[2] = {0.25, -8};
  std::string error;
  ASSERT_TRUE(writeSafeTensors(
      path,
      {{"h", DType::F16, {3}, halfs}, {"b", DType::BF16, {2}, bf16s}, {"d", DType::F64, {2}, f64s}},
      {}, error));
  auto file = SafeTensorsFile::open(path, error);
  ASSERT_TRUE(file) << error;
  float out[3];
  ASSERT_TRUE(convertToF32(*file->find("h"), out, error));
  EXPECT_EQ(out[1], 0.5f);
  EXPECT_EQ(out[2], -1.0f);
  ASSERT_TRUE(convertToF32(*file->find("b"), out, error));
  EXPECT_EQ(out[0], 3.140625f);
  ASSERT_TRUE(convertToF32(*file->find("d"), out, error));
  EXPECT_EQ(out[1], -8.0f);
  std::remove(path.c_str());
}

TEST(SafeTensors, IntegerTensorsDoNotConvertToFloat) {
  int32_t v[1] = {3};
  TensorView view{"ids", DType::I32, {1}, reinterpret_cast<const uint8_t *>(v), 4};
  float out[1];
  std::string error;
  EXPECT_FALSE(convertToF32(view, out, error));
  EXPECT_EQ(error, "tensor 'ids': dtype I32 is not a floating-point type");
}

TEST(SafeTensors, CorruptFilesAreRefusedWithTheFault) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  const std::string data = floatsAsBytes({1, 2});

  EXPECT_TRUE(refusedWith("abc", "truncated: 3 bytes"));
  // Header length larger than the file.
  std::string big = fileBytes(ok, data);
  big[0] = static_cast<char>(0xff);
  big[1] = static_cast<char>(0xff);
  EXPECT_TRUE(refusedWith(big, "corrupt header: it claims 65535 bytes"));
  // The file cut in the middle of the header.
  EXPECT_TRUE(refusedWith(fileBytes(ok, data).substr(0, 20), "corrupt header"));
  EXPECT_TRUE(refusedWith(fileBytes("{not json", ""), "not valid JSON"));
  EXPECT_TRUE(refusedWith(fileBytes("[1,2]", ""), "corrupt header: it does not start with '{'"));
  // A byte-order mark or a space before the '{', and NUL padding after the
  // JSON, are not the format's (which pads with spaces); the JSON reader
  // took all three.
  EXPECT_TRUE(refusedWith(fileBytes("\xEF\xBB\xBF" + ok, data), "does not start with '{'"));
  EXPECT_TRUE(refusedWith(fileBytes(" " + ok, data), "does not start with '{'"));
  EXPECT_TRUE(refusedWith(fileBytes(ok + std::string(3, '\0'), data),
                          "corrupt header: a NUL byte at header byte " + std::to_string(ok.size()) +
                              " (the format pads with spaces)"));
  {
    std::string path = tempPath("padded");
    writeFile(path, fileBytes(ok + "   ", data));
    std::string error;
    EXPECT_TRUE(SafeTensorsFile::open(path, error)) << error;
    std::remove(path.c_str());
  }
  // A tensor named twice, or a key twice in an entry: the JSON reader kept
  // the last silently.
  EXPECT_TRUE(refusedWith(fileBytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                    R"("a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                    data),
                          "corrupt header: the key 'a' appears twice in one object"));
  EXPECT_TRUE(refusedWith(
      fileBytes(R"({"a":{"dtype":"F32","shape":[2],"shape":[1],"data_offsets":[0,8]}})", data),
      "corrupt header: the key 'shape' appears twice in one object"));
  // One tensor 'a' with this header entry, over 8 bytes of data.
  auto refusedEntry = [&](const std::string &entry, const std::string &fault) {
    return refusedWith(fileBytes(R"({"a":)" + entry + "}", data), fault);
  };
  EXPECT_TRUE(
      refusedEntry(R"({"shape":[2],"data_offsets":[0,8]})", "tensor 'a': missing string 'dtype'"));
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F31","shape":[2],"data_offsets":[0,8]})",
                           "tensor 'a': unknown dtype 'F31'"));
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})",
                           "not a non-negative integer"));
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F32","shape":[2]})", "missing 'data_offsets'"));
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})",
                           "'data_offsets' [0] is not a pair [begin, end]"));
  // Negative and fractional offsets are named as such, not as missing.
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})",
                           "'data_offsets' [-8,0] holds -8, which is not a non-negative integer"));
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8.0]})",
                           "holds 8.0, which is not a non-negative integer"));
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F32","shape":[2],"data_offsets":[0,16]})",
                           "data_offsets [0, 16] outside the 8-byte data section"));
  EXPECT_TRUE(refusedEntry(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})",
                           "data_offsets hold 8 bytes, but dtype F32 and shape [3] need 12"));
  EXPECT_TRUE(refusedWith(fileBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                    R"("b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                    data),
                          "overlap"));
  // The error names both tensors of an overlap.
  EXPECT_TRUE(refusedWith(fileBytes(R"({"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},)"
                                    R"("a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                    data),
                          "tensors 'a' and 'b' overlap"));
  EXPECT_TRUE(
      refusedWith(fileBytes(R"({"__metadata__":{"n":1}})", ""), "metadata 'n' is not a string"));
  std::string error;
  EXPECT_FALSE(SafeTensorsFile::open("/nonexistent.safetensors", error));
  EXPECT_NE(error.find("cannot open: No such file or directory"), std::string::npos);
}

TEST(SafeTensors, TensorsMustCoverTheDataSectionExactly) {
  const std::string data = floatsAsBytes({1, 2, 3});
  // A header length one byte short: the header still parses (its padding
  // lost a space), but every tensor would start one byte early.
  std::string header = R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,12]}} )";
  std::string shifted = fileBytes(header, data);
  shifted[0] = static_cast<char>(header.size() - 1);
  EXPECT_TRUE(refusedWith(shifted, "the tensors cover 12 of the 13 bytes of the data section"));
  // Bytes after the last tensor, and a hole between two.
  EXPECT_TRUE(refusedWith(fileBytes(header, data + "xxxx"), "cover 12 of the 16 bytes"));
  EXPECT_TRUE(
      refusedWith(fileBytes(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                            R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                            data),
                  "bytes [4, 8) of the data section before tensor 'b' belong to no tensor"));
}

TEST(SafeTensors, DeeplyNestedHeadersAreRefusedBeforeParsing) {
  // A 100,000-deep shape once overflowed the stack while its error was
  // formatted.
  std::string deep = R"({"a":{"dtype":"F32","shape":)" + std::string(100000, '[') +
                     std::string(100000, ']') + R"(,"data_offsets":[0,0]}})";
  EXPECT_TRUE(refusedWith(fileBytes(deep, ""), "corrupt header: JSON nested 100002 deep"));
  // Brackets inside strings do not count.
  std::string named =
      R"({"[[[[[[[[[[[[[[[[[[[[":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string error;
  std::string bytes = fileBytes(named, floatsAsBytes({1}));
  EXPECT_TRUE(SafeTensorsFile::parse("mem", reinterpret_cast<const uint8_t *>(bytes.data()),
                                     bytes.size(), error))
      << error;
}

TEST(SafeTensors, ParseReadsBytesInMemory) {
  std::string bytes = fileBytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                                floatsAsBytes({1.5f, -2}));
  std::string error;
  auto file = SafeTensorsFile::parse("buffer", reinterpret_cast<const uint8_t *>(bytes.data()),
                                     bytes.size(), error);
  ASSERT_TRUE(file) << error;
  float out[2];
  ASSERT_TRUE(convertToF32(*file->find("a"), out, error));
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_FALSE(SafeTensorsFile::parse("buffer", nullptr, 0, error));
  EXPECT_EQ(error, "buffer: truncated: 0 bytes, shorter than the 8-byte header length");
}

namespace {

/// A directory of its own with a two-shard checkpoint: "a" [2] in shard 1,
/// "b" [1] and "c" [1] in shard 2, and the index naming them.
class SafeTensorsSetTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir = tempPath("set");
    ASSERT_EQ(::system(("rm -rf '" + dir + "' && mkdir -p '" + dir + "'").c_str()), 0);
    float a[2] = {1, 2}, b = 3, c = 4;
    std::string error;
    ASSERT_TRUE(writeSafeTensors(dir + "/model-00001-of-00002.safetensors",
                                 {{"a", DType::F32, {2}, a}}, {}, error))
        << error;
    ASSERT_TRUE(writeSafeTensors(dir + "/model-00002-of-00002.safetensors",
                                 {{"b", DType::F32, {1}, &b}, {"c", DType::F32, {1}, &c}}, {},
                                 error))
        << error;
    index(R"({"metadata": {"total_size": 16}, "weight_map": {
      "a": "model-00001-of-00002.safetensors",
      "b": "model-00002-of-00002.safetensors",
      "c": "model-00002-of-00002.safetensors"}})");
  }
  void TearDown() override { (void)::system(("rm -rf '" + dir + "'").c_str()); }
  void index(const std::string &text) { writeFile(dir + "/model.safetensors.index.json", text); }
  std::string open(const std::string &path) {
    std::string error;
    std::unique_ptr<SafeTensorsSet> set = SafeTensorsSet::open(path, error);
    EXPECT_EQ(set == nullptr, !error.empty());
    return error;
  }
  std::string dir;
};

} // namespace

TEST_F(SafeTensorsSetTest, IndexAndDirectoryFindEveryShardsTensors) {
  for (const std::string &path : {dir + "/model.safetensors.index.json", dir}) {
    std::string error;
    std::unique_ptr<SafeTensorsSet> set = SafeTensorsSet::open(path, error);
    ASSERT_TRUE(set) << error;
    EXPECT_EQ(set->files().size(), 2u);
    EXPECT_EQ(set->tensors().size(), 3u);
    const SafeTensorsFile *file = nullptr;
    const TensorView *c = set->find("c", &file);
    ASSERT_TRUE(c && file);
    EXPECT_EQ(*reinterpret_cast<const float *>(c->data), 4.0f);
    EXPECT_NE(file->path().find("00002-of"), std::string::npos);
    EXPECT_EQ(set->find("d"), nullptr);
  }
}

TEST_F(SafeTensorsSetTest, ASingleFileInTheDirectoryComesFirst) {
  float x = 5;
  std::string error;
  ASSERT_TRUE(
      writeSafeTensors(dir + "/model.safetensors", {{"x", DType::F32, {1}, &x}}, {}, error));
  std::unique_ptr<SafeTensorsSet> set = SafeTensorsSet::open(dir, error);
  ASSERT_TRUE(set) << error;
  EXPECT_EQ(set->tensors().size(), 1u);
  EXPECT_TRUE(set->find("x"));
}

TEST_F(SafeTensorsSetTest, BadIndexesAreRefusedWithTheFault) {
  EXPECT_NE(open(dir + "/nothing").find("No such file"), std::string::npos);
  index("not json");
  EXPECT_NE(open(dir).find("not a JSON object"), std::string::npos);
  index(R"({"metadata": {}})");
  EXPECT_NE(open(dir).find("no \"weight_map\" object"), std::string::npos);
  index(R"({"weight_map": {"a": 7}})");
  EXPECT_NE(open(dir).find("the file of 'a' is not a string"), std::string::npos);
  index(R"({"weight_map": {"a": "../model-00001-of-00002.safetensors"}})");
  EXPECT_NE(open(dir).find("not a file name beside the index"), std::string::npos);
  index(R"({"weight_map": {"a": "missing.safetensors"}})");
  EXPECT_NE(open(dir).find("weight_map names"), std::string::npos);
  index(R"({"weight_map": {"a": "model-00002-of-00002.safetensors"}})");
  EXPECT_NE(open(dir).find("holds no such tensor"), std::string::npos);
  // Shard 2 holds "c", which this index does not list.
  index(R"({"weight_map": {"a": "model-00001-of-00002.safetensors",
                           "b": "model-00002-of-00002.safetensors"}})");
  EXPECT_NE(open(dir).find("holds 'c', which the weight_map does not put there"),
            std::string::npos);
  std::remove((dir + "/model.safetensors.index.json").c_str());
  EXPECT_NE(open(dir).find("neither model.safetensors nor"), std::string::npos);
}

namespace {

/// A file of "e.0.w" .. "e.2.w" ([2] each, values 10 i + j), a gap-free
/// stack; "g.0.w", "g.2.w" (a gap after 0); "m.0.w" F32 and "m.1.w" F64.
std::unique_ptr<SafeTensorsSet> stackedParts(const std::string &path) {
  float e[3][2] = {{0, 1}, {10, 11}, {20, 21}};
  double m1[2] = {1, 2};
  std::string error;
  EXPECT_TRUE(writeSafeTensors(path,
                               {{"e.0.w", DType::F32, {2}, e[0]},
                                {"e.1.w", DType::F32, {2}, e[1]},
                                {"e.2.w", DType::F32, {2}, e[2]},
                                {"g.0.w", DType::F32, {2}, e[0]},
                                {"g.2.w", DType::F32, {2}, e[2]},
                                {"m.0.w", DType::F32, {2}, e[0]},
                                {"m.1.w", DType::F64, {2}, m1}},
                               {}, error))
      << error;
  std::unique_ptr<SafeTensorsSet> set = SafeTensorsSet::open(path, error);
  EXPECT_TRUE(set) << error;
  return set;
}

} // namespace

TEST(SafeTensorsStackTest, PartsStackAlongANewFirstDimension) {
  std::string path = tempPath("stacked.safetensors");
  std::unique_ptr<SafeTensorsSet> set = stackedParts(path);
  ASSERT_TRUE(set);
  EXPECT_TRUE(isStackedName("e.*.w"));
  EXPECT_FALSE(isStackedName("e.0.w"));
  EXPECT_EQ(stackedPartName("e.*.w", 2), "e.2.w");
  const SafeTensorsFile *file = nullptr;
  const TensorView *view = set->findStacked("e.*.w", &file);
  ASSERT_TRUE(view);
  EXPECT_EQ(file, set->files()[0].get());
  EXPECT_EQ(view->name, "e.*.w");
  EXPECT_EQ(view->dtype, DType::F32);
  EXPECT_EQ(view->shape, (std::vector<int64_t>{3, 2}));
  ASSERT_EQ(view->bytes, 24u);
  const float *values = reinterpret_cast<const float *>(view->data);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2; ++j)
      EXPECT_EQ(values[2 * i + j], 10.0f * i + j);
  // Kept with the set: the second call finds the same copy.
  EXPECT_EQ(set->findStacked("e.*.w"), view);
  // Parts stop at the first missing index; a name without parts or
  // without kStackIndex has none.
  const TensorView *gap = set->findStacked("g.*.w");
  ASSERT_TRUE(gap);
  EXPECT_EQ(gap->shape, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(set->findStacked("x.*.w"), nullptr);
  EXPECT_EQ(set->findStacked("e.0.w"), nullptr);
  // Parts of different dtypes make no stack.
  EXPECT_EQ(set->findStacked("m.*.w"), nullptr);
  std::remove(path.c_str());
}

TEST(SafeTensorsStackTest, UnstackedViewsEachPartOfTheData) {
  float data[3][2] = {{0, 1}, {10, 11}, {20, 21}};
  std::vector<TensorToWrite> parts = unstacked({"e.*.w", DType::F32, {3, 2}, data});
  ASSERT_EQ(parts.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(parts[i].name, "e." + std::to_string(i) + ".w");
    EXPECT_EQ(parts[i].shape, (std::vector<int64_t>{2}));
    EXPECT_EQ(parts[i].data, data[i]);
  }
  std::vector<TensorToWrite> whole = unstacked({"e.0.w", DType::F32, {3, 2}, data});
  ASSERT_EQ(whole.size(), 1u);
  EXPECT_EQ(whole[0].name, "e.0.w");
}
