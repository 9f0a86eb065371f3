//===- CpuKernels.cpp - BLAS-backed kernels for JIT-compiled code ---------===//
//
// Part of pmlir.
//
// tfm.matmul on f32 lowers to a call of pmlir_matmul_f32_r<L><R>_t<A><B>
// (lhs rank L, rhs rank R, transposes A and B) with memref descriptors of
// lhs, rhs and the result and a flag `accumulate`; the kernel adds lhs @ rhs
// into the result (accumulate) or overwrites it (not read, so it may be
// uninitialized) with cblas_sgemm (oneDNN's SGEMM on a CPU with AVX-512,
// GemmKernels.h), one call per batch element, or one call for the whole
// batch when a shared rank-2 rhs meets a contiguous lhs (the common
// activation-times-weight case). On bf16 operands (their
// bits, uint16_t) the same calls go to oneDNN's bf16 GEMM, f32 sums into an
// f32 result, where the CPU has AVX-512 BF16 (GemmKernels.h); elsewhere the
// operands are widened to f32 copies first. On a CPU with AMX a bf16 batch
// with a batch of B (attention's heads) is one matmul primitive call a part
// of the batch instead of one GEMM call an element.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/GemmKernels.h"
#include "pmlir/Runtime/Runtime.h"

#include "HalfFloat.h"
#include "StridedMemRef.h"
#include "Trace.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"

#include <cblas.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using pmlir::rt::isContiguous;

/// Calls f(i) for i in [0, count) over the runtime's threads
/// (pmlir_rt_parallel_for), `unitCost` the operations of one call.
template <typename F> void parallelFor(int64_t count, int64_t unitCost, F &f) {
  auto body = +[](void *context, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      (*static_cast<F *>(context))(i);
  };
  pmlir_rt_parallel_for(reinterpret_cast<void *>(body), &f, count, unitCost);
}

/// Offset of batch element `b` (row-major over the leading Rank-2 dims).
template <typename T, int Rank>
int64_t batchOffset(const StridedMemRefType<T, Rank> *m, const int64_t *batchSizes, int64_t b) {
  int64_t offset = m->offset;
  for (int i = Rank - 3; i >= 0; --i) {
    offset += (b % batchSizes[i]) * m->strides[i];
    b /= batchSizes[i];
  }
  return offset;
}

/// Row-major GEMM with BLAS when the innermost strides are 1, else loops.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t aRow, int64_t aCol, const float *b,
          int64_t bRow, int64_t bCol, float *c, int64_t cRow, int64_t cCol,
          bool accumulate) {
  if (aCol == 1 && bCol == 1 && cCol == 1) {
    if (pmlir::rt::f32Gemm() == pmlir::rt::F32Gemm::OneDnn) {
      if (!pmlir::rt::oneDnnF32Gemm(transA, transB, m, n, k, a, aRow, b, bRow, c, cRow, accumulate))
        pmlir_rt_fail("oneDNN's f32 GEMM failed");
      return;
    }
    // BLAS does not read C when beta is zero.
    cblas_sgemm(CblasRowMajor, transA ? CblasTrans : CblasNoTrans,
                transB ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, aRow, b,
                bRow, accumulate ? 1.0f : 0.0f, c, cRow);
    return;
  }
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      float sum = accumulate ? c[i * cRow + j * cCol] : 0.0f;
      for (int64_t p = 0; p < k; ++p) {
        float x = transA ? a[p * aRow + i * aCol] : a[i * aRow + p * aCol];
        float y = transB ? b[j * bRow + p * bCol] : b[p * bRow + j * bCol];
        sum += x * y;
      }
      c[i * cRow + j * cCol] = sum;
    }
}

/// Row-major GEMM of bf16 operands into f32 on oneDNN; the caller checked
/// that every innermost stride is 1.
void gemm(bool transA, bool transB, int64_t m, int64_t n, int64_t k, const uint16_t *a,
          int64_t aRow, int64_t, const uint16_t *b, int64_t bRow, int64_t, float *c, int64_t cRow,
          int64_t, bool accumulate) {
  if (!pmlir::rt::oneDnnBf16Gemm(transA, transB, m, n, k, a, aRow, b, bRow, c, cRow, accumulate))
    pmlir_rt_fail("oneDNN's bf16 GEMM failed");
}

