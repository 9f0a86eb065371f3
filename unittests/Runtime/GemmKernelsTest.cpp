//===- GemmKernelsTest.cpp - OpenBLAS's kernels chosen by CPU features ----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/GemmKernels.h"
#include "../../lib/Runtime/HalfFloat.h"
#include "pmlir/Runtime/Runtime.h"

#include <gtest/gtest.h>
#include <malloc.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace pmlir::rt;

namespace {

/// Where a row-major GEMM's operands are stored: A m x k (k x m with
/// transA), B k x n (n x k with transB), C m x n, each row `pad` elements
/// longer than it needs.
struct StoredGemm {
  int64_t m, n, k;
  bool transA, transB;
  int64_t aRows, lda, bRows, ldb, ldc;

  StoredGemm(int64_t m, int64_t n, int64_t k, bool transA, bool transB, int64_t pad)
      : m(m), n(n), k(k), transA(transA), transB(transB), aRows(transA ? k : m),
        lda((transA ? m : k) + pad), bRows(transB ? n : k), ldb((transB ? k : n) + pad),
        ldc(n + pad) {}

  /// Element (i, j) of A B in double, starting from `start`, and the sum of
  /// its terms' magnitudes; `widen` reads a stored element.
  template <typename T, typename Widen>
  std::pair<double, double> exact(const T *a, const T *b, int64_t i, int64_t j, double start,
                                  Widen widen) const {
    double sum = start, magnitude = std::fabs(start);
    for (int64_t p = 0; p < k; ++p) {
      double x = widen(transA ? a[p * lda + i] : a[i * lda + p]);
      double y = widen(transB ? b[j * ldb + p] : b[p * ldb + j]);
      sum += x * y;
      magnitude += std::fabs(x * y);
    }
    return {sum, magnitude};
  }

  std::string describe() const {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k) +
           (transA ? " A^T" : "") + (transB ? " B^T" : "");
  }
};

/// The bound, relative to the sum of the terms' magnitudes, of any order
/// of f32 sums of `terms` exact terms: gamma_terms (Higham).
double sumBound(int64_t terms) {
  const double unit = std::ldexp(1.0, -24);
  return terms * unit / (1 - terms * unit);
}

TEST(GemmKernels, CoreLevels) {
  EXPECT_EQ(openBlasCoreLevel("Prescott"), SimdLevel::Sse);
  EXPECT_EQ(openBlasCoreLevel("NEHALEM"), SimdLevel::Sse);
  EXPECT_EQ(openBlasCoreLevel("Sandybridge"), SimdLevel::Avx);
  EXPECT_EQ(openBlasCoreLevel("Haswell"), SimdLevel::Avx2);
  EXPECT_EQ(openBlasCoreLevel("Zen"), SimdLevel::Avx2);
  EXPECT_EQ(openBlasCoreLevel("SkylakeX"), SimdLevel::Avx512);
  EXPECT_EQ(openBlasCoreLevel("Cooperlake"), SimdLevel::Avx512Bf16);
  EXPECT_EQ(openBlasCoreLevel("SapphireRapids"), SimdLevel::Avx512Bf16);
  // A core the list does not know is never overridden.
  EXPECT_EQ(openBlasCoreLevel("NeoverseN2"), std::nullopt);
  EXPECT_EQ(betterOpenBlasCore("NeoverseN2", SimdLevel::Avx512Bf16), std::nullopt);
}

// The generic kernels an AVX-512 CPU newer than OpenBLAS's list gets are
// replaced by the kernels of the CPU's level; a pick as good stays.
TEST(GemmKernels, BetterCore) {
  EXPECT_EQ(betterOpenBlasCore("Prescott", SimdLevel::Avx512Bf16), "Cooperlake");
  EXPECT_EQ(betterOpenBlasCore("Prescott", SimdLevel::Avx512), "SkylakeX");
  EXPECT_EQ(betterOpenBlasCore("Zen", SimdLevel::Avx512Bf16), "Cooperlake");
  EXPECT_EQ(betterOpenBlasCore("Sandybridge", SimdLevel::Avx2), "Haswell");
  EXPECT_EQ(betterOpenBlasCore("Core2", SimdLevel::Avx), "Sandybridge");
  EXPECT_EQ(betterOpenBlasCore("Prescott", SimdLevel::Sse), std::nullopt);
  EXPECT_EQ(betterOpenBlasCore("Cooperlake", SimdLevel::Avx512Bf16), std::nullopt);
  EXPECT_EQ(betterOpenBlasCore("SkylakeX", SimdLevel::Avx512), std::nullopt);
  // OpenBLAS knowing better (a CPU whose features cpuid hides) is kept.
  EXPECT_EQ(betterOpenBlasCore("SkylakeX", SimdLevel::Avx2), std::nullopt);
}

