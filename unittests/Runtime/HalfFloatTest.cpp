//===- HalfFloatTest.cpp - bf16 and f16 rounding of the MPI backend -------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "../../lib/Runtime/HalfFloat.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

} // namespace