template <int L, int R, bool TA, bool TB, typename In>
void matmul(StridedMemRefType<In, L> *lhs, StridedMemRefType<In, R> *rhs,
            StridedMemRefType<float, L> *out, bool accumulate) {
  static_assert(L >= 2 && (R == 2 || R == L), "unsupported ranks");
  int64_t m = out->sizes[L - 2], n = out->sizes[L - 1];
  int64_t k = TA ? lhs->sizes[L - 2] : lhs->sizes[L - 1];
  int64_t batch = 1;
  for (int i = 0; i < L - 2; ++i)
    batch *= out->sizes[i];
  const In *a = lhs->data;
  const In *b = rhs->data;
  float *c = out->data;
  int64_t bRow = rhs->strides[R - 2], bCol = rhs->strides[R - 1];

  if (R == 2 && !TA && isContiguous(lhs) && isContiguous(out)) {
    gemm(false, TB, batch * m, n, k, a + lhs->offset, k, 1, b + rhs->offset,
         bRow, bCol, c + out->offset, n, 1, accumulate);
    return;
  }
  auto element = [&](int64_t i) {
    int64_t bOff = rhs->offset;
    if constexpr (R == L)
      bOff = batchOffset(rhs, out->sizes, i);
    gemm(TA, TB, m, n, k, a + batchOffset(lhs, out->sizes, i), lhs->strides[L - 2],
         lhs->strides[L - 1], b + bOff, bRow, bCol, c + batchOffset(out, out->sizes, i),
         out->strides[L - 2], out->strides[L - 1], accumulate);
  };
  // oneDNN's GEMMs run on the runtime's threads: a batch of them (attention's
  // heads) is split by its elements, each GEMM whole on one thread.
  if (std::is_same_v<In, uint16_t> || pmlir::rt::f32Gemm() == pmlir::rt::F32Gemm::OneDnn)
    return parallelFor(batch, 2 * m * n * k, element);
  for (int64_t i = 0; i < batch; ++i)
    element(i);
}

/// Calls `f(offset of the element in m, its flat row-major index)` for
/// every element of `m`.
template <typename T, int Rank, typename F>
void forEachElement(const StridedMemRefType<T, Rank> *m, F f) {
  int64_t count = 1;
  for (int d = 0; d < Rank; ++d)
    count *= m->sizes[d];
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t offset = m->offset, rest = flat;
    for (int d = Rank - 1; d >= 0; --d) {
      offset += (rest % m->sizes[d]) * m->strides[d];
      rest /= m->sizes[d];
    }
    f(offset, flat);
  }
}

/// floatToBf16 and bf16ToFloat over [0, count).
template <typename From, typename To>
inline __attribute__((always_inline)) void convertLoop(const From *from, To *to, int64_t count) {
  for (int64_t i = 0; i < count; ++i) {
    if constexpr (std::is_same_v<To, float>)
      to[i] = pmlir::rt::bf16ToFloat(from[i]);
    else
      to[i] = pmlir::rt::floatToBf16(from[i]);
  }
}

#if defined(__x86_64__)
/// The same loop compiled again for CPUs with AVX-512 and with AVX2, where
/// it vectorizes to sixteen and eight lanes: the runtime is built for any
/// x86-64 CPU, where it vectorizes to SSE2's four only and ran at about a
/// nanosecond a value, bound by its instructions (the rounding of a bf16
/// training step's GEMM results was 7% of the step); at sixteen lanes it
/// waits on memory. The same bits on every path (not VCVTNEPS2BF16's, which
/// flushes subnormals to zero).
template <typename From, typename To>
__attribute__((target("avx512f,avx512bw"), noinline)) void convertAvx512(const From *from, To *to,
                                                                         int64_t count) {
  convertLoop(from, to, count);
}
template <typename From, typename To>
__attribute__((target("avx2"), noinline)) void convertAvx2(const From *from, To *to,
                                                           int64_t count) {
  convertLoop(from, to, count);
}
#endif

