//===- Mesh.h - Named device meshes and their process groups ----*- C++ -*-===//
//
// Part of pmlir.
//
// A mesh is named axes with sizes ("tp=2,dp=2,pp=4"). Ranks map to mesh
// coordinates in a rank order, fastest axis first: by default Megatron's
// tp, cp, ep, dp, pp. A group over a set of axes is the ranks that share
// this rank's coordinates on every other axis. Pure logic: no MPI.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_MESH_H
#define PMLIR_SUPPORT_MESH_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::rt {

/// The most devices a mesh may have, here and in the IR (#tfm.mesh).
inline constexpr int64_t kMaxMeshDevices = int64_t(1) << 20;

class Mesh {
public:
  /// Parses `spec` ("tp=2,dp=2") and, if not empty, `rankOrder` ("tp,dp",
  /// fastest first, naming every axis once). Without a rank order, axes named
  /// tp, cp, ep, dp, pp vary in that order; other names need --rank-order.
  /// On failure returns nullopt and sets `error`.
  static std::optional<Mesh> parse(const std::string &spec,
                                   const std::string &rankOrder,
                                   std::string &error);

  /// Axes in the order written in the spec; that order is the axis index
  /// the IR's grid uses.
  const std::vector<std::string> &axisNames() const { return names; }
  const std::vector<int64_t> &axisSizes() const { return sizes; }
  int64_t numRanks() const;
  /// Index of `name` in axisNames(), or -1.
  int axisIndex(const std::string &name) const;

  /// Coordinate of `rank` on each axis (axisNames() order).
  std::vector<int64_t> coordinates(int64_t rank) const;
  int64_t rankOf(const std::vector<int64_t> &coordinates) const;

  /// The group over `axes` (indices) that holds `rank`, in group order: the
  /// listed axes read row-major, the last listed axis fastest (as shard's
  /// process_linear_index).
  std::vector<int64_t> group(int64_t rank, const std::vector<int> &axes) const;
  /// This rank's index in group(rank, axes).
  int64_t indexInGroup(int64_t rank, const std::vector<int> &axes) const;
  /// Which group over `axes` holds `rank`: equal for ranks of one group,
  /// distinct across groups (an MPI_Comm_split color).
  int64_t groupColor(int64_t rank, const std::vector<int> &axes) const;

  /// One line per group of each axis, "<axis>: <ranks>", axes in rank order.
  std::string describeGroups() const;

private:
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides; // rank stride of each axis
  std::vector<int> order;       // axis indices, fastest first
};

} // namespace pmlir::rt

#endif // PMLIR_SUPPORT_MESH_H
