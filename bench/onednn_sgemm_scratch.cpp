// onednn_sgemm_scratch.cpp - how much one call of oneDNN's dnnl_sgemm
// raises a process's peak resident memory beyond its operands, without
// pmlir: the scratch it allocates in the call.
//
//   g++ -O2 -std=c++17 bench/onednn_sgemm_scratch.cpp -o /tmp/onednn_sgemm_scratch -ldnnl
//   OMP_NUM_THREADS=1 /tmp/onednn_sgemm_scratch M N K [N|T]
//
// Fills row-major A (M x K), B (K x N, or N x K with T) and C, reads VmHWM
// (the peak resident set, /proc/self/status), makes one call, reads it
// again. Cited in docs/performance.md (the AMD EPYC section's peak memory).
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

/// The process's peak resident memory so far, KiB.
long peakResidentKiB() {
  FILE *status = std::fopen("/proc/self/status", "r");
  if (!status)
    return -1;
  char line[256];
  long kib = -1;
  while (std::fgets(line, sizeof line, status))
    if (std::sscanf(line, "VmHWM: %ld", &kib) == 1)
      break;
  std::fclose(status);
  return kib;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 4) {
    std::fprintf(stderr, "usage: %s M N K [N|T]\n", argv[0]);
    return 2;
  }
  long m = std::atol(argv[1]), n = std::atol(argv[2]), k = std::atol(argv[3]);
  char transB = argc > 4 ? argv[4][0] : 'N';
  if (m <= 0 || n <= 0 || k <= 0 || (transB != 'N' && transB != 'T')) {
    std::fprintf(stderr, "M, N, K must be positive and the last argument N or T\n");
    return 2;
  }
  std::vector<float> a(m * k, 1.0f), b(k * n, 1.0f), c(m * n, 0.0f);
  long before = peakResidentKiB();
  dnnl_status_t status = dnnl_sgemm('N', transB, m, n, k, 1.0f, a.data(), k, b.data(),
                                    transB == 'N' ? n : k, 0.0f, c.data(), n);
  long after = peakResidentKiB();
  if (status != dnnl_success) {
    std::fprintf(stderr, "dnnl_sgemm failed: status %d\n", int(status));
    return 1;
  }
  std::printf("M %ld N %ld K %ld%s: operands %.0f MiB, peak %.0f -> %.0f MiB (+%.0f)\n", m, n, k,
              transB == 'T' ? " (B transposed)" : "",
              double(a.size() + b.size() + c.size()) * 4 / 1048576, before / 1024.0, after / 1024.0,
              (after - before) / 1024.0);
  return 0;
}
