//===- ElementCountTest.cpp - checkedProduct --------------------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/ElementCount.h"

#include <gtest/gtest.h>

using namespace pmlir;

TEST(ElementCount, ProductWithinTheBound) {
  EXPECT_EQ(checkedProduct({}), 1);
  EXPECT_EQ(checkedProduct({3, 0, 5}), 0);
  EXPECT_EQ(checkedProduct({50257, 768}), int64_t(50257) * 768);
  EXPECT_EQ(checkedProduct({int64_t(1) << 24, int64_t(1) << 24}), kMaxTensorElements);
}

TEST(ElementCount, RefusesPastTheBoundNegativeAndOverflow) {
  EXPECT_EQ(checkedProduct({(int64_t(1) << 24) + 1, int64_t(1) << 24}), std::nullopt);
  EXPECT_EQ(checkedProduct({4, -1}), std::nullopt);
  // Past int64 on the way: refused, not wrapped to a small product.
  EXPECT_EQ(checkedProduct({int64_t(1) << 62, 4, 0}), std::nullopt);
  EXPECT_EQ(checkedProduct({int64_t(1) << 32, int64_t(1) << 32}, INT64_MAX), std::nullopt);
  EXPECT_EQ(checkedProduct({int64_t(1) << 31, int64_t(1) << 31}, INT64_MAX), int64_t(1) << 62);
}