TEST(GemmKernels, Names) {
  EXPECT_STREQ(simdLevelName(SimdLevel::Avx512Bf16), "AVX-512 BF16");
  EXPECT_STREQ(simdLevelName(SimdLevel::Sse), "SSE");
}

// The rates bf16Gemm chooses by: measured where the CPU has AVX-512 BF16,
// within what one core of any CPU runs (a 512-bit instruction each 10 ns
// at least; two FMA units at 5 GHz are 320 GFLOP/s, the dot products 640),
// zero elsewhere; and the choice follows them where no variable or AMX
// decides it.
TEST(GemmKernels, Bf16DotRates) {
  const Bf16DotRates &rates = bf16DotRates();
  if (cpuSimdLevel() < SimdLevel::Avx512Bf16) {
    EXPECT_EQ(rates.f32Gflops, 0.0);
    EXPECT_EQ(rates.bf16Gflops, 0.0);
    EXPECT_EQ(bf16Gemm(), Bf16Gemm::Widened);
    return;
  }
  EXPECT_GT(rates.f32Gflops, 3.2);
  EXPECT_LT(rates.f32Gflops, 1000.0);
  EXPECT_GT(rates.bf16Gflops, 3.2);
  EXPECT_LT(rates.bf16Gflops, 1000.0);
  for (const char *variable : {"PMLIR_TEST_BF16_GEMM_WIDENED", "PMLIR_TEST_BF16_GEMM_ONEDNN",
                               "PMLIR_TEST_BF16_MATMUL_WITHOUT_AMX"})
    if (std::getenv(variable))
      GTEST_SKIP() << variable << " decides the bf16 GEMM";
  if (!oneDnnLoads())
    GTEST_SKIP() << "libdnnl.so.2 does not load here";
  bool oneDnn = cpuHasAmx() || rates.bf16Gflops >= rates.f32Gflops;
  EXPECT_EQ(bf16Gemm(), oneDnn ? Bf16Gemm::OneDnn : Bf16Gemm::Widened)
      << rates.bf16Gflops << " bf16 against " << rates.f32Gflops << " f32 GFLOP/s";
}

