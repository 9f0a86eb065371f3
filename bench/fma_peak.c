/* fma_peak.c - measured FP32 FMA peak of this CPU, on its widest vectors.
 *
 *   fma_peak THREADS
 *
 * Each thread runs 12 independent chains of FMAs (enough to cover the FMA
 * latency on current x86 cores) on 512-bit vectors where the CPU and the
 * OS run AVX-512, else on 256-bit AVX2 vectors, and the program prints the
 * total GFLOP/s (2 FLOP per lane per FMA) and the instructions it used,
 * e.g. `107.6 AVX-512`. This is the ceiling a GEMM is compared with in
 * docs/performance.md. Build: gcc -O2 -pthread (each loop is compiled for
 * its own instructions; the CPU's features choose one when it runs).
 */
#include <immintrin.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { CHAINS = 12, ITERATIONS = 50 * 1000 * 1000 };

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

__attribute__((target("avx512f"))) static void *spin512(void *out) {
  __m512 acc[CHAINS];
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = _mm512_set1_ps((float)c);
  /* Fully unrolled, the chains live in registers, not in memory. */
  for (long i = 0; i < ITERATIONS; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], a, b);
  float sum = 0;
  for (int c = 0; c < CHAINS; ++c)
    sum += _mm512_reduce_add_ps(acc[c]);
  *(float *)out = sum; /* keeps the chains live */
  return NULL;
}

__attribute__((target("avx2,fma"))) static void *spin256(void *out) {
  __m256 acc[CHAINS];
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  for (int c = 0; c < CHAINS; ++c)
    acc[c] = _mm256_set1_ps((float)c);
  for (long i = 0; i < ITERATIONS; ++i)
#pragma GCC unroll 12
    for (int c = 0; c < CHAINS; ++c)
      acc[c] = _mm256_fmadd_ps(acc[c], a, b);
  float lanes[8], sum = 0;
  for (int c = 0; c < CHAINS; ++c) {
    _mm256_storeu_ps(lanes, acc[c]);
    for (int l = 0; l < 8; ++l)
      sum += lanes[l];
  }
  *(float *)out = sum;
  return NULL;
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 256) {
    fprintf(stderr, "fma_peak: THREADS must be in [1, 256]\n");
    return 1;
  }
  __builtin_cpu_init();
  /* libgcc counts a feature only where the OS saves its registers. */
  int wide = __builtin_cpu_supports("avx512f");
  if (!wide && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) {
    fprintf(stderr, "fma_peak: this CPU has neither AVX-512 nor AVX2 with FMA\n");
    return 1;
  }
  void *(*spin)(void *) = wide ? spin512 : spin256;
  int lanes = wide ? 16 : 8;
  pthread_t ids[256];
  float sinks[256];
  double start = now();
  for (int t = 0; t < threads; ++t)
    pthread_create(&ids[t], NULL, spin, &sinks[t]);
  for (int t = 0; t < threads; ++t)
    pthread_join(ids[t], NULL);
  double seconds = now() - start;
  double flops = 2.0 * lanes * CHAINS * (double)ITERATIONS * threads;
  printf("%.1f %s\n", flops / seconds / 1e9, wide ? "AVX-512" : "AVX2");
  return 0;
}
