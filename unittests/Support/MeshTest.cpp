//===- MeshTest.cpp - Mesh parsing, rank order and groups -----------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/Mesh.h"

#include <gtest/gtest.h>

using pmlir::Mesh;
using pmlir::SubAxis;

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

SubAxis whole(const Mesh &mesh, const char *name) { return mesh.wholeAxis(mesh.axisIndex(name)); }

SubAxis part(const Mesh &mesh, const char *name) { return *mesh.subAxis(name); }

TEST(MeshTest, MegatronOrderForSixteenRanks) {
  Mesh mesh = parse("tp=2,dp=2,pp=4");
  EXPECT_EQ(mesh.numRanks(), 16);
  EXPECT_EQ(mesh.group(5, {whole(mesh, "tp")}), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(mesh.group(5, {whole(mesh, "dp")}), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(mesh.group(5, {whole(mesh, "pp")}), (std::vector<int64_t>{1, 5, 9, 13}));
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
  EXPECT_EQ(mesh.group(0, {whole(mesh, "dp")}), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(mesh.group(0, {whole(mesh, "tp")}), (std::vector<int64_t>{0, 3}));
}

TEST(MeshTest, MultiAxisGroupsAreRowMajorInTheListedOrder) {
  Mesh mesh = parse("tp=2,dp=2,pp=2");
  SubAxis tp = whole(mesh, "tp"), dp = whole(mesh, "dp");
  EXPECT_EQ(mesh.group(0, {tp, dp}), (std::vector<int64_t>{0, 2, 1, 3}));
  EXPECT_EQ(mesh.group(0, {dp, tp}), (std::vector<int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(mesh.indexInGroup(1, {tp, dp}), 2);
  EXPECT_EQ(mesh.groupColor(5, {tp, dp}), mesh.groupColor(6, {dp, tp}));
  EXPECT_NE(mesh.groupColor(1, {tp, dp}), mesh.groupColor(5, {tp, dp}));
}

TEST(MeshTest, GroupsOverSubAxes) {
  // tp = 4 is fastest: ranks 0-3 share dp 0. tp:(1)2 is the major half of
  // tp (coordinate / 2), tp:(2)2 the minor half (coordinate % 2).
  Mesh mesh = parse("dp=2,tp=4");
  SubAxis major = part(mesh, "tp:(1)2"), minor = part(mesh, "tp:(2)2");
  EXPECT_EQ(mesh.group(5, {major}), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(mesh.group(5, {minor}), (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(mesh.indexInGroup(6, {major}), 1);
  EXPECT_EQ(mesh.indexInGroup(6, {minor}), 0);
  // The two halves, major first, are tp itself; minor first they transpose it.
  EXPECT_EQ(mesh.group(6, {major, minor}), mesh.group(6, {whole(mesh, "tp")}));
  EXPECT_EQ(mesh.group(6, {minor, major}), (std::vector<int64_t>{4, 6, 5, 7}));
  // A part with a whole axis: dp with the minor half of tp.
  EXPECT_EQ(mesh.group(2, {whole(mesh, "dp"), minor}), (std::vector<int64_t>{2, 3, 6, 7}));
  EXPECT_EQ(mesh.groupColor(0, {minor}), mesh.groupColor(1, {minor}));
  EXPECT_NE(mesh.groupColor(0, {minor}), mesh.groupColor(2, {minor}));
  EXPECT_EQ(mesh.groupColor(4, {major}), mesh.groupColor(6, {major}));
}

TEST(MeshTest, AxisCodesRoundTrip) {
  Mesh mesh = parse("dp=2,tp=8");
  for (const char *name : {"dp", "tp", "tp:(1)2", "tp:(2)4", "tp:(4)2", "tp:(1)4"}) {
    SubAxis p = part(mesh, name);
    std::optional<SubAxis> back = mesh.axisOfCode(p.code(mesh.axisSizes()[p.index]));
    ASSERT_TRUE(back) << name;
    EXPECT_EQ(*back, p) << name;
    EXPECT_EQ(mesh.nameOf(*back), name);
  }
  // A whole axis is its index, as before parts existed.
  EXPECT_EQ(part(mesh, "tp").code(8), 1);
  EXPECT_FALSE(mesh.axisOfCode(2));                        // no such axis
  EXPECT_FALSE(mesh.axisOfCode(SubAxis{1, 3, 2}.code(8))); // 6 does not divide 8
  EXPECT_FALSE(mesh.axisOfCode(-1));
}

TEST(MeshTest, CutAxesHoldEveryNamedPart) {
  std::vector<std::string> names = {"dp", "tp"};
  std::vector<int64_t> sizes = {2, 8};
  std::string error;
  // tp:(2)2 of 8 cuts tp at 2 and 4: (1)2, (2)2, (4)2.
  std::optional<std::vector<SubAxis>> cut = pmlir::cutAxes(names, sizes, {{1, 2, 2}}, error);
  ASSERT_TRUE(cut) << error;
  EXPECT_EQ(*cut, (std::vector<SubAxis>{{0, 1, 2}, {1, 1, 2}, {1, 2, 2}, {1, 4, 2}}));
  EXPECT_EQ(pmlir::partsIn(*cut, {1, 2, 2}), (std::vector<int>{2}));
  EXPECT_EQ(pmlir::partsIn(*cut, {1, 2, 4}), (std::vector<int>{2, 3}));
  EXPECT_EQ(pmlir::partsIn(*cut, {1, 1, 8}), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(pmlir::partsIn(*cut, {0, 1, 2}), (std::vector<int>{0}));
  // Not cut at its ends.
  cut = pmlir::cutAxes(names, sizes, {{1, 1, 4}}, error);
  ASSERT_TRUE(cut) << error;
  EXPECT_TRUE(pmlir::partsIn(*cut, {1, 2, 2}).empty());
  // No parts named: the grid is the mesh.
  cut = pmlir::cutAxes(names, sizes, {}, error);
  ASSERT_TRUE(cut);
  EXPECT_EQ(*cut, (std::vector<SubAxis>{{0, 1, 2}, {1, 1, 8}}));
  // An axis of size 1 stays one part.
  cut = pmlir::cutAxes({"dp", "tp"}, {1, 4}, {{1, 2, 2}}, error);
  ASSERT_TRUE(cut) << error;
  EXPECT_EQ(*cut, (std::vector<SubAxis>{{0, 1, 1}, {1, 1, 2}, {1, 2, 2}}));
  // Ends that do not nest.
  EXPECT_FALSE(pmlir::cutAxes({"tp"}, {12}, {{0, 1, 2}, {0, 1, 3}}, error));
  EXPECT_EQ(error, "the sub-axes 'tp:(1)2' and 'tp:(1)3' end inside each other, so no grid of "
                   "parts holds both");
}

TEST(MeshTest, BadSpecsNameTheProblem) {
  EXPECT_EQ(parseError(""), "empty mesh: expected axes like 'tp=2,dp=2'");
  EXPECT_EQ(parseError("tp"), "mesh axis 'tp': expected <name>=<size> with a name of "
                              "letters, digits and '_'");
  EXPECT_EQ(parseError("tp=0"), "mesh axis 'tp': size '0' is not a positive integer");
  EXPECT_EQ(parseError("tp=2x"), "mesh axis 'tp': size '2x' is not a positive integer");
  // A size past the limit is named as such, also where it overflows.
  EXPECT_EQ(parseError("tp=1048577"), "mesh axis 'tp': size 1048577 is more than a mesh's 2^20 "
                                      "ranks");
  EXPECT_EQ(parseError("tp=99999999999999999999"),
            "mesh axis 'tp': size 99999999999999999999 is more than a mesh's 2^20 ranks");
  EXPECT_EQ(parseError("tp=-99999999999999999999"),
            "mesh axis 'tp': size '-99999999999999999999' is not a positive integer");
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