// oneDNN's SGEMM split in parts over the runtime's threads, against sums
// in double: every transpose, C's rows or columns split (m > n or not),
// extents off the 16-element grain, rows longer than the matrices (the
// padding after each row of C must stay as it was), with and without
// accumulation, on 1 to 3 threads. Each element within the bound of any
// order of its k (k + 1 accumulating) f32 products' sum.
TEST(GemmKernels, OneDnnSplitGemm) {
  if (!oneDnnLoads())
    GTEST_SKIP() << "libdnnl.so.2 does not load here";
  struct Shape {
    int64_t m, n, k;
  };
  // The first three above 3 x 2^21 FLOPs, split in as many parts as
  // threads; the last two too small to split.
  const Shape shapes[] = {
      {37, 211, 700}, {211, 37, 700}, {150, 150, 400}, {1, 97, 33}, {97, 1, 33}};
  std::mt19937 random(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float padding = std::numeric_limits<float>::quiet_NaN();
  for (int threads : {1, 2, 3}) {
    pmlir_rt_set_parallel_threads(threads);
    setGemmThreads(threads);
    for (const Shape &s : shapes)
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          for (bool accumulate : {false, true}) {
            StoredGemm g(s.m, s.n, s.k, transA, transB, /*pad=*/3);
            int64_t lda = g.lda, ldb = g.ldb, ldc = g.ldc;
            std::vector<float> a(g.aRows * lda), b(g.bRows * ldb), c(s.m * ldc, padding);
            for (float &x : a)
              x = uniform(random);
            for (float &x : b)
              x = uniform(random);
            for (int64_t i = 0; i < s.m; ++i)
              for (int64_t j = 0; j < s.n; ++j)
                c[i * ldc + j] = uniform(random);
            std::vector<float> before = c;
            int64_t calls = 0, splitBefore = 0, splitAfter = 0;
            pmlir_rt_parallel_counts(&calls, &splitBefore);
            ASSERT_TRUE(oneDnnF32Gemm(transA, transB, s.m, s.n, s.k, a.data(), lda, b.data(), ldb,
                                      c.data(), ldc, accumulate));
            pmlir_rt_parallel_counts(&calls, &splitAfter);
            bool large = 2.0 * s.m * s.n * s.k > 3.0 * (1 << 21);
            EXPECT_EQ(splitAfter - splitBefore, threads > 1 && large ? 1 : 0)
                << s.m << "x" << s.n << "x" << s.k << " on " << threads << " threads";
            double gamma = sumBound(s.k + (accumulate ? 1 : 0));
            for (int64_t i = 0; i < s.m; ++i) {
              for (int64_t j = 0; j < s.n; ++j) {
                auto [sum, magnitude] =
                    g.exact(a.data(), b.data(), i, j, accumulate ? before[i * ldc + j] : 0.0,
                            [](float x) { return double(x); });
                ASSERT_LE(std::fabs(c[i * ldc + j] - sum), gamma * magnitude)
                    << "threads " << threads << ", " << g.describe()
                    << (accumulate ? " accumulating" : "") << ", element " << i << "," << j;
              }
              for (int64_t j = s.n; j < ldc; ++j)
                ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "padding written, row " << i;
            }
          }
  }
  pmlir_rt_set_parallel_threads(1);
  setGemmThreads(1);
}

// oneDNN's bf16 GEMM where its output is large enough for the matmul
// primitive (the LM head's shapes): every transpose, C's columns split
// (m < n) or its rows, rows as long as the matrices (the primitive's
// brgemm kernels) or padded (its GEMM API), on 1 to 3 threads. Sampled
// elements (of a long dimension every 97th and the last) within the bound
// of any order of the k exact products' f32 sum; the padding after each
// row of C stays as it was.
TEST(GemmKernels, OneDnnBf16Matmul) {
  if (!oneDnnLoads() || bf16Gemm() != Bf16Gemm::OneDnn)
    GTEST_SKIP() << "no oneDNN bf16 GEMM here";
  struct Shape {
    int64_t m, n, k;
  };
  // 64 x 262181 = 2^24 + 2368 outputs; 16 x 33000, a vocabulary-sized
  // dimension (2^15 + 232) of a small output.
  const Shape shapes[] = {{64, 262181, 40}, {262181, 64, 40}, {16, 33000, 40}};
  if (!oneDnnBf16UsesMatmul(64, 262181, 40, false))
    GTEST_SKIP() << "the matmul primitive is not used on this CPU";
  EXPECT_FALSE(oneDnnBf16UsesMatmul(64, 262181, 40, true)) << "accumulating";
  EXPECT_FALSE(oneDnnBf16UsesMatmul(64, 4096, 40, false)) << "a small output";
  EXPECT_TRUE(oneDnnBf16UsesMatmul(16, 33000, 40, false)) << "a vocabulary-sized dimension";
  EXPECT_FALSE(oneDnnBf16UsesMatmul(16, 32767, 40, false)) << "below 2^15";
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float padding = std::numeric_limits<float>::quiet_NaN();
  for (int threads : {1, 2, 3}) {
    pmlir_rt_set_parallel_threads(threads);
    setGemmThreads(threads);
    for (const Shape &s : shapes)
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          for (int64_t pad : {0, 3}) {
            StoredGemm g(s.m, s.n, s.k, transA, transB, pad);
            int64_t lda = g.lda, ldb = g.ldb, ldc = g.ldc;
            std::vector<uint16_t> a(g.aRows * lda), b(g.bRows * ldb);
            for (uint16_t &x : a)
              x = floatToBf16(uniform(random));
            for (uint16_t &x : b)
              x = floatToBf16(uniform(random));
            std::vector<float> c(s.m * ldc, padding);
            ASSERT_TRUE(oneDnnBf16Gemm(transA, transB, s.m, s.n, s.k, a.data(), lda, b.data(), ldb,
                                       c.data(), ldc, /*accumulate=*/false));
            double gamma = sumBound(s.k);
            auto check = [&](int64_t i, int64_t j) {
              auto [sum, magnitude] =
                  g.exact(a.data(), b.data(), i, j, 0.0, [](uint16_t x) { return bf16ToFloat(x); });
              bool within = std::fabs(c[i * ldc + j] - sum) <= gamma * magnitude;
              EXPECT_TRUE(within) << "threads " << threads << ", " << g.describe() << ", element "
                                  << i << "," << j << ": " << c[i * ldc + j] << " against " << sum;
              return within;
            };
            // Of a long dimension every 97th index and the last, of a short
            // one all.
            auto sampled = [](int64_t extent) {
              std::vector<int64_t> indices;
              int64_t step = extent > 1000 ? 97 : 1;
              for (int64_t i = 0; i < extent; i += step)
                indices.push_back(i);
              indices.push_back(extent - 1);
              return indices;
            };
            for (int64_t i : sampled(s.m))
              for (int64_t j : sampled(s.n))
                ASSERT_TRUE(check(i, j));
            for (int64_t i = 0; i < s.m; ++i)
              for (int64_t j = s.n; j < ldc; ++j)
                ASSERT_TRUE(std::isnan(c[i * ldc + j])) << "padding written, row " << i;
          }
  }
  pmlir_rt_set_parallel_threads(1);
  setGemmThreads(1);
}

} // namespace

