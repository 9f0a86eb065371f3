//===- CheckpointIndexFuzzer.cpp - libFuzzer target: checkpoint indexes ---===//
//
// Part of pmlir.
//
// Any bytes as the index.json of a checkpoint directory whose two rank
// files are fixed (fuzz/make-checkpoint-seeds.py writes indexes of them):
// the reader either refuses the index with a message or every read it then
// does (each tensor whole, and each piece's own block) stays inside the
// files' mappings and the output (ASan catches a copy past either).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/CheckpointDirectory.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>
#include <vector>

using namespace pmlir;

namespace {

/// The directory: rank-00000.safetensors holds "w" F32 [2, 3] (0 to 5) and
/// "step" F32 [] (3), rank-00001.safetensors "w" F32 [2, 3] (6 to 11).
const std::string &directory() {
  static const std::string path = [] {
    char name[] = "/tmp/pmlir-fuzz-checkpoint-XXXXXX";
    if (!mkdtemp(name))
      std::abort();
    std::string error;
    float first[6] = {0, 1, 2, 3, 4, 5}, second[6] = {6, 7, 8, 9, 10, 11}, step = 3;
    if (!writeSafeTensors(std::string(name) + "/rank-00000.safetensors",
                          {{"w", DType::F32, {2, 3}, first}, {"step", DType::F32, {}, &step}}, {},
                          error) ||
        !writeSafeTensors(std::string(name) + "/rank-00001.safetensors",
                          {{"w", DType::F32, {2, 3}, second}}, {}, error))
      std::abort();
    return std::string(name);
  }();
  return path;
}

/// Reads of at most this many elements are tried (a shape the index makes
/// up may be far larger than the files).
constexpr int64_t kMaxRead = 1 << 16;

int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n) || n > kMaxRead)
      return -1;
  return n;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &dir = directory();
  std::string index = dir + "/index.json";
  std::FILE *f = std::fopen(index.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0)
    std::abort();
  std::string error;
  std::unique_ptr<exec::CheckpointDirectory> checkpoint =
      exec::CheckpointDirectory::open(dir, error);
  if (!checkpoint) {
    if (error.empty())
      std::abort(); // a refusal always says why
    return 0;
  }
  (void)checkpoint->verify(0, 1, error);
  for (auto &[name, tensor] : checkpoint->tensors()) {
    uint64_t bytes = 0;
    int64_t n = elements(tensor.shape);
    if (n >= 0) {
      std::vector<float> whole(n);
      (void)checkpoint->read(name, nullptr, whole.data(), bytes, error);
    }
    for (const exec::CheckpointDirectory::Piece &piece : tensor.pieces) {
      int64_t local = elements(piece.block.local);
      if (local < 0)
        continue;
      std::vector<float> block(local);
      (void)checkpoint->read(name, &piece.block, block.data(), bytes, error);
    }
  }
  return 0;
}
