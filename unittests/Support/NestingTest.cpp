//===- NestingTest.cpp - Bracket depth of JSON and MLIR text --------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Nesting.h"

#include <gtest/gtest.h>

using pmlir::bracketDepth;

TEST(Nesting, JsonCountsBracesAndBracketsOutsideStrings) {
  EXPECT_EQ(bracketDepth(R"({"a": {"shape": [[1], [2]]}})", false), 4u);
  EXPECT_EQ(bracketDepth(R"({"[[[[\"{{": 1})", false), 1u);
  // Parentheses and angle brackets are no JSON structure.
  EXPECT_EQ(bracketDepth("((<<>>))", false), 0u);
}

TEST(Nesting, MlirCountsAllFourButNotArrowsOrComments) {
  EXPECT_EQ(bracketDepth("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {}", true), 2u);
  // "->" closes nothing: the depth after it is unchanged.
  EXPECT_EQ(bracketDepth("(a) -> (b) { (c) }", true), 2u);
  EXPECT_EQ(bracketDepth("// {{{{{{\n{}", true), 1u);
  EXPECT_EQ(bracketDepth(R"(attr = "<<<[[[" {})", true), 1u);
}