namespace {

// A bf16 GEMM whose B lies in a kept operand (a program's bf16 weight):
// B is reordered into the matmul primitive's layout at the first GEMM,
// the copy read by the next (no new copy, C the same bits) and by one
// into a bf16 C (its sums rounded as the primitive writes them), freed when
// the operand is forgotten; a B rewritten and kept again is packed again
// (C follows the new values). B is a slice of a larger kept operand, as
// a layer's weight of a stacked tensor is; every transpose, C's rows
// split (whether m < n or not), on 1 to 3 threads. Each element within
// the bound of any order of its k exact products' f32 sum.
TEST(GemmKernels, OneDnnBf16KeptOperand) {
  if (!oneDnnLoads() || bf16Gemm() != Bf16Gemm::OneDnn ||
      !oneDnnBf16UsesMatmul(64, 262181, 40, false))
    GTEST_SKIP() << "the matmul primitive is not used on this CPU";
  if (std::getenv("PMLIR_TEST_BF16_WEIGHTS_UNPACKED"))
    GTEST_SKIP() << "PMLIR_TEST_BF16_WEIGHTS_UNPACKED is set";
  struct Shape {
    int64_t m, n, k;
  };
  // Above 3 x 2^21 FLOPs: split in as many parts as threads.
  const Shape shapes[] = {{64, 700, 300}, {700, 64, 300}};
  std::mt19937 random(13);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const float padding = std::numeric_limits<float>::quiet_NaN();
  const int64_t offset = 1000, tail = 77;
  for (int threads : {1, 2, 3}) {
    pmlir_rt_set_parallel_threads(threads);
    setGemmThreads(threads);
    for (const Shape &s : shapes)
      for (bool transA : {false, true})
        for (bool transB : {false, true}) {
          StoredGemm g(s.m, s.n, s.k, transA, transB, /*pad=*/0);
          std::vector<uint16_t> a(g.aRows * g.lda), kept(offset + g.bRows * g.ldb + tail);
          for (uint16_t &x : a)
            x = floatToBf16(uniform(random));
          for (uint16_t &x : kept)
            x = floatToBf16(uniform(random));
          const uint16_t *b = kept.data() + offset;
          auto multiply = [&] {
            std::vector<float> c(s.m * g.ldc, padding);
            EXPECT_TRUE(oneDnnBf16Gemm(transA, transB, s.m, s.n, s.k, a.data(), g.lda, b, g.ldb,
                                       c.data(), g.ldc, /*accumulate=*/false));
            double gamma = sumBound(s.k);
            for (int64_t i = 0; i < s.m; ++i)
              for (int64_t j = 0; j < s.n; ++j) {
                auto [sum, magnitude] =
                    g.exact(a.data(), b, i, j, 0.0, [](uint16_t x) { return bf16ToFloat(x); });
                EXPECT_LE(std::fabs(c[i * g.ldc + j] - sum), gamma * magnitude)
                    << "threads " << threads << ", " << g.describe() << ", element " << i << ","
                    << j;
              }
            return c;
          };
          // Into bf16 C: each element within the sum's bound and bf16's
          // rounding (its unit roundoff, 2^-8 relative: 8 significant
          // bits); the padding after each
          // row stays.
          auto multiplyToBf16 = [&] {
            const uint16_t unwritten = 0xffff;
            std::vector<uint16_t> c(s.m * g.ldc, unwritten);
            ASSERT_TRUE(oneDnnBf16RunsMatmul(transB, s.m, s.n, s.k, b, g.ldb, false));
            EXPECT_TRUE(oneDnnBf16GemmToBf16(transA, transB, s.m, s.n, s.k, a.data(), g.lda, b,
                                             g.ldb, c.data(), g.ldc));
            double gamma = sumBound(s.k), unit = std::ldexp(1.0, -8);
            for (int64_t i = 0; i < s.m; ++i)
              for (int64_t j = 0; j < g.ldc; ++j) {
                if (j >= s.n) {
                  EXPECT_EQ(c[i * g.ldc + j], unwritten) << "padding written, row " << i;
                  continue;
                }
                auto [sum, magnitude] =
                    g.exact(a.data(), b, i, j, 0.0, [](uint16_t x) { return bf16ToFloat(x); });
                double f32Error = gamma * magnitude;
                EXPECT_LE(std::fabs(bf16ToFloat(c[i * g.ldc + j]) - sum),
                          f32Error + unit * (std::fabs(sum) + f32Error))
                    << "threads " << threads << ", " << g.describe() << ", bf16 element " << i
                    << "," << j;
              }
          };
          std::string what = g.describe() + " on " + std::to_string(threads) + " threads";
          keepBf16GemmOperand(kept.data(), static_cast<int64_t>(kept.size()));
          EXPECT_EQ(keptBf16GemmCopies(), 0) << what;
          std::vector<float> first = multiply();
          int64_t copies = keptBf16GemmCopies();
          // Split by rows, a part of A stored transposed is a slice of its
          // columns, which the brgemm kernels do not take: the API runs.
          if (transA && threads > 1)
            EXPECT_EQ(copies, 0) << what;
          else
            EXPECT_EQ(copies, 1) << what << ": the parts read one copy";
          std::vector<float> second = multiply();
          EXPECT_EQ(keptBf16GemmCopies(), copies) << what << ": the copies read again";
          EXPECT_EQ(std::memcmp(first.data(), second.data(), first.size() * sizeof(float)), 0)
              << what;
          multiplyToBf16();
          EXPECT_EQ(keptBf16GemmCopies(), copies) << what << ": the copies read into bf16 too";
          forgetBf16GemmOperand(kept.data());
          EXPECT_EQ(keptBf16GemmCopies(), 0) << what;
          for (uint16_t &x : kept)
            x = floatToBf16(uniform(random));
          keepBf16GemmOperand(kept.data(), static_cast<int64_t>(kept.size()));
          multiply();
          EXPECT_EQ(keptBf16GemmCopies(), copies) << what << ": packed again";
          forgetBf16GemmOperand(kept.data());
          if (::testing::Test::HasFailure())
            return;
        }
  }
  pmlir_rt_set_parallel_threads(1);
  setGemmThreads(1);
}

// oneDNN's GEMM scratch (64 KiB or more, allocated in every call) takes
// pages outside the heap, kept for the next call of its size: a first GEMM
// that needs one maps it, the same GEMM again maps nothing, and the heap
// does not grow for it. Allocations of the same size by anyone else stay
// glibc's.
TEST(GemmKernels, OneDnnScratchOutsideHeap) {
  if (oneDnnScratchBlocks() < 0)
    GTEST_SKIP() << "built with AddressSanitizer: the scratch stays in the heap";
  if (!oneDnnLoads())
    GTEST_SKIP() << "libdnnl.so.2 does not load here";
  pmlir_rt_set_parallel_threads(1);
  setGemmThreads(1);
  // GPT-2 small's FC1 at 256 rows: oneDNN packs panels of A and B.
  const int64_t m = 256, n = 3072, k = 768;
  std::vector<float> a(m * k, 0.5f), b(k * n, 0.25f), c(m * n);
  auto multiply = [&] {
    ASSERT_TRUE(oneDnnF32Gemm(false, false, m, n, k, a.data(), k, b.data(), n, c.data(), n, false));
    ASSERT_EQ(c[0], 0.125f * k);
    ASSERT_EQ(c[m * n - 1], 0.125f * k);
  };
  int64_t before = oneDnnScratchBlocks();
  multiply();
  int64_t first = oneDnnScratchBlocks();
  EXPECT_GE(first, before);
  EXPECT_GE(first, 1) << "no scratch of oneDNN's was mapped";
  size_t heap = mallinfo2().arena;
  for (int i = 0; i < 3; ++i)
    multiply();
  EXPECT_EQ(oneDnnScratchBlocks(), first) << "the kept scratch was not reused";
  EXPECT_EQ(mallinfo2().arena, heap) << "the heap grew in GEMMs that reuse their scratch";
  void *mine = nullptr;
  ASSERT_EQ(posix_memalign(&mine, 64, size_t(1) << 20), 0);
  EXPECT_EQ(oneDnnScratchBlocks(), first) << "an allocation not oneDNN's was mapped";
  std::memset(mine, 1, size_t(1) << 20);
  free(mine);
  void *misaligned = nullptr;
  EXPECT_EQ(posix_memalign(&misaligned, 3, 64), EINVAL);
}

// Where bf16 GEMMs widen their operands, a kept operand is widened once,
// over the runtime's threads: a span inside it reads the f32 value of each
// bf16 one (every bit pattern, NaN and infinities included) from that copy,
// a span reaching past it reads none, and forgetting it frees the copy.
TEST(GemmKernels, WidenedKeptOperand) {
  if (keptBf16Operands() != KeptBf16Operands::Widened)
    GTEST_SKIP() << "bf16 GEMMs do not widen kept operands on this CPU";
  constexpr int64_t elements = 70000, past = 100;
  std::vector<uint16_t> stored(elements + past);
  for (size_t i = 0; i < stored.size(); ++i)
    stored[i] = static_cast<uint16_t>(i * 40503u);
  const uint16_t *kept = stored.data();
  pmlir_rt_set_parallel_threads(2);
  EXPECT_EQ(widenedBf16GemmOperand(kept, 1), nullptr);
  keepBf16GemmOperand(kept, elements);
  EXPECT_EQ(keptBf16GemmCopies(), 1);
  const float *widened = widenedBf16GemmOperand(kept, elements);
  ASSERT_NE(widened, nullptr);
  for (int64_t i = 0; i < elements; ++i) {
    uint32_t bits;
    std::memcpy(&bits, &widened[i], sizeof(bits));
    ASSERT_EQ(bits, uint32_t(kept[i]) << 16) << "element " << i;
  }
  EXPECT_EQ(widenedBf16GemmOperand(kept + 300, elements - 300), widened + 300);
  EXPECT_EQ(widenedBf16GemmOperand(kept + 300, elements - 299), nullptr);
  EXPECT_EQ(widenedBf16GemmOperand(kept + elements, 1), nullptr);
  forgetBf16GemmOperand(kept);
  EXPECT_EQ(keptBf16GemmCopies(), 0);
  EXPECT_EQ(widenedBf16GemmOperand(kept, 1), nullptr);
  pmlir_rt_set_parallel_threads(1);
}

// A batch of bf16 GEMMs (attention's heads: batch 2 x 3, odd rows,
// columns and sums) on the matmul primitive in one call a part: every
// transpose, each operand stored as heads split out of a hidden dimension
// are ([b0][rows][b1][columns]: the second batch dimension inside the
// rows), into f32 and into bf16 C, on 1 to 3 threads. Each element within
// the bound of any order of its k exact products' f32 sum (and bf16's
// rounding for bf16 C). Operands whose rows are padded get no brgemm
// kernel from oneDNN: NotRun, and nothing written.
TEST(GemmKernels, OneDnnBf16BatchedGemm) {
  if (!oneDnnLoads() || bf16Gemm() != Bf16Gemm::OneDnn ||
      !oneDnnBf16UsesMatmul(64, 262181, 40, false))
    GTEST_SKIP() << "the matmul primitive is not used on this CPU";
  if (std::getenv("PMLIR_TEST_BF16_BATCH_PER_GEMM"))
    GTEST_SKIP() << "PMLIR_TEST_BF16_BATCH_PER_GEMM is set";
  const int64_t batch[] = {2, 3}, m = 37, n = 29, k = 45;
  std::mt19937 random(17);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (int threads : {1, 2, 3}) {
    pmlir_rt_set_parallel_threads(threads);
    setGemmThreads(threads);
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        // Stored [b0][rows][b1][columns + pad]: element (i0, i1, r, c) at
        // i0 b0 + r row + i1 b1 + c.
        struct Stored {
          int64_t rows, columns, b1, row, b0;
          std::vector<uint16_t> data;
          Stored(int64_t rows, int64_t columns, int64_t pad)
              : rows(rows), columns(columns), b1(columns + pad), row(3 * (columns + pad)),
                b0(rows * 3 * (columns + pad)), data(2 * b0) {}
          int64_t at(int64_t i0, int64_t i1, int64_t r, int64_t c) const {
            return i0 * b0 + r * row + i1 * b1 + c;
          }
        };
        Stored a(transA ? k : m, transA ? m : k, 0);
        Stored b(transB ? n : k, transB ? k : n, 0);
        for (uint16_t &x : a.data)
          x = floatToBf16(uniform(random));
        for (uint16_t &x : b.data)
          x = floatToBf16(uniform(random));
        // Element (i, p) of A and (p, j) of B as the GEMM reads them.
        int64_t aStrides[] = {a.b0, a.b1, transA ? 1 : a.row, transA ? a.row : 1};
        int64_t bStrides[] = {b.b0, b.b1, transB ? 1 : b.row, transB ? b.row : 1};
        const int64_t ldc = n;
        int64_t cStrides[] = {3 * m * ldc, m * ldc, ldc, 1};
        auto exact = [&](int64_t i0, int64_t i1, int64_t i, int64_t j) {
          double sum = 0, magnitude = 0;
          for (int64_t p = 0; p < k; ++p) {
            double x = bf16ToFloat(a.data[transA ? a.at(i0, i1, p, i) : a.at(i0, i1, i, p)]);
            double y = bf16ToFloat(b.data[transB ? b.at(i0, i1, j, p) : b.at(i0, i1, p, j)]);
            sum += x * y;
            magnitude += std::fabs(x * y);
          }
          return std::pair(sum, magnitude);
        };
        std::string what = std::string(transA ? "A^T " : "") + (transB ? "B^T " : "") + "on " +
                           std::to_string(threads) + " threads";
        const double gamma = sumBound(k), unit = std::ldexp(1.0, -8);
        std::vector<float> c(2 * 3 * m * ldc, std::numeric_limits<float>::quiet_NaN());
        ASSERT_EQ(oneDnnBf16BatchedGemm(2, batch, m, n, k, a.data.data(), aStrides, b.data.data(),
                                        bStrides, c.data(), cStrides),
                  BatchedGemm::Ran)
            << what;
        std::vector<uint16_t> h(c.size(), 0xffff);
        ASSERT_EQ(oneDnnBf16BatchedGemm(2, batch, m, n, k, a.data.data(), aStrides, b.data.data(),
                                        bStrides, h.data(), cStrides),
                  BatchedGemm::Ran)
            << what;
        for (int64_t i0 = 0; i0 < 2; ++i0)
          for (int64_t i1 = 0; i1 < 3; ++i1)
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < n; ++j) {
                int64_t at = i0 * cStrides[0] + i1 * cStrides[1] + i * ldc + j;
                auto [sum, magnitude] = exact(i0, i1, i, j);
                double f32Error = gamma * magnitude;
                EXPECT_LE(std::fabs(c[at] - sum), f32Error)
                    << what << ", element " << i0 << "," << i1 << "," << i << "," << j;
                EXPECT_LE(std::fabs(bf16ToFloat(h[at]) - sum),
                          f32Error + unit * (std::fabs(sum) + f32Error))
                    << what << ", bf16 element " << i0 << "," << i1 << "," << i << "," << j;
              }
      }
  }
  // Rows padded past the matrix: no brgemm kernel, nothing written.
  const int64_t padded = k + 3;
  std::vector<uint16_t> a(2 * 3 * m * padded, floatToBf16(1.0f)), b(2 * 3 * k * n, 0x3f80);
  int64_t aStrides[] = {3 * m * padded, m * padded, padded, 1};
  int64_t bStrides[] = {3 * k * n, k * n, n, 1};
  int64_t cStrides[] = {3 * m * n, m * n, n, 1};
  std::vector<float> c(2 * 3 * m * n, -7.0f);
  EXPECT_EQ(oneDnnBf16BatchedGemm(2, batch, m, n, k, a.data(), aStrides, b.data(), bStrides,
                                  c.data(), cStrides),
            BatchedGemm::NotRun);
  for (float x : c)
    ASSERT_EQ(x, -7.0f) << "written by a batch that did not run";
  pmlir_rt_set_parallel_threads(1);
  setGemmThreads(1);
}

} // namespace
