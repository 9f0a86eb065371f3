//===- LayoutTestUtils.h - Meshes and blocks the unit tests spell out -----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_UNITTESTS_LAYOUTTESTUTILS_H
#define PMLIR_UNITTESTS_LAYOUTTESTUTILS_H

#include "pmlir/Support/Layout.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace pmlir::unittest {

/// The mesh `spec` spells ("dp=2,tp=4"); one that does not parse fails
/// the test.
inline Mesh parseMesh(const std::string &spec) {
  std::string error;
  std::optional<Mesh> mesh = Mesh::parse(spec, "", error);
  EXPECT_TRUE(mesh.has_value()) << error;
  return *mesh;
}

/// The block of rank `rank` of a tensor split as `dims` in blocks of
/// `local` (BlockLayout::decode); one that does not decode fails the test.
inline BlockLayout decodeBlock(const Mesh &mesh, const DimAxes &dims, std::vector<int64_t> local,
                               std::optional<std::vector<int64_t>> global, int64_t rank,
                               std::optional<size_t> headTailDim = std::nullopt) {
  std::string error;
  std::optional<BlockLayout> layout = BlockLayout::decode(
      mesh, dims, local, global, mesh.coordinates(rank), error, {}, headTailDim);
  EXPECT_TRUE(layout.has_value()) << error;
  return layout.value_or(BlockLayout());
}

} // namespace pmlir::unittest

#endif // PMLIR_UNITTESTS_LAYOUTTESTUTILS_H
