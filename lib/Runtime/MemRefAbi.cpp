//===- MemRefAbi.cpp - pmlir_rt_* collectives for compiled code -----------===//
//
// Part of pmlir.
//
// pmlir-lower-shard-to-runtime turns shard collectives into calls with
// memref descriptors (the `llvm.emit_c_interface` convention): flat buffers
// of one element type, the ordered mesh axes as a memref of i64, and the
// reduction or the peer's index in the group. Point-to-point messages use
// tag 0: MPI keeps them in order per sender and group, and NCCL matches them
// in call order. bf16 and f16 elements are passed as their bits (uint16_t).
// These entry points unpack them for the C ABI in Runtime.h.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/CpuKernels.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cstring>
#include <type_traits>

namespace {

template <typename T>
T *begin(StridedMemRefType<T, 1> *m) {
  return m->data + m->offset;
}

const int64_t *axesOf(StridedMemRefType<int64_t, 1> *axes) { return begin(axes); }

/// The elements of one row of a buffer of `elements` holding as many rows
/// as `counts` sum to (every routed pair has one): 0 without rows.
int64_t rowWidth(int64_t elements, StridedMemRefType<int64_t, 1> *counts) {
  int64_t rows = 0;
  for (int64_t e = 0; e < counts->sizes[0]; ++e)
    rows += begin(counts)[e];
  return rows > 0 ? elements / rows : 0;
}

} // namespace

#define PMLIR_RT_MEMREF_ENTRIES(SUFFIX, T, DTYPE)                              \
  extern "C" void _mlir_ciface_pmlir_rt_all_reduce_##SUFFIX(                   \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,               \
      StridedMemRefType<int64_t, 1> *axes, int32_t op) {                       \
    pmlir_rt_all_reduce(begin(in), begin(out), in->sizes[0], DTYPE,            \
                        static_cast<pmlir_rt_reduction>(op), axesOf(axes),     \
                        axes->sizes[0]);                                       \
  }

#define PMLIR_RT_MEMREF_MOVES(SUFFIX, T, DTYPE)                                                    \
  extern "C" void _mlir_ciface_pmlir_rt_all_gather_##SUFFIX(StridedMemRefType<T, 1> *in,           \
                                                            StridedMemRefType<T, 1> *out,          \
                                                            StridedMemRefType<int64_t, 1> *axes) { \
    pmlir_rt_all_gather(begin(in), begin(out), in->sizes[0], DTYPE, axesOf(axes), axes->sizes[0]); \
  }                                                                                                \
  extern "C" void _mlir_ciface_pmlir_rt_reduce_scatter_##SUFFIX(                                   \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,                                   \
      StridedMemRefType<int64_t, 1> *axes, int32_t op) {                                           \
    pmlir_rt_reduce_scatter(begin(in), begin(out), out->sizes[0], DTYPE,                           \
                            static_cast<pmlir_rt_reduction>(op), axesOf(axes), axes->sizes[0]);    \
  }                                                                                                \
  extern "C" void _mlir_ciface_pmlir_rt_all_to_all_##SUFFIX(StridedMemRefType<T, 1> *in,           \
                                                            StridedMemRefType<T, 1> *out,          \
                                                            StridedMemRefType<int64_t, 1> *axes) { \
    int64_t n = pmlir_rt_group_size(axesOf(axes), axes->sizes[0]);                                 \
    pmlir_rt_all_to_all(begin(in), begin(out), in->sizes[0] / n, DTYPE, axesOf(axes),              \
                        axes->sizes[0]);                                                           \
  }                                                                                                \
  extern "C" void _mlir_ciface_pmlir_rt_moe_all_to_all_##SUFFIX(                                   \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,                                   \
      StridedMemRefType<int64_t, 1> *counts, StridedMemRefType<int64_t, 1> *expertCounts,          \
      StridedMemRefType<int64_t, 1> *axes) {                                                       \
    int64_t width = rowWidth(in->sizes[0], counts);                                                \
    pmlir_rt_moe_all_to_all(begin(in), begin(out), width, begin(counts), counts->sizes[0],         \
                            begin(expertCounts), width ? out->sizes[0] / width : 0, DTYPE,         \
                            axesOf(axes), axes->sizes[0]);                                         \
  }                                                                                                \
  extern "C" void _mlir_ciface_pmlir_rt_moe_all_to_all_back_##SUFFIX(                              \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,                                   \
      StridedMemRefType<int64_t, 1> *counts, StridedMemRefType<int64_t, 1> *axes) {                \
    pmlir_rt_moe_all_to_all_back(begin(in), begin(out), rowWidth(out->sizes[0], counts),           \
                                 begin(counts), counts->sizes[0], DTYPE, axesOf(axes),             \
                                 axes->sizes[0]);                                                  \
  }                                                                                                \
  extern "C" void _mlir_ciface_pmlir_rt_broadcast_##SUFFIX(                                        \
      StridedMemRefType<T, 1> *in, StridedMemRefType<T, 1> *out,                                   \
      StridedMemRefType<int64_t, 1> *axes, int64_t root) {                                         \
    std::memcpy(begin(out), begin(in), in->sizes[0] * sizeof(T));                                  \
    pmlir_rt_broadcast(begin(out), out->sizes[0], DTYPE, root, axesOf(axes), axes->sizes[0]);      \
  }                                                                                                \
  extern "C" void _mlir_ciface_pmlir_rt_send_##SUFFIX(StridedMemRefType<T, 1> *in,                 \
                                                      StridedMemRefType<int64_t, 1> *axes,         \
                                                      int64_t peer, int64_t tag) {                 \
    pmlir_rt_send(begin(in), in->sizes[0], DTYPE, peer, axesOf(axes), axes->sizes[0], tag);        \
  }                                                                                                \
  extern "C" void _mlir_ciface_pmlir_rt_recv_##SUFFIX(StridedMemRefType<T, 1> *out,                \
                                                      StridedMemRefType<int64_t, 1> *axes,         \
                                                      int64_t peer, int64_t tag) {                 \
    pmlir_rt_recv(begin(out), out->sizes[0], DTYPE, peer, axesOf(axes), axes->sizes[0], tag);      \
  }

