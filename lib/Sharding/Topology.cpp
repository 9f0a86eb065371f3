//===- Topology.cpp - The hardware a mesh is placed on --------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Topology.h"
#include "pmlir/Support/JsonFields.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <sstream>

using namespace pmlir::sharding;

std::vector<std::string> Topology::presetNames() { return {"cpu", "h100", "h200"}; }

std::optional<Topology> Topology::preset(const std::string &name) {
  Topology t;
  t.name = name;
  if (name == "cpu") {
    // docs/performance.md: pmlir-run's GEMMs reach about 90 GFLOP/s on one
    // core; MPI collectives over shared memory reach 1.4 to 5.4 GB/s of bus
    // bandwidth between two ranks. Every rank is on this one host.
    t.devicesPerNode = 1024;
    t.device = {90e9, 10e9, 12.0 * (1 << 30)};
    t.intraNode = t.interNode = {3e9, 10e-6};
    return t;
  }
  if (name == "h100" || name == "h200") {
    // H100 SXM: 989 TFLOP/s dense bf16 peak, of which 60% is what large
    // GEMMs sustain; 3 TB/s measured copy bandwidth (../shared/gpu-notes.md);
    // NVLink 4 at NCCL's typical 360 GB/s bus bandwidth; one 400 Gb/s NIC
    // per GPU, about 45 GB/s.
    t.devicesPerNode = 8;
    t.device = {600e12, 3e12, 80e9};
    t.intraNode = {360e9, 3e-6};
    t.interNode = {45e9, 10e-6};
    // H200 SXM: the H100's compute and links with 141 GB of HBM3e, 3.9 TB/s
    // measured copy bandwidth (docs/performance.md).
    if (name == "h200")
      t.device = {600e12, 3.9e12, 141e9};
    return t;
  }
  return std::nullopt;
}

namespace {

/// The range a topology's number must lie in. The bounds are far past any
/// hardware, and keep every cost the auto-sharding prices from it (a
/// step's seconds, in microseconds) inside what its solver takes: a rate of
/// 1e-300 made costs of 1e300 and ended the process in CLP's assertion.
struct Range {
  double least, most;
  bool allowZero = false;
};
/// TFLOP/s, GB, GB/s: 1 GFLOP/s, 1 MB, 1 MB/s up to 1e6 times today's.
constexpr Range kRate{1e-3, 1e6};
/// A link's latency in microseconds: up to a second.
constexpr Range kLatency{0, 1e6, /*allowZero=*/true};

/// A number at `object[key]` in `range`, or nullopt with `error` naming it.
std::optional<double> positive(const nlohmann::json &object, const std::string &where,
                               const std::string &key, std::string &error, Range range = kRate) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number()) {
    error = where + " needs a number '" + key + "'";
    return std::nullopt;
  }
  double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || (!range.allowZero && v == 0)) {
    error = where + "'s '" + key + "' must be " + (range.allowZero ? "non-negative" : "positive") +
            ", not " + it->dump();
    return std::nullopt;
  }
  if (std::optional<std::string> outside =
          pmlir::outsideRange(*it, range.least, range.most, range.allowZero)) {
    error = where + "'s '" + key + "' " + *outside;
    return std::nullopt;
  }
  return v;
}

/// False with `error` where `object` has a key outside `known`.
bool onlyKnownKeys(const nlohmann::json &object, const std::string &where,
                   std::initializer_list<const char *> known, std::string &error) {
  if (std::optional<std::string> unknown = pmlir::unknownKey(object, known)) {
    error = where + " " + *unknown;
    return false;
  }
  return true;
}

std::optional<Link> linkFrom(const nlohmann::json &object, const std::string &where,
                             std::string &error) {
  if (!object.is_object()) {
    error = where + " must be an object {\"gbps\": ..., \"latency_us\": ...}";
    return std::nullopt;
  }
  if (!onlyKnownKeys(object, where, {"gbps", "latency_us"}, error))
    return std::nullopt;
  std::optional<double> gbps = positive(object, where, "gbps", error);
  std::optional<double> latency =
      gbps ? positive(object, where, "latency_us", error, kLatency) : std::nullopt;
  if (!latency)
    return std::nullopt;
  return Link{*gbps * 1e9, *latency * 1e-6};
}

} // namespace

