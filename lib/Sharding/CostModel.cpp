//===- CostModel.cpp - Bytes and time of collectives on a mesh -----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/CostModel.h"

#include "pmlir/Support/Mesh.h"

#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <cmath>

using namespace pmlir::sharding;

llvm::StringRef pmlir::sharding::stringifyCollectiveKind(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  case CollectiveKind::AllSlice:
    return "all_slice";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Send:
    return "send";
  case CollectiveKind::Recv:
    return "recv";
  }
  return "unknown";
}

std::optional<CostModel> CostModel::parse(llvm::StringRef spec, std::string &error) {
  CostModel model;
  llvm::SmallVector<llvm::StringRef> entries;
  spec.split(entries, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  for (llvm::StringRef entry : entries) {
    auto [axis, numbers] = entry.trim().split('=');
    auto [bandwidthText, latencyText] = numbers.split(':');
    double bandwidth = 0, latency = 0;
    if (axis.empty() || bandwidthText.trim().getAsDouble(bandwidth) ||
        latencyText.trim().getAsDouble(latency) || !std::isfinite(bandwidth) ||
        !std::isfinite(latency) || bandwidth <= 0 || latency < 0) {
      error = "link '" + entry.str() +
              "' is not AXIS=GBPS:US (a positive bandwidth in GB/s and a latency in "
              "microseconds, as in tp=450:2)";
      return std::nullopt;
    }
    Link link{bandwidth * 1e9, latency * 1e-6};
    if (axis == "*")
      model.fallback = link;
    else if (!model.links.try_emplace(axis, link).second) {
      error = "link of axis '" + axis.str() + "' given twice";
      return std::nullopt;
    }
  }
  return model;
}

const Link &CostModel::linkOf(llvm::StringRef axis) const {
  std::optional<AxisName> name = AxisName::split(std::string_view(axis.data(), axis.size()));
  llvm::StringRef whole = name ? llvm::StringRef(name->axis.data(), name->axis.size()) : axis;
  auto it = links.find(whole);
  return it == links.end() ? fallback : it->second;
}

void CostModel::setLink(llvm::StringRef axis, Link link) {
  if (axis == "*")
    fallback = link;
  else
    links[axis] = link;
}

double CostModel::computeSeconds(double flops, double bytes) const {
  return std::max(flops / dev.flopsPerSecond, bytes / dev.memoryBytesPerSecond);
}

double CostModel::wireFactor(CollectiveKind kind, int64_t groupSize) {
  double n = static_cast<double>(groupSize);
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2.0 * (n - 1) / n;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n;
  case CollectiveKind::Broadcast:
  case CollectiveKind::Send:
    return 1.0;
  case CollectiveKind::AllSlice: // a local slice
  case CollectiveKind::Recv:     // the sender counts it
    return 0.0;
  }
  return 0.0;
}

int64_t CostModel::steps(CollectiveKind kind, int64_t groupSize) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return 2 * (groupSize - 1);
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
  case CollectiveKind::Broadcast:
    return groupSize - 1;
  case CollectiveKind::Send:
    return 1;
  case CollectiveKind::AllSlice:
  case CollectiveKind::Recv:
    return 0;
  }
  return 0;
}

CollectiveCost CostModel::cost(CollectiveKind kind, int64_t bytes,
                               llvm::ArrayRef<llvm::StringRef> axes, int64_t groupSize) const {
  CollectiveCost cost;
  cost.wireBytes = static_cast<int64_t>(wireFactor(kind, groupSize) * bytes + 0.5);
  int64_t stepCount = steps(kind, groupSize);
  if (stepCount == 0)
    return cost;
  Link slowest = axes.empty() ? fallback : linkOf(axes.front());
  for (llvm::StringRef axis : axes) {
    const Link &link = linkOf(axis);
    slowest.bytesPerSecond = std::min(slowest.bytesPerSecond, link.bytesPerSecond);
    slowest.latencySeconds = std::max(slowest.latencySeconds, link.latencySeconds);
  }
  cost.seconds = stepCount * slowest.latencySeconds + cost.wireBytes / slowest.bytesPerSecond;
  return cost;
}
