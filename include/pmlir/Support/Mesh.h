//===- Mesh.h - Named device meshes and their process groups ----*- C++ -*-===//
//
// Part of pmlir.
//
// A mesh is named axes with sizes ("tp=2,dp=2,pp=4"). Ranks map to mesh
// coordinates in a rank order, fastest axis first: by default Megatron's
// tp, cp, ep, dp, pp. A group over a set of axes is the ranks that share
// this rank's coordinates on every other axis. Sub-axes ("tp:(1)2") name
// parts of an axis, as Shardy's. Pure logic (no MPI, no MLIR): the runtime,
// the tools and the compiler's #tfm.mesh share it.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_MESH_H
#define PMLIR_SUPPORT_MESH_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pmlir {

/// The most devices a mesh may have, here and in the IR (#tfm.mesh).
inline constexpr int64_t kMaxMeshDevices = int64_t(1) << 20;

/// The symbol of the `shard.grid` that partitioned programs run on: the
/// mesh, grid axis i being mesh axis i.
inline constexpr const char *kGridName = "mesh";

/// A whole axis or a part of one, as Shardy's sub-axes: "tp:(p)s" is the
/// part of axis tp of size s below its p major positions; "tp:(1)2" is the
/// major half of a tp of 4, "tp:(2)2" the minor half. A whole axis is
/// (1)|axis|.
struct SubAxis {
  int64_t index; ///< the axis
  int64_t pre;   ///< the positions of the axis above the part
  int64_t size;  ///< the part's size

  /// How many consecutive coordinates of the axis share one coordinate of
  /// the part: the size of the parts below it.
  int64_t stride(int64_t axisSize) const { return axisSize / (pre * size); }
  /// The coordinate along the part of a device at `axisCoordinate` on the
  /// axis. The partitioner emits this same arithmetic as IR.
  int64_t coordinate(int64_t axisCoordinate, int64_t axisSize) const {
    return (axisCoordinate / stride(axisSize)) % size;
  }
  /// Whether the two parts share devices.
  bool overlaps(const SubAxis &other) const {
    return index == other.index && pre < other.pre * other.size && other.pre < pre * size;
  }
  bool operator==(const SubAxis &other) const {
    return index == other.index && pre == other.pre && size == other.size;
  }

  /// The part's code in the runtime's lists of group axes (RuntimeAbi.def's
  /// AXES): a whole axis is its index, a part of one packs index, pre and
  /// size, so the compiler and the runtime agree on it without a table.
  int64_t code(int64_t axisSize) const {
    if (pre == 1 && size == axisSize)
      return index;
    return index | pre << kPreShift | size << kSizeShift;
  }
  /// The fields of `code`: pre and size 0 for a whole axis. Any code
  /// decodes; Mesh::axisOfCode checks it against a mesh.
  static SubAxis fromCode(int64_t code) {
    return {code & kIndexMask, (code >> kPreShift) & kFieldMask, code >> kSizeShift};
  }
  static constexpr int64_t kIndexMask = (int64_t(1) << 16) - 1;
  static constexpr int kPreShift = 16, kSizeShift = 37;
  static constexpr int64_t kFieldMask = (int64_t(1) << 21) - 1;
};

/// The parts of an axis name: "tp" or "tp:(p)s".
struct AxisName {
  std::string_view axis;
  /// pre and size of a sub-axis; both 0 for a whole axis.
  int64_t pre = 0, size = 0;
  /// Splits `name`; nullopt when it has a malformed sub-axis suffix.
  static std::optional<AxisName> split(std::string_view name);
  /// `name` as a part of the axis `index` of size `axisSize`, or nullopt
  /// when the part does not divide the axis.
  std::optional<SubAxis> resolve(int64_t index, int64_t axisSize) const;
};

/// The name of the part of axis `axis` (of size `axisSize`) of `size` below
/// `pre`: the axis' own name for the whole axis.
std::string subAxisName(std::string_view axis, int64_t axisSize, int64_t pre, int64_t size);

/// The parts that cut the axes `axisNames` of sizes `axisSizes` at the
/// ends of every part in `named`: per axis, major parts first, axes in order. A grid of
/// these parts holds each named part as a run of consecutive grid axes, so
/// a collective over a part is one over grid axes. Nullopt, with `error`
/// naming them, where two parts end inside each other (tp:(1)2 and tp:(1)3
/// of a tp of 12): no grid of parts holds both.
std::optional<std::vector<SubAxis>> cutAxes(const std::vector<std::string> &axisNames,
                                            const std::vector<int64_t> &axisSizes,
                                            const std::vector<SubAxis> &named, std::string &error);