std::optional<Topology> Topology::fromJson(const std::string &text, std::string &error) {
  std::string duplicate;
  nlohmann::json root =
      nlohmann::json::parse(text, duplicateKeyFinder(duplicate), /*allow_exceptions=*/false);
  if (root.is_discarded() || !root.is_object()) {
    error = "the topology is not a JSON object";
    return std::nullopt;
  }
  if (!duplicate.empty()) {
    error = "the topology has the key '" + duplicate + "' twice in one object";
    return std::nullopt;
  }
  if (!onlyKnownKeys(root, "the topology",
                     {"name", "devices_per_node", "device", "intra_node", "inter_node", "axes"},
                     error))
    return std::nullopt;
  Topology t;
  auto name = root.find("name");
  if (name != root.end() && !name->is_string()) {
    error = "the topology's 'name' must be a string";
    return std::nullopt;
  }
  t.name = name != root.end() ? name->get<std::string>() : "custom";
  std::optional<double> perNode = positive(root, "the topology", "devices_per_node", error,
                                           Range{1, static_cast<double>(pmlir::kMaxMeshDevices)});
  if (!perNode)
    return std::nullopt;
  if (*perNode != std::floor(*perNode)) {
    error = "the topology's 'devices_per_node' must be a whole number";
    return std::nullopt;
  }
  t.devicesPerNode = static_cast<int64_t>(*perNode);
  auto device = root.find("device");
  if (device == root.end() || !device->is_object()) {
    error = "the topology needs a 'device' object {\"tflops\", \"memory_gb\", \"memory_gbps\"}";
    return std::nullopt;
  }
  if (!onlyKnownKeys(*device, "the device", {"tflops", "memory_gb", "memory_gbps"}, error))
    return std::nullopt;
  std::optional<double> tflops = positive(*device, "the device", "tflops", error);
  std::optional<double> memory =
      tflops ? positive(*device, "the device", "memory_gb", error) : std::nullopt;
  std::optional<double> bandwidth =
      memory ? positive(*device, "the device", "memory_gbps", error) : std::nullopt;
  if (!bandwidth)
    return std::nullopt;
  t.device = {*tflops * 1e12, *bandwidth * 1e9, *memory * 1e9};
  for (auto [key, link] : {std::pair{"intra_node", &t.intraNode}, {"inter_node", &t.interNode}}) {
    auto it = root.find(key);
    if (it == root.end()) {
      error = std::string("the topology needs an '") + key + "' link";
      return std::nullopt;
    }
    std::optional<Link> parsed = linkFrom(*it, std::string("the '") + key + "' link", error);
    if (!parsed)
      return std::nullopt;
    *link = *parsed;
  }
  if (auto axes = root.find("axes"); axes != root.end()) {
    if (!axes->is_object()) {
      error = "the topology's 'axes' must map axis names to links";
      return std::nullopt;
    }
    for (auto &[axis, value] : axes->items()) {
      std::optional<Link> parsed = linkFrom(value, "the link of axis '" + axis + "'", error);
      if (!parsed)
        return std::nullopt;
      t.axisLinks[axis] = *parsed;
    }
  }
  return t;
}

std::optional<std::string> Topology::unknownAxis(const std::vector<std::string> &axisNames) const {
  std::vector<std::string> known = Mesh::knownAxisNames();
  for (const std::string &name : axisNames)
    if (!llvm::is_contained(known, name))
      known.push_back(name);
  for (const auto &[axis, link] : axisLinks)
    if (!llvm::is_contained(known, axis)) {
      std::string names;
      for (const std::string &name : known)
        names += (names.empty() ? "'" : ", '") + name + "'";
      return "the topology pins a link to axis '" + axis + "', which is no axis a mesh here has (" +
             names + ")";
    }
  return std::nullopt;
}

std::optional<Topology> Topology::load(const std::string &spec, std::string &error) {
  if (std::optional<Topology> t = preset(spec))
    return t;
  if (llvm::sys::fs::is_directory(spec)) {
    error = "topology '" + spec + "' is a directory, not a JSON file";
    return std::nullopt;
  }
  std::ifstream in(spec);
  if (!in) {
    std::string names;
    for (const std::string &n : presetNames())
      names += (names.empty() ? "" : ", ") + n;
    error = "topology '" + spec + "' is neither a preset (" + names + ") nor a readable JSON file";
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  std::optional<Topology> t = fromJson(text.str(), error);
  if (!t)
    error = spec + ": " + error;
  return t;
}

Link Topology::linkOf(const Mesh &mesh, int axis) const {
  if (auto it = axisLinks.find(mesh.axisNames()[axis]); it != axisLinks.end())
    return it->second;
  // Nodes hold `devicesPerNode` consecutive ranks each. The axis runs
  // over the link between nodes when any of its groups crosses one: a
  // group that fits a node's count but straddles two nodes (tp = 3 on
  // nodes of 8) waits for its slowest link.
  std::vector<SubAxis> whole = {{axis, 1, mesh.axisSizes()[axis]}};
  for (int64_t rank = 0; rank < mesh.numRanks(); ++rank) {
    if (mesh.indexInGroup(rank, whole) != 0)
      continue;
    if (!onOneNode(mesh.group(rank, whole)))
      return interNode;
  }
  return intraNode;
}

bool Topology::onOneNode(const std::vector<int64_t> &members) const {
  return llvm::all_of(members, [&](int64_t member) {
    return member / devicesPerNode == members.front() / devicesPerNode;
  });
}

Link Topology::linkOfGroup(const Mesh &mesh, const std::vector<SubAxis> &axes,
                           const std::vector<int64_t> &members) const {
  if (axes.size() == 1 && axes[0].size == mesh.axisSizes()[axes[0].index])
    if (auto it = axisLinks.find(mesh.axisNames()[axes[0].index]); it != axisLinks.end())
      return it->second;
  return onOneNode(members) ? intraNode : interNode;
}

CostModel Topology::costModel(const Mesh &mesh) const {
  CostModel model;
  model.setDevice(device);
  for (size_t i = 0; i < mesh.axisNames().size(); ++i)
    model.setLink(mesh.axisNames()[i], linkOf(mesh, static_cast<int>(i)));
  return model;
}

std::string Topology::describe() const {
  std::ostringstream os;
  os << name << ": " << devicesPerNode << " devices a node; device " << device.flopsPerSecond / 1e12
     << " TFLOP/s, " << device.memoryBytesPerSecond / 1e9 << " GB/s memory, "
     << device.memoryBytes / 1e9 << " GB; within a node " << intraNode.bytesPerSecond / 1e9
     << " GB/s, " << intraNode.latencySeconds * 1e6 << " us; across nodes "
     << interNode.bytesPerSecond / 1e9 << " GB/s, " << interNode.latencySeconds * 1e6 << " us";
  return os.str();
}
