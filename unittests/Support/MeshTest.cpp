//===- MeshTest.cpp - Mesh parsing, rank order and groups -----------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Mesh.h"

#include <gtest/gtest.h>

using pmlir::Mesh;

namespace {

Mesh parse(const std::string &spec, const std::string &order = "") {
  std::string error;
  std::optional<Mesh> mesh = Mesh::parse(spec, order, error);
  EXPECT_TRUE(mesh.has_value()) << error;
  return *mesh;
}

std::string parseError(const std::string &spec, const std::string &order = "") {
  std::string error;
  EXPECT_FALSE(Mesh::parse(spec, order, error).has_value());
  return error;
}

TEST(MeshTest, MegatronOrderForSixteenRanks) {
  Mesh mesh = parse("tp=2,dp=2,pp=4");
  EXPECT_EQ(mesh.numRanks(), 16);
  EXPECT_EQ(mesh.group(5, {mesh.axisIndex("tp")}), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(mesh.group(5, {mesh.axisIndex("dp")}), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(mesh.group(5, {mesh.axisIndex("pp")}), (std::vector<int64_t>{1, 5, 9, 13}));
  EXPECT_EQ(mesh.describeGroups(),
            "tp: 0 1\ntp: 2 3\ntp: 4 5\ntp: 6 7\ntp: 8 9\ntp: 10 11\ntp: 12 13\n"
            "tp: 14 15\n"
            "dp: 0 2\ndp: 1 3\ndp: 4 6\ndp: 5 7\ndp: 8 10\ndp: 9 11\ndp: 12 14\n"
            "dp: 13 15\n"
            "pp: 0 4 8 12\npp: 1 5 9 13\npp: 2 6 10 14\npp: 3 7 11 15\n");
}

TEST(MeshTest, SpecOrderDoesNotChangeRankOrder) {
  // Written pp first, tp still varies fastest.
  Mesh mesh = parse("pp=2,tp=2");
  EXPECT_EQ(mesh.coordinates(1), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(mesh.coordinates(2), (std::vector<int64_t>{1, 0}));
}

TEST(MeshTest, CustomRankOrder) {
  Mesh mesh = parse("tp=2,dp=3", "dp,tp");
  EXPECT_EQ(mesh.group(0, {mesh.axisIndex("dp")}), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(mesh.group(0, {mesh.axisIndex("tp")}), (std::vector<int64_t>{0, 3}));
}

TEST(MeshTest, MultiAxisGroupsAreRowMajorInTheListedOrder) {
  Mesh mesh = parse("tp=2,dp=2,pp=2");
  int tp = mesh.axisIndex("tp"), dp = mesh.axisIndex("dp");
  EXPECT_EQ(mesh.group(0, {tp, dp}), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(mesh.group(0, {dp, tp}), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(mesh.indexInGroup(1, {tp, dp}), 2);
  EXPECT_EQ(mesh.groupColor(5, {tp, dp}), mesh.groupColor(6, {dp, tp}));
  EXPECT_NE(mesh.groupColor(1, {tp, dp}), mesh.groupColor(5, {tp, dp}));
}

TEST(MeshTest, BadSpecsNameTheProblem) {
  EXPECT_EQ(parseError(""), "empty mesh: expected axes like 'tp=2,dp=2'");
  EXPECT_EQ(parseError("tp"), "mesh axis 'tp': expected <name>=<size> with a name of "
                              "letters, digits and '_'");
  EXPECT_EQ(parseError("tp=0"), "mesh axis 'tp': size '0' is not a positive integer");
  EXPECT_EQ(parseError("tp=2x"), "mesh axis 'tp': size '2x' is not a positive integer");
  EXPECT_EQ(parseError("tp=2,tp=2"), "mesh axis 'tp' appears twice");
  EXPECT_EQ(parseError("tp=2,"), "mesh axis '': expected <name>=<size> with a name of "
                                 "letters, digits and '_'");
  EXPECT_EQ(parseError("x=2"), "mesh axis 'x' has no default place in the rank order "
                               "(tp, cp, ep, dp, pp); give one with --rank-order");
  EXPECT_EQ(parseError("tp=2,dp=2", "tp"),
            "rank order 'tp' must name every axis of the mesh 'tp=2,dp=2'");
  EXPECT_EQ(parseError("tp=2", "tp,ep"),
            "rank order names 'ep', which is not an axis of the mesh 'tp=2'");
  EXPECT_EQ(parseError("tp=2,dp=2", "tp,tp"), "rank order names 'tp' twice");
}

} // namespace
