//===- ElementCount.h - Element counts checked against one bound -*- C++ -*-===//
//
// Part of pmlir.
//
// How many elements a shape holds, where the shape comes from outside (a
// file's header, a checkpoint's index, a generator's flags, a compiled
// program's GEMM), counted without overflow and against one bound on the
// elements of a tensor, so that every reader refuses the same shapes.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_ELEMENTCOUNT_H
#define PMLIR_SUPPORT_ELEMENTCOUNT_H

#include <cstdint>
#include <initializer_list>
#include <optional>

namespace pmlir {

/// The most elements pmlir takes in one tensor: 2^48 (a PiB of f32). Its
/// bytes (at most 8 an element) and sums of many such stay far inside
/// int64.
inline constexpr int64_t kMaxTensorElements = int64_t(1) << 48;

/// The product of `dims` (int64_t values), each non-negative, where it is
/// at most `limit`; nullopt where a dimension is negative or the product
/// passes `limit` (int64's end included). A template over the range, not
/// an llvm::ArrayRef: PMLIRSupport's readers link no LLVM library.
template <typename Dims>
std::optional<int64_t> checkedProduct(const Dims &dims, int64_t limit = kMaxTensorElements) {
  int64_t product = 1;
  for (int64_t d : dims)
    if (d < 0 || __builtin_mul_overflow(product, d, &product) || product > limit)
      return std::nullopt;
  return product;
}
inline std::optional<int64_t> checkedProduct(std::initializer_list<int64_t> dims,
                                             int64_t limit = kMaxTensorElements) {
  return checkedProduct<std::initializer_list<int64_t>>(dims, limit);
}

} // namespace pmlir

#endif // PMLIR_SUPPORT_ELEMENTCOUNT_H
