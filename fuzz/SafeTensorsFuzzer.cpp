//===- SafeTensorsFuzzer.cpp - libFuzzer target: the safetensors reader ---===//
//
// Part of pmlir.
//
// Any bytes: the reader either refuses them with a message or returns views
// that lie inside the input, which converting every float tensor reads whole
// (ASan catches a view past the end).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/SafeTensors.h"

#include <cstdint>
#include <cstdlib>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string error;
  auto file = pmlir::SafeTensorsFile::parse("fuzz", data, size, error);
  if (!file) {
    if (error.empty())
      std::abort(); // a refusal always says why
    return 0;
  }
  for (const pmlir::TensorView &view : file->tensors()) {
    std::vector<float> out(static_cast<size_t>(view.numElements()));
    if (!pmlir::convertToF32(view, out.data(), error)) {
      // Integer tensors: read every byte anyway.
      volatile uint8_t sink = 0;
      for (size_t i = 0; i < view.bytes; ++i)
        sink ^= view.data[i];
    }
  }
  return 0;
}