/// Converts [0, count) of `from` into `to`: widens bf16 bits (or copies
/// f32) to f32, or rounds f32 to bf16 bits.
template <typename From, typename To> void convertRange(const From *from, To *to, int64_t count) {
  if constexpr (std::is_same_v<From, To>) {
    std::memcpy(to, from, count * sizeof(To));
  } else {
#if defined(__x86_64__)
    using pmlir::rt::SimdLevel;
    static const SimdLevel level = pmlir::rt::cpuSimdLevel();
    if (level >= SimdLevel::Avx512)
      return convertAvx512(from, to, count);
    if (level >= SimdLevel::Avx2)
      return convertAvx2(from, to, count);
#endif
    convertLoop(from, to, count);
  }
}

/// Converts `count` contiguous values over the runtime's threads (a GEMM's
/// operands and result are as large as the GEMM: converted on one thread
/// they took longer than the GEMM on two).
template <typename From, typename To> void convert(const From *from, To *to, int64_t count) {
  struct Ends {
    const From *from;
    To *to;
  } ends{from, to};
  auto body = +[](void *context, int64_t begin, int64_t end) {
    auto *e = static_cast<Ends *>(context);
    convertRange(e->from + begin, e->to + begin, end - begin);
  };
  pmlir_rt_parallel_for(reinterpret_cast<void *>(body), &ends, count, /*unitCost=*/4);
}

/// A row-major f32 copy of `m` (bf16 bits or f32) and the descriptor of it;
/// uninitialized where not copied (a GEMM's result it overwrites). Where
/// `m` lies inside a bf16 operand kept widened (a program's weight), the
/// descriptor views that operand's f32 copy instead, with `m`'s strides,
/// and nothing is copied.
template <int Rank> struct WideCopy {
  std::unique_ptr<float[]> data;
  StridedMemRefType<float, Rank> view;
  int64_t count = 1;

  template <typename T> explicit WideCopy(const StridedMemRefType<T, Rank> *m, bool copy) {
    if constexpr (std::is_same_v<T, uint16_t>)
      if (copy && viewKept(m))
        return;
    for (int d = Rank - 1; d >= 0; --d) {
      view.sizes[d] = m->sizes[d];
      view.strides[d] = count;
      count *= m->sizes[d];
    }
    data.reset(new float[count]);
    view.basePtr = view.data = data.get();
    view.offset = 0;
    if (copy && isContiguous(m))
      convert(m->data + m->offset, data.get(), count);
    else if (copy)
      forEachElement(m, [&](int64_t offset, int64_t flat) {
        if constexpr (std::is_same_v<T, float>)
          data[flat] = m->data[offset];
        else
          data[flat] = pmlir::rt::bf16ToFloat(m->data[offset]);
      });
  }

  /// Views the widened copy of the kept operand `m` lies in, if any.
  bool viewKept(const StridedMemRefType<uint16_t, Rank> *m) {
    int64_t span = 1;
    for (int d = 0; d < Rank; ++d) {
      if (m->sizes[d] <= 0 || m->strides[d] < 0)
        return false;
      span += (m->sizes[d] - 1) * m->strides[d];
    }
    const float *widened = pmlir::rt::widenedBf16GemmOperand(m->data + m->offset, span);
    if (!widened)
      return false;
    for (int d = 0; d < Rank; ++d) {
      view.sizes[d] = m->sizes[d];
      view.strides[d] = m->strides[d];
    }
    // Read only: the GEMM takes its operands' descriptors unconst.
    view.basePtr = view.data = const_cast<float *>(widened);
    view.offset = 0;
    count = 0;
    return true;
  }
};

/// Whether oneDNN can read `m` as it is: a row-major matrix (or batch of
/// them) whose rows are contiguous and do not overlap.
template <typename T, int Rank> bool rowsContiguous(const StridedMemRefType<T, Rank> *m) {
  return m->strides[Rank - 1] == 1 && m->strides[Rank - 2] >= m->sizes[Rank - 1];
}

