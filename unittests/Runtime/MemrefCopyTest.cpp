//===- MemrefCopyTest.cpp - The runtime's memrefCopy, any strides ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/Runtime.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace {

using CopyFn = void (*)(int64_t, UnrankedMemRefType<char> *, UnrankedMemRefType<char> *);

/// The copy the JIT binds as `memrefCopy` (what MLIR's memref-to-LLVM
/// lowering calls for a copy between strided buffers).
CopyFn boundCopy() {
  for (const pmlir_rt_symbol *s = pmlir_rt_cpu_kernel_symbols(); s->name; ++s)
    if (std::strcmp(s->name, "memrefCopy") == 0)
      return reinterpret_cast<CopyFn>(s->address);
  return nullptr;
}

/// A rank-2 view of `data` as the lowering passes it (an unranked
/// descriptor around a ranked one).
struct View2 {
  StridedMemRefType<float, 2> ranked;
  UnrankedMemRefType<char> unranked;
  View2(float *data, int64_t offset, int64_t rows, int64_t cols, int64_t rowStride,
        int64_t colStride) {
    ranked.basePtr = ranked.data = data;
    ranked.offset = offset;
    ranked.sizes[0] = rows;
    ranked.sizes[1] = cols;
    ranked.strides[0] = rowStride;
    ranked.strides[1] = colStride;
    unranked.rank = 2;
    unranked.descriptor = &ranked;
  }
};

/// Copies a 5 x 7 block between views with the given strides and offsets
/// (row-major buffers of 64 x 64 floats) and checks every element of the
/// destination's buffer: the block's where the view puts it, the rest as
/// it was.
void checkCopy(int64_t fromOffset, int64_t fromRow, int64_t fromCol, int64_t toOffset,
               int64_t toRow, int64_t toCol) {
  const int64_t rows = 5, cols = 7, size = 64 * 64;
  std::vector<float> from(size), to(size, -1.0f);
  std::iota(from.begin(), from.end(), 0.0f);
  View2 src(from.data(), fromOffset, rows, cols, fromRow, fromCol);
  View2 dst(to.data(), toOffset, rows, cols, toRow, toCol);
  CopyFn copy = boundCopy();
  ASSERT_NE(copy, nullptr);
  copy(sizeof(float), &src.unranked, &dst.unranked);
  std::vector<float> expected(size, -1.0f);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j)
      expected[toOffset + i * toRow + j * toCol] = from[fromOffset + i * fromRow + j * fromCol];
  EXPECT_EQ(to, expected) << "from offset " << fromOffset << " strides [" << fromRow << ", "
                          << fromCol << "], to offset " << toOffset << " strides [" << toRow << ", "
                          << toCol << "]";
}

TEST(MemrefCopy, ContiguousRowsIntoAWiderMatrix) {
  // A GEMM's result into its columns of a concatenation.
  checkCopy(0, 7, 1, 3, 64, 1);
  checkCopy(11, 9, 1, 0, 7, 1);
}

TEST(MemrefCopy, StridedRowsOnEitherSide) {
  checkCopy(2, 1, 5, 0, 7, 1);   // a transposed source
  checkCopy(0, 7, 1, 1, 1, 6);   // into a transposed destination
  checkCopy(4, 16, 2, 5, 20, 3); // both strided
}

TEST(MemrefCopy, EmptyAndRankZero) {
  CopyFn copy = boundCopy();
  ASSERT_NE(copy, nullptr);
  float from[4] = {1, 2, 3, 4}, to[4] = {0, 0, 0, 0};
  View2 src(from, 0, 0, 4, 4, 1), dst(to, 0, 0, 4, 4, 1);
  copy(sizeof(float), &src.unranked, &dst.unranked);
  EXPECT_EQ(to[0], 0.0f);

  StridedMemRefType<float, 0> scalarFrom{from, from + 2, 0}, scalarTo{to, to + 1, 0};
  UnrankedMemRefType<char> a{0, &scalarFrom}, b{0, &scalarTo};
  copy(sizeof(float), &a, &b);
  EXPECT_EQ(to[1], 3.0f);
  EXPECT_EQ(to[0], 0.0f);
  EXPECT_EQ(to[2], 0.0f);
}

} // namespace
