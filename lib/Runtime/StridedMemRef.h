//===- StridedMemRef.h - Facts about memref descriptors the kernels need -===//
//
// Part of pmlir.
//
// Shared by the CPU's BLAS kernels and the GPU's cuBLASLt kernels, which
// both take memref descriptors (the llvm.emit_c_interface convention).
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_RUNTIME_STRIDEDMEMREF_H
#define PMLIR_LIB_RUNTIME_STRIDEDMEMREF_H

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstdint>

namespace pmlir::rt {

/// Whether `m` is laid out row-major without gaps (dimensions of size 1
/// aside).
template <typename T, int Rank> bool isContiguous(const StridedMemRefType<T, Rank> *m) {
  int64_t expected = 1;
  for (int i = Rank - 1; i >= 0; --i) {
    if (m->sizes[i] != 1 && m->strides[i] != expected)
      return false;
    expected *= m->sizes[i];
  }
  return true;
}

} // namespace pmlir::rt

#endif // PMLIR_LIB_RUNTIME_STRIDEDMEMREF_H
