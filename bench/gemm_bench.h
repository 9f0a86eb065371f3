// gemm_bench.h - what the standalone GEMM benchmarks share: a GEMM's
// shape, oneDNN's bf16 GEMM entry point, and the best time of repeated
// calls.
#ifndef PMLIR_BENCH_GEMM_BENCH_H
#define PMLIR_BENCH_GEMM_BENCH_H

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

// Exported beside dnnl_sgemm, declared by oneDNN's own tests.
extern "C" dnnl_status_t dnnl_gemm_bf16bf16f32(char, char, dnnl_dim_t, dnnl_dim_t, dnnl_dim_t,
                                               float, const uint16_t *, dnnl_dim_t,
                                               const uint16_t *, dnnl_dim_t, float, float *,
                                               dnnl_dim_t);

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

#endif // PMLIR_BENCH_GEMM_BENCH_H
