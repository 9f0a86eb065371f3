//===- HalfFloatTest.cpp - bf16 and f16 rounding of the MPI backend -------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/HalfFloat.h"

#include "pmlir/Runtime/CpuKernels.h"
#include "pmlir/Runtime/Runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace pmlir::rt;

namespace {

TEST(HalfFloat, Bf16RoundsToNearestEven) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xc000);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: to the even one, 1.
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 * 2^-8 lies halfway between 1 + 2^-7 (odd) and 1 + 2^-6.
  EXPECT_EQ(floatToBf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81);
  // 256 + 1 is a tie too: 256 stays.
  EXPECT_EQ(bf16ToFloat(floatToBf16(257.0f)), 256.0f);
  // The largest finite value rounds up to infinity from halfway on.
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::max()), 0x7f80);
  EXPECT_EQ(floatToBf16(std::numeric_limits<float>::infinity()), 0x7f80);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  // Every bf16 is an f32 and comes back unchanged.
  for (uint32_t h = 0; h < 0x10000; ++h)
    if (!std::isnan(bf16ToFloat(static_cast<uint16_t>(h))))
      EXPECT_EQ(floatToBf16(bf16ToFloat(static_cast<uint16_t>(h))), h) << h;
}

TEST(HalfFloat, F16RoundsToNearestEven) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00);
  EXPECT_EQ(floatToF16(-2.0f), 0xc000);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bff); // the largest finite f16
  EXPECT_EQ(floatToF16(65519.0f), 0x7bff);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00); // halfway: to even, infinity
  // 1 + 2^-11 is a tie: 1; 1 + 3 * 2^-11: up to 1 + 2^-9.
  EXPECT_EQ(floatToF16(1.0f + 0x1p-11f), 0x3c00);
  EXPECT_EQ(floatToF16(1.0f + 3 * 0x1p-11f), 0x3c02);
  // Subnormals: steps of 2^-24; 2^-25 is a tie to zero, 3 * 2^-25 to 2.
  EXPECT_EQ(floatToF16(0x1p-24f), 0x0001);
  EXPECT_EQ(floatToF16(0x1p-25f), 0x0000);
  EXPECT_EQ(floatToF16(3 * 0x1p-25f), 0x0002);
  EXPECT_EQ(floatToF16(0x1p-14f - 0x1p-26f), 0x0400); // up to the smallest normal
  EXPECT_EQ(floatToF16(-0.0f), 0x8000);
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(std::nanf("")))));
  EXPECT_EQ(f16ToFloat(0x0001), 0x1p-24f);
  EXPECT_EQ(f16ToFloat(0x7c00), std::numeric_limits<float>::infinity());
  for (uint32_t h = 0; h < 0x10000; ++h)
    if (!std::isnan(f16ToFloat(static_cast<uint16_t>(h))))
      EXPECT_EQ(floatToF16(f16ToFloat(static_cast<uint16_t>(h))), h) << h;
}

// The runtime's rounding of whole buffers (vectorized for the CPU it runs
// on, split over its threads) gives floatToBf16's bits at every length and
// alignment: ties, subnormals (kept, not flushed), the carry into infinity,
// NaNs (quiet, even one whose rounding would carry), and random bits.
TEST(HalfFloat, RuntimeRoundingIsFloatToBf16) {
  std::vector<uint32_t> bits = {0x00000000, 0x80000000, 0x00000001, 0x00008000, 0x00018000,
                                0x007fffff, 0x807fffff, 0x3f808000, 0x3f818000, 0x3f808001,
                                0x7f7f7fff, 0x7f7f8000, 0x7f7fffff, 0xff7fffff, 0x7f800000,
                                0xff800000, 0x7f800001, 0x7fc00000, 0xffc00001, 0x7fff8000,
                                0x7fffffff, 0xffffffff};
  std::mt19937 random(7);
  while (bits.size() < 5000)
    bits.push_back(static_cast<uint32_t>(random()));
  std::vector<float> values(bits.size());
  std::memcpy(values.data(), bits.data(), bits.size() * sizeof(float));
  for (int threads : {1, 3}) {
    pmlir_rt_set_parallel_threads(threads);
    for (size_t offset : {0, 1, 3})
      for (size_t count : {0, 1, 15, 16, 17, 31, 32, 33, 100, 4000}) {
        std::vector<uint16_t> rounded(count + 1, 0xabcd);
        pmlir_rt_round_to_bf16(values.data() + offset, rounded.data(), static_cast<int64_t>(count));
        for (size_t i = 0; i < count; ++i)
          ASSERT_EQ(rounded[i], floatToBf16(values[offset + i]))
              << "bits 0x" << std::hex << bits[offset + i] << std::dec << ", element " << i
              << " of " << count << ", " << threads << " threads";
        EXPECT_EQ(rounded[count], 0xabcd) << "written past " << count;
      }
  }
  pmlir_rt_set_parallel_threads(1);
}

} // namespace
