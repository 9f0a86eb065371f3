/* fma_peak.c - measured AVX-512 FP32 FMA peak of this CPU.
 *
 *   fma_peak THREADS
 *
 * Each thread runs 12 independent chains of _mm512_fmadd_ps (enough to
 * cover the FMA latency on current x86 cores) and the program prints the
 * total GFLOP/s (2 FLOP per lane per FMA). This is the ceiling a GEMM is
 * compared with in docs/performance.md. Build: gcc -O2 -mavx512f -pthread.
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

static void *spin(void *out) {
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

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 256) {
    fprintf(stderr, "fma_peak: THREADS must be in [1, 256]\n");
    return 1;
  }
  pthread_t ids[256];
  float sinks[256];
  double start = now();
  for (int t = 0; t < threads; ++t)
    pthread_create(&ids[t], NULL, spin, &sinks[t]);
  for (int t = 0; t < threads; ++t)
    pthread_join(ids[t], NULL);
  double seconds = now() - start;
  double flops = 2.0 * 16 * CHAINS * (double)ITERATIONS * threads;
  printf("%.1f\n", flops / seconds / 1e9);
  return 0;
}
