// onednn_gemm.cpp - the GEMM libraries side by side on a GPT-2 small
// training step's shapes, without pmlir.
//
//   g++ -O2 -std=c++17 -fopenmp bench/onednn_gemm.cpp -o /tmp/onednn_gemm \
//       -lopenblas -ldnnl -lpthread
//   /tmp/onednn_gemm
//
// Two tables, GFLOP/s, best of 8 calls after 2:
// - two threads: OpenBLAS's sgemm on its two threads; oneDNN's dnnl_sgemm on
//   its two OpenMP threads; dnnl_sgemm called once per half of C on two
//   threads of the program's own, each call single-threaded, split along the
//   larger of C's rows and columns (what pmlir-run does, GemmKernels.cpp);
// - one thread: dnnl_sgemm against oneDNN's bf16 GEMM (f32 sums), which
//   runs on AMX where the CPU has it; each again with A, B and C flushed
//   from the caches before every call ("cold"), as a training step's GEMMs
//   find them (bench/cpu_profile.py's rates of the same shapes in a step
//   read against both).
// Shapes at 4 x 128 tokens (M = 512) and 128 tokens: the FC1 GEMM forward
// and its gradients, the attention projection, the LM head (vocabulary
// 50257) forward and its gradients. Cited in docs/performance.md.
#include "gemm_bench.h"

#include <cblas.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <thread>
#include <vector>

namespace {

const Shape kShapes[] = {
    {"FC1 forward, 128 tokens", false, false, 128, 3072, 768},
    {"FC1 forward, 512 tokens", false, false, 512, 3072, 768},
    {"FC1 input gradient", false, true, 512, 768, 3072},
    {"FC1 weight gradient", true, false, 768, 3072, 512},
    {"attention projection", false, false, 512, 768, 768},
    {"LM head forward, 128 tokens", false, true, 128, 50257, 768},
    {"LM head forward, 512 tokens", false, true, 512, 50257, 768},
    {"LM head input gradient", false, false, 512, 768, 50257},
    {"LM head weight gradient", true, false, 50257, 768, 512},
};

/// GFLOP/s figures are of the best of 8 calls after 2.
template <typename F> double best(F f) { return best(f, 2, 8); }
template <typename F>
double bestCold(F f, std::initializer_list<std::pair<const void *, size_t>> operands) {
  return bestCold(f, operands, 2, 8);
}

/// dnnl_sgemm on part `part` of two of C, single-threaded.
void half(const Shape &s, int part, const float *a, long lda, const float *b, long ldb, float *c) {
  omp_set_num_threads(1);
  char ta = s.transA ? 'T' : 'N', tb = s.transB ? 'T' : 'N';
  if (s.m > s.n) {
    long begin = s.m * part / 2, end = s.m * (part + 1) / 2;
    const float *partA = s.transA ? a + begin : a + begin * lda;
    dnnl_sgemm(ta, tb, end - begin, s.n, s.k, 1.0f, partA, lda, b, ldb, 0.0f, c + begin * s.n, s.n);
  } else {
    long grains = (s.n + 15) / 16;
    long begin = std::min(s.n, grains * part / 2 * 16);
    long end = std::min(s.n, grains * (part + 1) / 2 * 16);
    const float *partB = s.transB ? b + begin * ldb : b + begin;
    dnnl_sgemm(ta, tb, s.m, end - begin, s.k, 1.0f, a, lda, partB, ldb, 0.0f, c + begin, s.n);
  }
}

} // namespace

int main() {
  std::printf("| GEMM | M x N x K | OpenBLAS, 2 threads | dnnl_sgemm, 2 OpenMP threads | "
              "dnnl_sgemm split on 2 threads |\n|---|---|---|---|---|\n");
  for (const Shape &s : kShapes) {
    std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f), c(s.m * s.n);
    long lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    double flops = 2.0 * s.m * s.n * s.k;
    openblas_set_num_threads(2);
    double openBlas = best([&] {
      cblas_sgemm(CblasRowMajor, s.transA ? CblasTrans : CblasNoTrans,
                  s.transB ? CblasTrans : CblasNoTrans, s.m, s.n, s.k, 1.0f, a.data(), lda,
                  b.data(), ldb, 0.0f, c.data(), s.n);
    });
    omp_set_num_threads(2);
    double openMp = best([&] {
      dnnl_sgemm(s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data(), lda,
                 b.data(), ldb, 0.0f, c.data(), s.n);
    });
    double split = best([&] {
      std::thread other(half, std::cref(s), 1, a.data(), lda, b.data(), ldb, c.data());
      half(s, 0, a.data(), lda, b.data(), ldb, c.data());
      other.join();
    });
    std::printf("| %s | %ld x %ld x %ld | %.1f | %.1f | %.1f |\n", s.name, s.m, s.n, s.k,
                flops / openBlas / 1e9, flops / openMp / 1e9, flops / split / 1e9);
  }

  const bool bf16Runs = bf16GemmRuns();
  std::printf("\n| GEMM | M x N x K | dnnl_sgemm, 1 thread | cold | oneDNN bf16 GEMM, 1 thread | "
              "cold |\n|---|---|---|---|---|---|\n");
  omp_set_num_threads(1);
  for (const Shape &s : kShapes) {
    std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f), c(s.m * s.n);
    // 0.5 and 0.25 in bf16.
    std::vector<uint16_t> aBf16(a.size(), 0x3f00), bBf16(b.size(), 0x3e80);
    long lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    char ta = s.transA ? 'T' : 'N', tb = s.transB ? 'T' : 'N';
    double flops = 2.0 * s.m * s.n * s.k;
    auto f32Gemm = [&] {
      dnnl_sgemm(ta, tb, s.m, s.n, s.k, 1.0f, a.data(), lda, b.data(), ldb, 0.0f, c.data(), s.n);
    };
    auto bf16Gemm = [&] {
      dnnl_gemm_bf16bf16f32(ta, tb, s.m, s.n, s.k, 1.0f, aBf16.data(), lda, bBf16.data(), ldb, 0.0f,
                            c.data(), s.n);
    };
    size_t cBytes = c.size() * sizeof(float);
    double f32 = best(f32Gemm);
    double f32Cold = bestCold(f32Gemm, {{a.data(), a.size() * sizeof(float)},
                                        {b.data(), b.size() * sizeof(float)},
                                        {c.data(), cBytes}});
    std::printf("| %s | %ld x %ld x %ld | %.1f | %.1f |", s.name, s.m, s.n, s.k, flops / f32 / 1e9,
                flops / f32Cold / 1e9);
    if (!bf16Runs) {
      std::printf(" - | - |\n");
      continue;
    }
    double bf16 = best(bf16Gemm);
    double bf16Cold = bestCold(bf16Gemm, {{aBf16.data(), aBf16.size() * sizeof(uint16_t)},
                                          {bBf16.data(), bBf16.size() * sizeof(uint16_t)},
                                          {c.data(), cBytes}});
    std::printf(" %.1f | %.1f |\n", flops / bf16 / 1e9, flops / bf16Cold / 1e9);
  }
  if (!bf16Runs)
    std::printf("\noneDNN's bf16 GEMM does not run on this CPU (no AVX-512 BF16): its columns "
                "are empty.\n");
  return 0;
}
