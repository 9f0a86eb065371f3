//===- Topology.h - The hardware a mesh is placed on ------------*- C++ -*-===//
//
// Part of pmlir.
//
// A topology is nodes of identical devices: a link between the devices of
// one node (NVLink, shared memory), one between nodes (InfiniBand), and
// each device's FLOP rate, memory bandwidth and memory. Placing a mesh on
// it gives each mesh axis its link: ranks fill a node in rank order
// (fastest axis first, pmlir::Mesh), so an axis whose groups stay inside a
// node runs on the node's link and any other on the link between nodes. A
// topology is a preset (`presetNames()`) or a JSON file:
//
//   {"name": "my-cluster", "devices_per_node": 8,
//    "device": {"tflops": 600, "memory_gb": 80, "memory_gbps": 3000},
//    "intra_node": {"gbps": 360, "latency_us": 3},
//    "inter_node": {"gbps": 45, "latency_us": 10},
//    "axes": {"tp": {"gbps": 360, "latency_us": 3}}}
//
// where "axes" (optional) pins the links of named mesh axes.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_TOPOLOGY_H
#define PMLIR_SHARDING_TOPOLOGY_H

#include "pmlir/Sharding/CostModel.h"
#include "pmlir/Support/Mesh.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::sharding {

struct Topology {
  std::string name;
  int64_t devicesPerNode = 1;
  Device device = CostModel::kDefaultDevice;
  Link intraNode = CostModel::kDefaultLink;
  Link interNode = CostModel::kDefaultLink;
  /// Links pinned per mesh axis name.
  std::map<std::string, Link> axisLinks;

  /// The built-in topologies: "cpu" (this 2-core machine: one core per
  /// rank, MPI over shared memory), "h100" (nodes of 8 H100 SXM on NVLink,
  /// 400 Gb/s InfiniBand per GPU) and "h200" (the same with H200s).
  static std::vector<std::string> presetNames();
  static std::optional<Topology> preset(const std::string &name);
  /// A topology from its JSON text; nullopt with `error` set to what is
  /// wrong (a missing or non-positive field, named).
  static std::optional<Topology> fromJson(const std::string &text, std::string &error);
  /// `spec` as a preset name or the path of a JSON file.
  static std::optional<Topology> load(const std::string &spec, std::string &error);

  /// Why this topology does not fit a mesh of the axes `axisNames`: a link
  /// pinned to an axis that is none of them nor of Mesh::knownAxisNames()
  /// (a misspelt axis would leave its link out unseen; a known one is a
  /// mesh's without it, as a plan's of size 1), or nullopt.
  std::optional<std::string> unknownAxis(const std::vector<std::string> &axisNames = {}) const;
  /// The link of mesh axis `axis` of `mesh` placed on this topology.
  Link linkOf(const Mesh &mesh, int axis) const;
  /// The link of one group of `mesh` over `axes` (parts of its axes), its
  /// ranks `members`: a whole axis's pinned link, else the node's where
  /// every member is on one node, else the link between nodes.
  Link linkOfGroup(const Mesh &mesh, const std::vector<SubAxis> &axes,
                   const std::vector<int64_t> &members) const;
  /// Whether the ranks `members` are all on one node.
  bool onOneNode(const std::vector<int64_t> &members) const;
  /// The cost model of `mesh` placed on this topology: per axis its link,
  /// and this topology's device.
  CostModel costModel(const Mesh &mesh) const;
  /// One line: the name, devices per node, device and links.
  std::string describe() const;
};

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_TOPOLOGY_H
