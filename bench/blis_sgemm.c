/* blis_sgemm.c - the FC1 GEMM of GPT-2 small, (M x 768) @ (768 x 3072) for
 * M = 128, 512, 1024, 4096, on BLIS or on OpenBLAS, without pmlir: GFLOP/s,
 * best of 10 calls after 3, the result checked. The same source built
 * twice, as the two libraries both export cblas_sgemm:
 *
 *   gcc -O2 -DUSE_BLIS bench/blis_sgemm.c -o /tmp/blis_sgemm -lblis   # libblis-dev
 *   gcc -O2 bench/blis_sgemm.c -o /tmp/openblas_sgemm -lopenblas
 *   /tmp/blis_sgemm THREADS; /tmp/openblas_sgemm THREADS
 *
 * BLIS_ARCH_DEBUG=1 makes BLIS name the sub-configuration it chose. Cited in
 * docs/performance.md (the AVX2 CPU's GEMM libraries).
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifdef USE_BLIS
#include <blis.h>
#else
#include <cblas.h>
#endif
static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 1;
  if (threads < 1 || threads > 256) {
    fprintf(stderr, "blis_sgemm: THREADS must be in [1, 256]\n");
    return 1;
  }
#ifdef USE_BLIS
  bli_thread_set_num_threads(threads);
#else
  openblas_set_num_threads(threads);
#endif
  long ms[] = {128, 512, 1024, 4096};
  for (int i = 0; i < 4; ++i) {
    long m = ms[i], k = 768, n = 3072;
    float *a = malloc(m * k * 4), *b = malloc(k * n * 4), *c = malloc(m * n * 4);
    for (long j = 0; j < m * k; ++j)
      a[j] = 0.5f;
    for (long j = 0; j < k * n; ++j)
      b[j] = 0.25f;
    double best = 1e30;
    for (int r = 0; r < 13; ++r) {
      double s = now();
#ifdef USE_BLIS
      float one = 1, zero = 0;
      bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_NO_TRANSPOSE, m, n, k, &one, a, k, 1, b, n, 1, &zero, c, n,
                1);
#else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, a, k, b, n, 0, c, n);
#endif
      double t = now() - s;
      if (r >= 3 && t < best)
        best = t;
    }
    if (c[0] != 0.125f * k) {
      fprintf(stderr, "wrong result %g\n", c[0]);
      return 1;
    }
    printf("M=%ld threads=%d %.1f GFLOP/s\n", m, threads, 2.0 * m * n * k / best / 1e9);
    free(a);
    free(b);
    free(c);
  }
  return 0;
}