/// lhs @ rhs on bf16 operands with f32 sums, into a bf16 (uint16_t bits) or
/// f32 result.
template <int L, int R, bool TA, bool TB, typename Out>
void matmulBf16(StridedMemRefType<uint16_t, L> *lhs, StridedMemRefType<uint16_t, R> *rhs,
                StridedMemRefType<Out, L> *out, bool accumulate) {
  bool native = pmlir::rt::bf16Gemm() == pmlir::rt::Bf16Gemm::OneDnn && rowsContiguous(lhs) &&
                rowsContiguous(rhs);
  if constexpr (R == L && L >= 3) {
    // A batch of GEMMs with a batch of B (attention's heads): one matmul
    // primitive a part of the batch, writing C as it is typed, where a GEMM
    // call each took twice as long (their rows are few).
    if (native && !accumulate) {
      int64_t aStrides[L], bStrides[L], cStrides[L];
      for (int d = 0; d < L - 2; ++d) {
        aStrides[d] = lhs->strides[d];
        bStrides[d] = rhs->strides[d];
        cStrides[d] = out->strides[d];
      }
      // Rows then columns of each as the GEMM reads it.
      aStrides[L - 2] = lhs->strides[TA ? L - 1 : L - 2];
      aStrides[L - 1] = lhs->strides[TA ? L - 2 : L - 1];
      bStrides[L - 2] = rhs->strides[TB ? L - 1 : L - 2];
      bStrides[L - 1] = rhs->strides[TB ? L - 2 : L - 1];
      cStrides[L - 2] = out->strides[L - 2];
      cStrides[L - 1] = out->strides[L - 1];
      int64_t m = out->sizes[L - 2], n = out->sizes[L - 1];
      int64_t k = TA ? lhs->sizes[L - 2] : lhs->sizes[L - 1];
      switch (pmlir::rt::oneDnnBf16BatchedGemm(L - 2, out->sizes, m, n, k, lhs->data + lhs->offset,
                                               aStrides, rhs->data + rhs->offset, bStrides,
                                               out->data + out->offset, cStrides)) {
      case pmlir::rt::BatchedGemm::Ran:
        return;
      case pmlir::rt::BatchedGemm::Failed:
        pmlir_rt_fail("oneDNN's bf16 GEMM failed");
        return;
      case pmlir::rt::BatchedGemm::NotRun:
        break;
      }
    }
  }
  if constexpr (std::is_same_v<Out, uint16_t> && R == 2 && !TA) {
    // On the matmul primitive the GEMM rounds its sums as it writes them:
    // no f32 result to write, read again and round (at a forward's GEMMs
    // on packed weights, a pass as long as a fifth of the forward).
    int64_t n = out->sizes[L - 1], k = lhs->sizes[L - 1], rows = 1;
    for (int d = 0; d < L - 1; ++d)
      rows *= out->sizes[d];
    const uint16_t *b = rhs->data + rhs->offset;
    int64_t ldb = rhs->strides[0];
    if (native && !accumulate && isContiguous(lhs) && isContiguous(out) &&
        pmlir::rt::oneDnnBf16RunsMatmul(TB, rows, n, k, b, ldb, accumulate)) {
      if (!pmlir::rt::oneDnnBf16GemmToBf16(false, TB, rows, n, k, lhs->data + lhs->offset, k, b,
                                           ldb, out->data + out->offset, n))
        pmlir_rt_fail("oneDNN's bf16 GEMM failed");
      return;
    }
  }
  auto multiplyInto = [&](StridedMemRefType<float, L> *result) {
    if (native)
      return matmul<L, R, TA, TB>(lhs, rhs, result, accumulate);
    WideCopy<L> a(lhs, true);
    WideCopy<R> b(rhs, true);
    matmul<L, R, TA, TB>(&a.view, &b.view, result, accumulate);
  };
  // An f32 result is written in place (OpenBLAS's path takes any strides;
  // oneDNN's contiguous rows): a copy of it would be as large as the
  // logits.
  if constexpr (std::is_same_v<Out, float>)
    if (!native || rowsContiguous(out))
      return multiplyInto(out);
  WideCopy<L> c(out, accumulate);
  multiplyInto(&c.view);
  if constexpr (!std::is_same_v<Out, float>) {
    if (isContiguous(out))
      return convert(c.data.get(), out->data + out->offset, c.count);
  }
  forEachElement(out, [&](int64_t offset, int64_t flat) {
    if constexpr (std::is_same_v<Out, float>)
      out->data[offset] = c.data[flat];
    else
      out->data[offset] = pmlir::rt::floatToBf16(c.data[flat]);
  });
}

} // namespace

