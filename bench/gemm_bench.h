// gemm_bench.h - what the standalone GEMM benchmarks share: a GEMM's
// shape, oneDNN's bf16 GEMM entry point, and the best time of repeated
// calls, with the operands in the caches or flushed from them.
#ifndef PMLIR_BENCH_GEMM_BENCH_H
#define PMLIR_BENCH_GEMM_BENCH_H

#include <oneapi/dnnl/dnnl.h>

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <utility>

// Exported beside dnnl_sgemm, declared by oneDNN's own tests.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t,
                                               float, const uint16_t *, dnnl_dim_t,
                                               const uint16_t *, dnnl_dim_t, float, float *,
                                               dnnl_dim_t);

/// Whether oneDNN's bf16 GEMM runs here: it reports unimplemented and
/// writes nothing on a CPU without AVX-512 BF16 (an AVX2 CPU), where a
/// timed call would measure a function that returns at once.
inline bool bf16GemmRuns() {
  const uint16_t half = 0x3f00, quarter = 0x3e80; // 0.5 and 0.25 in bf16
  float c = 0;
  return dnnl_gemm_bf16bf16f32('N', 'N', 1, 1, 1, 1.0f, &half, 1, &quarter, 1, 0.0f, &c, 1) ==
             dnnl_success &&
         c == 0.125f;
}

/// Row-major C (m x n) = A (m x k, stored k x m with transA) times B (k x
/// n, stored n x k with transB).
struct Shape {
  const char *name;
  bool transA, transB;
  long m, n, k;
};

inline double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

/// The fastest of `timed` calls of `f` after `warmup` untimed ones, in
/// seconds.
template <typename F> double best(F f, int warmup, int timed) {
  double fastest = 1e30;
  for (int round = 0; round < warmup + timed; ++round) {
    double start = now();
    f();
    if (round >= warmup)
      fastest = std::min(fastest, now() - start);
  }
  return fastest;
}

/// Writes back and evicts [data, data + bytes) from every cache level, as a
/// training step's GEMM finds operands its earlier loops wrote megabytes
/// before: a warm loop of calls on the same operands reads them from the
/// caches instead.
inline void flushFromCaches(const void *data, size_t bytes) {
  const char *p = static_cast<const char *>(data);
  for (size_t i = 0; i < bytes; i += 64)
    _mm_clflush(p + i);
  if (bytes)
    _mm_clflush(p + bytes - 1);
  _mm_mfence();
}

/// best(f, warmup, timed) with every buffer of `operands` (pointer, bytes)
/// flushed from the caches before each call, untimed.
template <typename F>
double bestCold(F f, std::initializer_list<std::pair<const void *, size_t>> operands, int warmup,
                int timed) {
  double fastest = 1e30;
  for (int round = 0; round < warmup + timed; ++round) {
    for (const auto &[data, bytes] : operands)
      flushFromCaches(data, bytes);
    double start = now();
    f();
    if (round >= warmup)
      fastest = std::min(fastest, now() - start);
  }
  return fastest;
}

#endif // PMLIR_BENCH_GEMM_BENCH_H
