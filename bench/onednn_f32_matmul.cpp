// onednn_f32_matmul.cpp - oneDNN's f32 GEMM API (dnnl_sgemm) against its
// matmul primitive, on GPT-2 small's GEMMs, without pmlir.
//
//   g++ -O2 -std=c++17 -fopenmp bench/onednn_f32_matmul.cpp -o /tmp/onednn_f32_matmul -ldnnl
//   /tmp/onednn_f32_matmul
//
// One thread, GFLOP/s, best of 5 calls after one, row-major operands with
// plain strides: dnnl_sgemm; a dnnl::matmul made in every call (from
// oneDNN's primitive cache, as pmlir-run makes its bf16 ones) with the
// library's scratchpad; the same with a scratchpad the caller owns (made
// once, the largest any shape asks for), and that scratchpad's size; one
// made once on a B reordered once into the primitive's layout (as
// pmlir-run packs a program's bf16 weights on AMX). The GEMM API
// allocates its packing buffers in every call; the primitive with a
// caller's scratchpad allocates nothing once made. Cited in
// docs/performance.md.
#include "gemm_bench.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <vector>

extern "C" void omp_set_num_threads(int);

namespace {

const Shape kShapes[] = {
    {"QKV forward, 128 tokens", false, false, 128, 2304, 768},
    {"attention projection forward, 128 tokens", false, false, 128, 768, 768},
    {"FC1 forward, 128 tokens", false, false, 128, 3072, 768},
    {"FC2 forward, 128 tokens", false, false, 128, 768, 3072},
    {"FC1 input gradient, 128 tokens", false, true, 128, 768, 3072},
    {"FC1 weight gradient, 128 tokens", true, false, 768, 3072, 128},
    {"LM head forward, 128 tokens", false, true, 128, 50257, 768},
    {"QKV forward, 1024 tokens", false, false, 1024, 2304, 768},
    {"FC1 forward, 1024 tokens", false, false, 1024, 3072, 768},
    {"FC2 forward, 1024 tokens", false, false, 1024, 768, 3072},
    {"FC1 input gradient, 1024 tokens", false, true, 1024, 768, 3072},
    {"FC1 weight gradient, 1024 tokens", true, false, 768, 3072, 1024},
    {"LM head forward, 1024 tokens", false, true, 1024, 50257, 768},
    {"LM head weight gradient, 1024 tokens", true, false, 50257, 768, 1024},
    {"attention scores, 1024 tokens, one head", false, true, 1024, 1024, 64},
};

template <typename F> double best(F f) { return best(f, 1, 5); }

dnnl::matmul::primitive_desc matmulFor(dnnl::engine &engine, const Shape &s, long lda, long ldb,
                                       bool userScratchpad, bool packedB = false) {
  using dt = dnnl::memory::data_type;
  dnnl::memory::desc a({s.m, s.k}, dt::f32,
                       s.transA ? dnnl::memory::dims{1, lda} : dnnl::memory::dims{lda, 1});
  dnnl::memory::desc b({s.k, s.n}, dt::f32,
                       s.transB ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1});
  dnnl::memory::desc c({s.m, s.n}, dt::f32, dnnl::memory::dims{s.n, 1});
  dnnl::primitive_attr attr;
  if (userScratchpad)
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  if (packedB)
    b = dnnl::memory::desc({s.k, s.n}, dt::f32, dnnl::memory::format_tag::any);
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine);
}

} // namespace

int main() {
  omp_set_num_threads(1);
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  std::vector<char> scratch(1 << 26);
  std::printf("| GEMM | M x N x K | dnnl_sgemm | matmul, library scratchpad | matmul, caller's "
              "scratchpad | scratchpad KiB | matmul, B packed once | matmul kernel |\n"
              "|---|---|---|---|---|---|---|---|\n");
  for (const Shape &s : kShapes) {
    std::vector<float> a(s.m * s.k, 1.0f), b(s.k * s.n, 0.5f), c(s.m * s.n);
    long lda = s.transA ? s.m : s.k, ldb = s.transB ? s.k : s.n;
    double flops = 2.0 * s.m * s.n * s.k;
    double api = best([&] {
      dnnl_sgemm(s.transA ? 'T' : 'N', s.transB ? 'T' : 'N', s.m, s.n, s.k, 1.0f, a.data(), lda,
                 b.data(), ldb, 0.0f, c.data(), s.n);
    });
    double times[2];
    size_t scratchBytes = 0;
    std::string kernel;
    for (bool user : {false, true}) {
      times[user] = best([&] {
        auto pd = matmulFor(engine, s, lda, ldb, user);
        dnnl::matmul primitive(pd);
        dnnl::memory am(pd.src_desc(), engine, a.data()), bm(pd.weights_desc(), engine, b.data()),
            cm(pd.dst_desc(), engine, c.data());
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}};
        if (user) {
          scratchBytes = pd.scratchpad_desc().get_size();
          kernel = pd.impl_info_str();
          if (scratchBytes > scratch.size())
            scratch.resize(scratchBytes);
          args[DNNL_ARG_SCRATCHPAD] = dnnl::memory(pd.scratchpad_desc(), engine, scratch.data());
        }
        primitive.execute(stream, args);
        stream.wait();
      });
    }
    auto packedPd = matmulFor(engine, s, lda, ldb, /*userScratchpad=*/false, /*packedB=*/true);
    dnnl::matmul packed(packedPd);
    dnnl::memory plain(
        dnnl::memory::desc({s.k, s.n}, dnnl::memory::data_type::f32,
                           s.transB ? dnnl::memory::dims{1, ldb} : dnnl::memory::dims{ldb, 1}),
        engine, b.data()),
        packedB(packedPd.weights_desc(), engine);
    dnnl::reorder(plain, packedB).execute(stream, plain, packedB);
    stream.wait();
    dnnl::memory am(packedPd.src_desc(), engine, a.data()),
        cm(packedPd.dst_desc(), engine, c.data());
    double prepacked = best([&] {
      packed.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, packedB}, {DNNL_ARG_DST, cm}});
      stream.wait();
    });
    std::printf("| %s | %ld x %ld x %ld%s | %.1f | %.1f | %.1f | %.0f | %.1f | %s |\n", s.name, s.m,
                s.n, s.k,
                s.transA   ? " (A^T)"
                : s.transB ? " (B^T)"
                           : "",
                flops / api / 1e9, flops / times[0] / 1e9, flops / times[1] / 1e9,
                scratchBytes / 1024.0, flops / prepacked / 1e9, kernel.c_str());
  }
  return 0;
}
