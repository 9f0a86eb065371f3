//===- MemRefAbi.cpp - pmlir_rt_* collectives for compiled code -----------===//
//
// Part of pmlir.
//
// pmlir-lower-shard-to-runtime turns shard collectives into calls with
// memref descriptors (the `llvm.emit_c_interface` convention): flat buffers
// of one element type, the ordered mesh axes as a memref of i64, and the
// reduction or the peer's index in the group. Point-to-point messages use
// tag 0: MPI keeps them in order per sender and group. These entry points unpack them for the C ABI in Runtime.h.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/CpuKernels.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstring>

namespace {

template <typename T>
T *begin(StridedMemRefType<T, 1> *m) {
  return m->data + m->offset;
}

const int64_t *axesOf(StridedMemRefType<int64_t, 1> *axes) { return begin(axes); }

} // namespace

#define PMLIR_RT_MEMREF_ENTRIES(SUFFIX, T, DTYPE)                              \
  extern "C" void _mlir_ciface_pmlir_rt_all_reduce_##SUFFIX(                   \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,               \
      StridedMemRefType<int64_t, 1> *axes, int32_t op) {                       \
    pmlir_rt_all_reduce(begin(in), begin(out), in->sizes[0], DTYPE,            \
                        static_cast<pmlir_rt_reduction>(op), axesOf(axes),     \
                        axes->sizes[0]);                                       \
  }

#define PMLIR_RT_MEMREF_MOVES(SUFFIX, T, DTYPE)                                \
  extern "C" void _mlir_ciface_pmlir_rt_all_gather_##SUFFIX(                   \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,               \
      StridedMemRefType<int64_t, 1> *axes) {                                   \
    pmlir_rt_all_gather(begin(in), begin(out), in->sizes[0], DTYPE,            \
                        axesOf(axes), axes->sizes[0]);                         \
  }                                                                            \
  extern "C" void _mlir_ciface_pmlir_rt_reduce_scatter_##SUFFIX(               \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,               \
      StridedMemRefType<int64_t, 1> *axes, int32_t op) {                       \
    pmlir_rt_reduce_scatter(begin(in), begin(out), out->sizes[0], DTYPE,       \
                            static_cast<pmlir_rt_reduction>(op), axesOf(axes), \
                            axes->sizes[0]);                                   \
  }                                                                            \
  extern "C" void _mlir_ciface_pmlir_rt_all_to_all_##SUFFIX(                   \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,               \
      StridedMemRefType<int64_t, 1> *axes) {                                   \
    int64_t n = pmlir_rt_group_size(axesOf(axes), axes->sizes[0]);             \
    pmlir_rt_all_to_all(begin(in), begin(out), in->sizes[0] / n, DTYPE,        \
                        axesOf(axes), axes->sizes[0]);                         \
  }                                                                            \
  extern "C" void _mlir_ciface_pmlir_rt_broadcast_##SUFFIX(                    \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,               \
      StridedMemRefType<int64_t, 1> *axes, int64_t root) {                     \
    std::memcpy(begin(out), begin(in), in->sizes[0] * sizeof(T));              \
    pmlir_rt_broadcast(begin(out), out->sizes[0], DTYPE, root, axesOf(axes),   \
                       axes->sizes[0]);                                        \
  }                                                                            \
  extern "C" void _mlir_ciface_pmlir_rt_send_##SUFFIX(                         \
      StridedMemRefType<T, 1> *in, StridedMemRefType<int64_t, 1> *axes,        \
      int64_t peer) {                                                          \
    pmlir_rt_send(begin(in), in->sizes[0], DTYPE, peer, axesOf(axes),          \
                  axes->sizes[0], /*tag=*/0);                                  \
  }                                                                            \
  extern "C" void _mlir_ciface_pmlir_rt_recv_##SUFFIX(                         \
      StridedMemRefType<T, 1> *out, StridedMemRefType<int64_t, 1> *axes,       \
      int64_t peer) {                                                          \
    pmlir_rt_recv(begin(out), out->sizes[0], DTYPE, peer, axesOf(axes),        \
                  axes->sizes[0], /*tag=*/0);                                  \
  }

PMLIR_RT_MEMREF_ENTRIES(f32, float, PMLIR_RT_F32)
PMLIR_RT_MEMREF_ENTRIES(f64, double, PMLIR_RT_F64)
PMLIR_RT_MEMREF_ENTRIES(i32, int32_t, PMLIR_RT_I32)
PMLIR_RT_MEMREF_ENTRIES(i64, int64_t, PMLIR_RT_I64)
PMLIR_RT_MEMREF_MOVES(f32, float, PMLIR_RT_F32)
PMLIR_RT_MEMREF_MOVES(f64, double, PMLIR_RT_F64)
PMLIR_RT_MEMREF_MOVES(i32, int32_t, PMLIR_RT_I32)
PMLIR_RT_MEMREF_MOVES(i64, int64_t, PMLIR_RT_I64)

extern "C" int64_t _mlir_ciface_pmlir_rt_index_in_group(StridedMemRefType<int64_t, 1> *axes) {
  return pmlir_rt_index_in_group(axesOf(axes), axes->sizes[0]);
}

#define PMLIR_RT_SYMBOL(SUFFIX)                                                \
  {"_mlir_ciface_pmlir_rt_all_reduce_" #SUFFIX,                                \
   reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_all_reduce_##SUFFIX)},      \
      {"_mlir_ciface_pmlir_rt_all_gather_" #SUFFIX,                            \
       reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_all_gather_##SUFFIX)},  \
      {"_mlir_ciface_pmlir_rt_reduce_scatter_" #SUFFIX,                        \
       reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_reduce_scatter_##SUFFIX)}, \
      {"_mlir_ciface_pmlir_rt_all_to_all_" #SUFFIX,                            \
       reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_all_to_all_##SUFFIX)},  \
      {"_mlir_ciface_pmlir_rt_broadcast_" #SUFFIX,                             \
       reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_broadcast_##SUFFIX)},   \
      {"_mlir_ciface_pmlir_rt_send_" #SUFFIX,                                  \
       reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_send_##SUFFIX)},        \
      {"_mlir_ciface_pmlir_rt_recv_" #SUFFIX,                                  \
       reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_recv_##SUFFIX)},

extern "C" const pmlir_rt_symbol *pmlir_rt_collective_symbols(void) {
  static const pmlir_rt_symbol symbols[] = {PMLIR_RT_SYMBOL(f32) PMLIR_RT_SYMBOL(f64)
                                                PMLIR_RT_SYMBOL(i32) PMLIR_RT_SYMBOL(i64){
      "_mlir_ciface_pmlir_rt_index_in_group",
      reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_index_in_group)},
      {"pmlir_rt_coordinate", reinterpret_cast<void *>(&pmlir_rt_coordinate)},
      {nullptr, nullptr}};
  return symbols;
}