#define PMLIR_RT_DTYPE(ENUM, CODE, SUFFIX, CTYPE)                                                  \
  PMLIR_RT_MEMREF_ENTRIES(SUFFIX, CTYPE, PMLIR_RT_##ENUM)                                          \
  PMLIR_RT_MEMREF_MOVES(SUFFIX, CTYPE, PMLIR_RT_##ENUM)
#include "pmlir/Runtime/RuntimeAbi.def"

extern "C" int64_t _mlir_ciface_pmlir_rt_index_in_group(StridedMemRefType<int64_t, 1> *axes) {
  return pmlir_rt_index_in_group(axesOf(axes), axes->sizes[0]);
}

extern "C" void _mlir_ciface_pmlir_rt_step_metric(int64_t kind, int64_t index,
                                                  StridedMemRefType<int64_t, 1> *values) {
  pmlir_rt_step_metric(kind, index, begin(values), values->sizes[0]);
}

namespace {

/// The C signature RuntimeAbi.def gives each entry, on elements of type T.
template <typename T> struct TableSignatures {
  using VOID = void;
  using BUFFER = StridedMemRefType<T, 1> *;
  using AXES = StridedMemRefType<int64_t, 1> *;
  using COUNTS = StridedMemRefType<int64_t, 1> *;
  using I32 = int32_t;
  using I64 = int64_t;
  using PTR = void *;
  template <typename R, typename... Params> using Fn = R (*)(Params...);
#define PMLIR_RT_TYPED_ENTRY(NAME, RESULT, ...) using NAME = Fn<RESULT, __VA_ARGS__>;
#define PMLIR_RT_ENTRY(NAME, C_INTERFACE, RESULT, ...) using NAME = Fn<RESULT, __VA_ARGS__>;
#include "pmlir/Runtime/RuntimeAbi.def"
};

// The typed entries defined above. Each must be in the table with the C
// signature defined here, and the table must have no others.
#define PMLIR_RT_FOR_EACH_TYPED_ENTRY(M, SUFFIX, CTYPE)                                            \
  M(all_reduce, SUFFIX, CTYPE)                                                                     \
  M(all_gather, SUFFIX, CTYPE)                                                                     \
  M(reduce_scatter, SUFFIX, CTYPE)                                                                 \
  M(all_to_all, SUFFIX, CTYPE)                                                                     \
  M(moe_all_to_all, SUFFIX, CTYPE)                                                                 \
  M(moe_all_to_all_back, SUFFIX, CTYPE)                                                            \
  M(broadcast, SUFFIX, CTYPE)                                                                      \
  M(send, SUFFIX, CTYPE)                                                                           \
  M(recv, SUFFIX, CTYPE)
#define PMLIR_RT_COUNT(NAME, SUFFIX, CTYPE) +1
constexpr int kTypedEntriesHere = 0 PMLIR_RT_FOR_EACH_TYPED_ENTRY(PMLIR_RT_COUNT, , );
constexpr int kTypedEntriesInTable = 0
#define PMLIR_RT_TYPED_ENTRY(NAME, ...) +1
#include "pmlir/Runtime/RuntimeAbi.def"
    ;
static_assert(kTypedEntriesHere == kTypedEntriesInTable,
              "RuntimeAbi.def lists typed entries that MemRefAbi.cpp does not define");

#define PMLIR_RT_CHECK_SIGNATURE(NAME, SUFFIX, CTYPE)                                              \
  static_assert(std::is_same_v<decltype(&_mlir_ciface_pmlir_rt_##NAME##_##SUFFIX),                 \
                               TableSignatures<CTYPE>::NAME>,                                      \
                "pmlir_rt_" #NAME "_" #SUFFIX " does not have RuntimeAbi.def's signature");
#define PMLIR_RT_DTYPE(ENUM, CODE, SUFFIX, CTYPE)                                                  \
  static_assert(PMLIR_RT_##ENUM == CODE);                                                          \
  PMLIR_RT_FOR_EACH_TYPED_ENTRY(PMLIR_RT_CHECK_SIGNATURE, SUFFIX, CTYPE)
#include "pmlir/Runtime/RuntimeAbi.def"

// An untyped entry's function: through its C interface or plain.
#define PMLIR_RT_ENTRY_FUNCTION_1(NAME) _mlir_ciface_pmlir_rt_##NAME
#define PMLIR_RT_ENTRY_FUNCTION_0(NAME) pmlir_rt_##NAME
#define PMLIR_RT_ENTRY_FUNCTION(NAME, C_INTERFACE) PMLIR_RT_ENTRY_FUNCTION_##C_INTERFACE(NAME)
#define PMLIR_RT_ENTRY(NAME, C_INTERFACE, RESULT, ...)                                             \
  static_assert(std::is_same_v<decltype(&PMLIR_RT_ENTRY_FUNCTION(NAME, C_INTERFACE)),              \
                               TableSignatures<float>::NAME>,                                      \
                "pmlir_rt_" #NAME " does not have RuntimeAbi.def's signature");
#include "pmlir/Runtime/RuntimeAbi.def"

} // namespace

extern "C" const pmlir_rt_symbol *pmlir_rt_collective_symbols(void) {
  // Every entry of the table, by the name the lowering calls it.
#define PMLIR_RT_TYPED_SYMBOL(NAME, SUFFIX, CTYPE)                                                 \
  {"_mlir_ciface_pmlir_rt_" #NAME "_" #SUFFIX,                                                     \
   reinterpret_cast<void *>(&_mlir_ciface_pmlir_rt_##NAME##_##SUFFIX)},
  static const pmlir_rt_symbol symbols[] = {
#define PMLIR_RT_DTYPE(ENUM, CODE, SUFFIX, CTYPE)                                                  \
  PMLIR_RT_FOR_EACH_TYPED_ENTRY(PMLIR_RT_TYPED_SYMBOL, SUFFIX, CTYPE)
#include "pmlir/Runtime/RuntimeAbi.def"
#define PMLIR_RT_ENTRY(NAME, C_INTERFACE, RESULT, ...)                                             \
  {C_INTERFACE ? "_mlir_ciface_pmlir_rt_" #NAME : "pmlir_rt_" #NAME,                               \
   reinterpret_cast<void *>(&PMLIR_RT_ENTRY_FUNCTION(NAME, C_INTERFACE))},
#include "pmlir/Runtime/RuntimeAbi.def"
      {nullptr, nullptr}};
  return symbols;
}
