//===- GemmKernelsTest.cpp - OpenBLAS's kernels chosen by CPU features ----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Runtime/GemmKernels.h"

#include <gtest/gtest.h>

using namespace pmlir::rt;

namespace {

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

} // namespace
