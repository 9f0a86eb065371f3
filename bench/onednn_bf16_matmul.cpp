// onednn_bf16_matmul.cpp - oneDNN's bf16 GEMM API against its matmul
// primitive, by the size of the output, without pmlir.
//
//   g++ -O2 -std=c++17 -fopenmp bench/onednn_bf16_matmul.cpp -o /tmp/onednn_bf16_matmul \
//       -ldnnl -lpthread
//   /tmp/onednn_bf16_matmul
//
// Two tables, GFLOP/s, best of 5 calls after one, row-major operands with
// plain strides, f32 output:
// - one thread: dnnl_gemm_bf16bf16f32; a dnnl::matmul made once and run
//   again and again; one made in every call (from oneDNN's primitive
//   cache), as pmlir-run makes it; one made once on a B reordered once
//   into the primitive's layout, as pmlir-run reads a program's bf16
//   weights;
// - two threads: C split in two along its larger dimension, each half one
//   single-threaded call on a thread of its own (as pmlir-run splits its
//   GEMMs), the GEMM API against the primitive, for the LM head's shapes.
// On a CPU with AMX the API slows down once the output is large (the LM
// head's, tens of millions of elements) and the primitive does not: why
// pmlir-run runs bf16 GEMMs of 2^24 output elements or more on the
// primitive there (lib/Runtime/GemmKernels.cpp). Cited in
// docs/performance.md.
#include "gemm_bench.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <thread>
#include <vector>

extern "C" void omp_set_num_threads(int);

namespace {

const Shape kShapes[] = {
    {"LM head forward, 512 tokens", false, true, 512, 50257, 768},
    {"LM head forward, 1024 tokens", false, true, 1024, 50257, 768},
    {"LM head weight gradient", true, false, 50257, 768, 512},
    {"LM head weight gradient, 128 tokens", true, false, 50257, 768, 128},
    {"LM head input gradient", false, false, 512, 768, 50257},
    {"FC1 forward", false, false, 512, 3072, 768},
    {"FC1 forward, 4096 tokens", false, false, 4096, 3072, 768},
    {"FC2 forward, 4096 tokens", false, false, 4096, 768, 3072},
    {"QKV forward, 2048 tokens", false, false, 2048, 2304, 768},
    {"QKV forward, 128 tokens", false, false, 128, 2304, 768},
    {"attention projection forward, 128 tokens", false, false, 128, 768, 768},
    {"FC1 forward, 128 tokens", false, false, 128, 3072, 768},
    {"FC2 forward, 128 tokens", false, false, 128, 768, 3072},
    {"LM head forward, 128 tokens", false, true, 128, 50257, 768},
    {"QKV forward, 1024 tokens", false, false, 1024, 2304, 768},
    {"attention projection forward, 1024 tokens", false, false, 1024, 768, 768},
    {"FC1 forward, 1024 tokens", false, false, 1024, 3072, 768},
    {"FC2 forward, 1024 tokens", false, false, 1024, 768, 3072},
};

/// GFLOP/s figures are of the best of 5 calls after 1.
template <typename F> double best(F f) { return best(f, 1, 5); }

/// Rows [begin, end) of C (or its columns, `byRows` false) of the GEMM
/// `s`: its operands' and result's offsets and extents.
struct Part {
  const uint16_t *a, *b;
  float *c;
  long m, n;
};
Part partOf(const Shape &s, bool byRows, long begin, long end, const uint16_t *a, long lda,
            const uint16_t *b, long ldb, float *c) {
  if (byRows)
    return {s.transA ? a + begin : a + begin * lda, b, c + begin * s.n, end - begin, s.n};
  return {a, s.transB ? b + begin * ldb : b + begin, c + begin, s.m, end - begin};
}

/// A dnnl::matmul for part `part` of the GEMM `s`, on its operands; with
/// `packed`, B reordered once into the primitive's own layout (as
/// pmlir-run keeps a program's bf16 weights), which it then reads.
struct Matmul {
  dnnl::memory::desc aDesc, bDesc, cDesc;
  dnnl::matmul primitive;
  dnnl::stream stream;
  dnnl::memory aMemory, bMemory, cMemory;