// The GEMM family of RuntimeAbi.def (PMLIR_RT_CPU_GEMM's types times its
// ranks and the four transposes): f32 operands through matmul, bf16 ones
// (their bits, uint16_t) through matmulBf16.
namespace {
template <typename In, typename Out, int L, int R, bool TA, bool TB>
void gemm(StridedMemRefType<In, L> *lhs, StridedMemRefType<In, R> *rhs,
          StridedMemRefType<Out, L> *out, bool accumulate) {
  // A group of a grouped matmul may be empty: no rows (nothing to write),
  // or no rows to sum over (zeros, or the result as it stands), which BLAS
  // libraries need not accept.
  int64_t count = 1;
  for (int d = 0; d < L; ++d)
    count *= out->sizes[d];
  if (count == 0)
    return;
  int64_t k = TA ? lhs->sizes[L - 2] : lhs->sizes[L - 1];
  if (k == 0) {
    if (!accumulate)
      forEachElement(out, [&](int64_t offset, int64_t) { out->data[offset] = Out(); });
    return;
  }
  // The call's shape as the GPU's GEMM spans give theirs (m, n, k, batch),
  // with its types, transposes and whether it adds to C: what a step's
  // GEMMs run at, by shape.
  pmlir::rt::TracedKernel traced("gemm", [&] {
    int64_t m = out->sizes[L - 2], n = out->sizes[L - 1], batch = count / (m * n);
    const char *operands = std::is_same_v<In, float> ? "f32" : "bf16";
    const char *result = std::is_same_v<Out, float> ? "f32" : "bf16";
    std::string transposes = std::string(TA ? "T" : "N") + (TB ? "T" : "N");
    return std::pair(
        "gemm " + std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
            (batch > 1 ? " x" + std::to_string(batch) : "") + " " + transposes + " " + operands,
        "\"m\":" + std::to_string(m) + ",\"n\":" + std::to_string(n) +
            ",\"k\":" + std::to_string(k) + ",\"batch\":" + std::to_string(batch) +
            ",\"transposes\":\"" + transposes + "\",\"operands\":\"" + operands +
            "\",\"result\":\"" + result + "\",\"accumulate\":" + (accumulate ? "true" : "false"));
  });
  if constexpr (std::is_same_v<In, float>)
    matmul<L, R, TA, TB>(lhs, rhs, out, accumulate);
  else
    matmulBf16<L, R, TA, TB>(lhs, rhs, out, accumulate);
}
} // namespace
#define PMLIR_MATMUL(T, IN, OUT, L, R, TA, TB)                                                     \
  extern "C" void _mlir_ciface_pmlir_matmul_##T##_r##L##R##_t##TA##TB(                             \
      StridedMemRefType<IN, L> *lhs, StridedMemRefType<IN, R> *rhs,                                \
      StridedMemRefType<OUT, L> *out, bool accumulate) {                                           \
    gemm<IN, OUT, L, R, TA, TB>(lhs, rhs, out, accumulate);                                        \
  }
#define PMLIR_MATMUL_TRANSPOSES(T, IN, OUT, L, R)                                                  \
  PMLIR_MATMUL(T, IN, OUT, L, R, 0, 0)                                                             \
  PMLIR_MATMUL(T, IN, OUT, L, R, 0, 1)                                                             \
  PMLIR_MATMUL(T, IN, OUT, L, R, 1, 0) PMLIR_MATMUL(T, IN, OUT, L, R, 1, 1)
#define PMLIR_RT_CPU_GEMM(T, IN, OUT) PMLIR_RT_FOR_GEMM_RANKS(PMLIR_MATMUL_TRANSPOSES, T, IN, OUT)
#include "pmlir/Runtime/RuntimeAbi.def"

