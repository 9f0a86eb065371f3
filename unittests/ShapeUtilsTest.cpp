//===- ShapeUtilsTest.cpp - Shape rules of the tfm ops --------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/ShapeUtils.h"

#include "mlir/IR/BuiltinTypeInterfaces.h"

#include <gtest/gtest.h>

using namespace pmlir::tfm;

static constexpr int64_t kDyn = mlir::ShapedType::kDynamic;

TEST(ShapeUtils, FormatShapePrintsDynamicDimsAsQuestionMarks) {
  EXPECT_EQ(formatShape({}), "[]");
  EXPECT_EQ(formatShape({2, 8, 768}), "[2, 8, 768]");
  EXPECT_EQ(formatShape({kDyn, 8}), "[?, 8]");
}

TEST(ShapeUtils, DynamicDimsAgreeWithAnything) {
  EXPECT_TRUE(dimsAgree(4, 4));
  EXPECT_FALSE(dimsAgree(4, 5));
  EXPECT_TRUE(dimsAgree(kDyn, 5));
  EXPECT_TRUE(shapesAgree({2, kDyn}, {2, 9}));
  EXPECT_FALSE(shapesAgree({2, 3}, {2, 3, 1}));
}

TEST(ShapeUtils, TrailingSuffixIsTheBroadcastRule) {
  EXPECT_TRUE(isTrailingSuffix({2, 8, 16}, {16}));
  EXPECT_TRUE(isTrailingSuffix({2, 8, 16}, {8, 16}));
  EXPECT_TRUE(isTrailingSuffix({2, 8, 16}, {2, 8, 16}));
  EXPECT_TRUE(isTrailingSuffix({2, 8, 16}, {}));
  EXPECT_FALSE(isTrailingSuffix({2, 8, 16}, {8}));
  EXPECT_FALSE(isTrailingSuffix({2, 8, 16}, {1, 2, 8, 16}));
  EXPECT_FALSE(isTrailingSuffix({2, 8, 16}, {2, 16}));
}

TEST(ShapeUtils, MatmulShapes) {
  std::string error;
  // Activation times a shared weight.
  auto s = inferMatmulShape({2, 8, 16}, {16, 32}, false, false, error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(*s, (Shape{2, 8, 32}));
  // Llama's [out, in] weight and a tied LM head.
  s = inferMatmulShape({2, 8, 16}, {100, 16}, false, true, error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(*s, (Shape{2, 8, 100}));
  // Attention-style batched product: scores = q @ k^T.
  s = inferMatmulShape({2, 4, 8, 16}, {2, 4, 8, 16}, false, true, error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(*s, (Shape{2, 4, 8, 8}));
  // Transposed lhs swaps its two trailing dims.
  s = inferMatmulShape({3, 5}, {3, 7}, true, false, error);
  ASSERT_TRUE(s) << error;
  EXPECT_EQ(*s, (Shape{5, 7}));
}

TEST(ShapeUtils, MatmulErrorsNameTheOperand) {
  std::string error;
  EXPECT_FALSE(inferMatmulShape({2, 8, 16}, {15, 32}, false, false, error));
  EXPECT_NE(error.find("contracting dimension of operand 'rhs': expected 16"),
            std::string::npos)
      << error;
  error.clear();
  EXPECT_FALSE(inferMatmulShape({16}, {16, 32}, false, false, error));
  EXPECT_NE(error.find("operand 'lhs' must have rank >= 2"), std::string::npos)
      << error;
  error.clear();
  EXPECT_FALSE(inferMatmulShape({2, 4, 8, 16}, {3, 4, 16, 8}, false, false, error));
  EXPECT_NE(error.find("operand 'rhs' batch dimensions: expected [2, 4]"),
            std::string::npos)
      << error;
}