/// The indices in `cut` of the consecutive parts that make up `part`, major
/// first; empty where `cut` does not cut its axis at `part`'s ends.
std::vector<int> partsIn(const std::vector<SubAxis> &cut, const SubAxis &part);

class Mesh {
public:
  /// Parses `spec` ("tp=2,dp=2") and, if not empty, `rankOrder` ("tp,dp",
  /// fastest first, naming every axis once). Without a rank order, axes named
  /// tp, cp, ep, dp, pp vary in that order; other names need --rank-order.
  /// On failure returns nullopt and sets `error`.
  static std::optional<Mesh> parse(const std::string &spec,
                                   const std::string &rankOrder,
                                   std::string &error);
  /// The mesh of axes `names` with `sizes`, in `rankOrder` (axis names,
  /// fastest first; empty: the default order, as parse says). On failure
  /// returns nullopt and sets `error`.
  static std::optional<Mesh> create(const std::vector<std::string> &names,
                                    const std::vector<int64_t> &sizes,
                                    const std::vector<std::string> &rankOrder, std::string &error);
  /// The axes with a place in the default rank order, fastest first: tp,
  /// cp, ep, dp, pp (Megatron's).
  static const std::vector<std::string> &knownAxisNames();
  /// The default rank order of axes `names` (indices of knownAxisNames()
  /// among them, in that order); other names have no place in it.
  static std::vector<int> defaultRankOrder(const std::vector<std::string> &names);

  /// The mesh as parse reads it ("dp=2,tp=2"), and its rank order ("" when
  /// it is the default).
  std::string spec() const;
  std::string rankOrderSpec() const;
  bool hasDefaultRankOrder() const;

  /// Axes in the order written in the spec; that order is the axis index
  /// the IR's grid uses.
  const std::vector<std::string> &axisNames() const { return names; }
  const std::vector<int64_t> &axisSizes() const { return sizes; }
  int64_t numRanks() const;
  /// The axis indices in rank order, fastest first.
  const std::vector<int> &rankOrder() const { return order; }
  /// The rank distance between neighbours along axis `index`.
  int64_t rankStride(int index) const { return strides[index]; }
  /// Index of `name` in axisNames(), or -1.
  int axisIndex(std::string_view name) const;
  /// `name` (an axis or a sub-axis) on this mesh, or nullopt when it names
  /// no axis or a part that does not divide its axis.
  std::optional<SubAxis> subAxis(std::string_view name) const;
  /// The index of the block of a tensor dimension split over `axes` (axis
  /// or sub-axis names, major first) that the device at `coordinates` holds;
  /// -1 if an axis is not on this mesh.
  int64_t blockIndex(const std::vector<std::string> &axes,
                     const std::vector<int64_t> &coordinates) const;
  /// Axis `index` whole, as a part.
  SubAxis wholeAxis(int index) const { return {index, 1, sizes[index]}; }
  /// The part a runtime axes code names (SubAxis::code), or nullopt where it
  /// names no axis or a part that does not divide its axis.
  std::optional<SubAxis> axisOfCode(int64_t code) const;
  /// The name of `part`: "tp" or "tp:(1)2".
  std::string nameOf(const SubAxis &part) const;

  /// Coordinate of `rank` on each axis (axisNames() order).
  std::vector<int64_t> coordinates(int64_t rank) const;
  int64_t rankOf(const std::vector<int64_t> &coordinates) const;

  /// The group over `axes` (whole axes or parts of them, none sharing
  /// devices) that holds `rank`: the ranks whose coordinates differ from its
  /// own only on those parts. In group order: the listed parts' coordinates
  /// read row-major, the last listed fastest (as shard's
  /// process_linear_index).
  std::vector<int64_t> group(int64_t rank, const std::vector<SubAxis> &axes) const;
  /// This rank's index in group(rank, axes).
  int64_t indexInGroup(int64_t rank, const std::vector<SubAxis> &axes) const;
  /// Which group over `axes` holds `rank`: equal for ranks of one group,
  /// distinct across groups (an MPI_Comm_split color).
  int64_t groupColor(int64_t rank, const std::vector<SubAxis> &axes) const;

  /// One line per group of each axis, "<axis>: <ranks>", axes in rank order.
  std::string describeGroups() const;

private:
  std::vector<std::string> names;
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides; // rank stride of each axis
  std::vector<int> order;       // axis indices, fastest first
};

} // namespace pmlir

#endif // PMLIR_SUPPORT_MESH_H