  Matmul(dnnl::engine &engine, const Shape &s, const Part &part, long lda, long ldb,
         bool packed = false)
      : aDesc({part.m, s.k}, dnnl::memory::data_type::bf16,
              s.transA ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1}),
        bDesc({s.k, part.n}, dnnl::memory::data_type::bf16,
              s.transB ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1}),
        cDesc({part.m, part.n}, dnnl::memory::data_type::f32, dnnl::memory::dims{s.n, 1}),
        primitive(dnnl::matmul::primitive_desc(
            dnnl::matmul::desc(aDesc,
                               packed ? dnnl::memory::desc({s.k, part.n},
                                                           dnnl::memory::data_type::bf16,
                                                           dnnl::memory::format_tag::any)
                                      : bDesc,
                               cDesc),
            engine)),
        stream(engine), aMemory(aDesc, engine, const_cast<uint16_t *>(part.a)),
        bMemory(bDesc, engine, const_cast<uint16_t *>(part.b)), cMemory(cDesc, engine, part.c) {
    if (!packed)
      return;
    dnnl::memory::desc layout(
        *dnnl_primitive_desc_query_md(primitive.get_primitive_desc(), dnnl_query_weights_md, 0));
    dnnl::memory plain = bMemory;
    bMemory = dnnl::memory(layout, engine);
    dnnl::reorder(plain, bMemory).execute(stream, plain, bMemory);
    stream.wait();
  }

  void run() {
    primitive.execute(
        stream, {{DNNL_ARG_SRC, aMemory}, {DNNL_ARG_WEIGHTS, bMemory}, {DNNL_ARG_DST, cMemory}});
    stream.wait();
  }
};

/// One GEMM of `s` on part `part`: the API, or a matmul made for it.
void run(dnnl::engine &engine, const Shape &s, bool matmul, const Part &part, long lda, long ldb) {
  if (matmul)
    Matmul(engine, s, part, lda, ldb).run();
  else
    dnnl_gemm_bf16bf16f32(s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', part.m, part.n, s.k, 1.0f,
                          part.a, lda, part.b, ldb, 0.0f, part.c, s.n);
}

} // namespace

int main() {
  if (!bf16GemmRuns()) {
    std::printf("oneDNN's bf16 GEMM does not run on this CPU (no AVX-512 BF16): nothing to "
                "compare.\n");
    return 0;
  }
  omp_set_num_threads(1);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  std::printf("| GEMM | M x N x K | output elements | GEMM API | matmul primitive | matmul, "
              "created each call | matmul, B packed once |\n|---|---|---|---|---|---|---|\n");
  for (const Shape &s : kShapes) {
    // 1.0 and 0.5 in bf16.
    std::vector<uint16_t> a(s.m * s.k, 0x3f80), b(s.k * s.n, 0x3f00);
    std::vector<float> c(s.m * s.n);
    long lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    Part whole{a.data(), b.data(), c.data(), s.m, s.n};
    double flops = 2.0 * s.m * s.n * s.k;
    double api = best([&] { run(engine, s, false, whole, lda, ldb); });
    Matmul kept(engine, s, whole, lda, ldb);
    double reused = best([&] { kept.run(); });
    double made = best([&] { run(engine, s, true, whole, lda, ldb); });
    Matmul packed(engine, s, whole, lda, ldb, /*packed=*/true);
    double prepacked = best([&] { packed.run(); });
    std::printf("| %s | %ld x %ld x %ld%s | %.1fM | %.1f | %.1f | %.1f | %.1f |\n", s.name, s.m,
                s.n, s.k,
                s.transA   ? " (A^T)"
                : s.transB ? " (B^T)"
                           : "",
                s.m * s.n / 1e6, flops / api / 1e9, flops / reused / 1e9, flops / made / 1e9,
                flops / prepacked / 1e9);
  }

  std::printf("\n| GEMM | M x N x K | GEMM API, halves on 2 threads ms | matmul primitive, halves "
              "on 2 threads ms |\n|---|---|---|---|\n");
  for (const Shape &s : kShapes) {
    if (s.m * s.n < (1L << 24))
      continue;
    std::vector<uint16_t> a(s.m * s.k, 0x3f80), b(s.k * s.n, 0x3f00);
    std::vector<float> c(s.m * s.n);
    long lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    bool byRows = s.m > s.n;
    long extent = byRows ? s.m : s.n, middle = (extent / 32) * 16;
    double times[2];
    for (bool matmul : {false, true}) {
      times[matmul] = best([&] {
        std::thread other([&] {
          omp_set_num_threads(1);
          run(engine, s, matmul,
              partOf(s, byRows, middle, extent, a.data(), lda, b.data(), ldb, c.data()), lda, ldb);
        });
        run(engine, s, matmul, partOf(s, byRows, 0, middle, a.data(), lda, b.data(), ldb, c.data()),
            lda, ldb);
        other.join();
      });
    }
    std::printf("| %s | %ld x %ld x %ld | %.1f | %.1f |\n", s.name, s.m, s.n, s.k, times[0] * 1e3,
                times[1] * 1e3);
  }
  return 0;
}
