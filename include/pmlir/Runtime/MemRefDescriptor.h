//===- MemRefDescriptor.h - A ranked memref descriptor's words --*- C++ -*-===//
//
// Part of pmlir.
//
// What pmlir-run passes a compiled entry for each argument, and what the
// calibration of --predict passes a GEMM kernel: a memref descriptor as the
// C interface lays it out, {allocated, aligned, offset, sizes[rank],
// strides[rank]}, of any rank, row-major. No MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_RUNTIME_MEMREFDESCRIPTOR_H
#define PMLIR_RUNTIME_MEMREFDESCRIPTOR_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace pmlir::rt {

struct MemRefDescriptor {
  static_assert(sizeof(void *) == sizeof(int64_t), "a descriptor's pointers are words");
  std::vector<int64_t> words;

  /// Over `data`, contiguous, of `shape`.
  MemRefDescriptor(void *data, const std::vector<int64_t> &shape) {
    words.resize(3 + 2 * shape.size());
    setPointers(data);
    words[2] = 0;
    int64_t stride = 1;
    for (size_t i = shape.size(); i-- > 0;) {
      words[3 + i] = shape[i];
      words[3 + shape.size() + i] = stride;
      stride *= shape[i];
    }
  }
  void setPointers(void *data) {
    std::memcpy(&words[0], &data, sizeof(void *));
    std::memcpy(&words[1], &data, sizeof(void *));
  }
  void *allocated() const { return pointer(0); }
  void *aligned() const { return pointer(1); }
  /// What a C interface takes: a pointer to the descriptor.
  void *get() { return words.data(); }

private:
  void *pointer(size_t word) const {
    void *p;
    std::memcpy(&p, &words[word], sizeof(void *));
    return p;
  }
};

} // namespace pmlir::rt

#endif // PMLIR_RUNTIME_MEMREFDESCRIPTOR_H