#define PMLIR_SYMBOL(T, L, R, TA, TB)                                                              \
  {"_mlir_ciface_pmlir_matmul_" #T "_r" #L#R "_t" #TA #TB,                                         \
   reinterpret_cast<void *>(&_mlir_ciface_pmlir_matmul_##T##_r##L##R##_t##TA##TB)},
#define PMLIR_SYMBOL_TRANSPOSES(T, IN, OUT, L, R)                                                  \
  PMLIR_SYMBOL(T, L, R, 0, 0)                                                                      \
  PMLIR_SYMBOL(T, L, R, 0, 1) PMLIR_SYMBOL(T, L, R, 1, 0) PMLIR_SYMBOL(T, L, R, 1, 1)

/// Bound as `memrefCopy`, which MLIR's memref-to-LLVM lowering calls for copies
/// between strided buffers (an insert_slice into a strided view): copies
/// along the innermost dimension, a row at a time where both sides' rows are
/// contiguous, element by element otherwise.
static void copyStrided(int64_t elementSize, UnrankedMemRefType<char> *src,
                        UnrankedMemRefType<char> *dst) {
  DynamicMemRefType<char> from(*src), to(*dst);
  int64_t rank = from.rank;
  char *in = from.data + from.offset * elementSize;
  char *out = to.data + to.offset * elementSize;
  if (rank == 0) {
    std::memcpy(out, in, elementSize);
    return;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (from.sizes[d] == 0)
      return;
  std::vector<int64_t> index(rank, 0);
  while (true) {
    int64_t inOffset = 0, outOffset = 0;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      inOffset += index[d] * from.strides[d];
      outOffset += index[d] * to.strides[d];
    }
    int64_t last = rank - 1;
    // (memmove: a slice copied onto itself is a copy, if a useless one.)
    if (from.strides[last] == 1 && to.strides[last] == 1)
      std::memmove(out + outOffset * elementSize, in + inOffset * elementSize,
                   from.sizes[last] * elementSize);
    else
      for (int64_t k = 0; k < from.sizes[last]; ++k)
        std::memcpy(out + (outOffset + k * to.strides[last]) * elementSize,
                    in + (inOffset + k * from.strides[last]) * elementSize, elementSize);
    int64_t d = last - 1;
    for (; d >= 0; --d) {
      if (++index[d] < from.sizes[d])
        break;
      index[d] = 0;
    }
    if (d < 0)
      return;
  }
}

extern "C" const pmlir_rt_symbol *pmlir_rt_cpu_kernel_symbols(void) {
  static const pmlir_rt_symbol symbols[] = {
#define PMLIR_RT_CPU_GEMM(T, IN, OUT) PMLIR_RT_FOR_GEMM_RANKS(PMLIR_SYMBOL_TRANSPOSES, T, IN, OUT)
#include "pmlir/Runtime/RuntimeAbi.def"
      {"memrefCopy", reinterpret_cast<void *>(&copyStrided)}, {nullptr, nullptr}};
  return symbols;
}

extern "C" void pmlir_rt_set_num_threads(int n) {
  if (n <= 0)
    n = pmlir_rt_default_threads();
  // OpenBLAS keeps its own threads for the GEMMs: splitting each GEMM over
  // the runtime's threads instead packs an operand once per thread, and the
  // training step of GPT-2 small ran 15% slower that way on 2 cores
  // (docs/performance.md). oneDNN's GEMMs are split in n parts over the
  // runtime's threads, each part reading the smaller operand whole.
  pmlir::rt::setGemmThreads(n);
  // Test hook: the loops on other threads than the GEMMs, so that a test
  // can split them while the GEMMs, whose sums depend on their threads (or
  // parts), keep one.
  const char *loopThreads = std::getenv("PMLIR_TEST_LOOP_THREADS");
  pmlir_rt_set_parallel_threads(loopThreads && std::atoi(loopThreads) > 0 ? std::atoi(loopThreads)
                                                                          : n);
}

extern "C" void pmlir_rt_round_to_bf16(const float *from, uint16_t *to, int64_t count) {
  convert(from, to, count);
}

extern "C" void pmlir_rt_widen_bf16(const uint16_t *from, float *to, int64_t count) {
  convert(from, to, count);
}
