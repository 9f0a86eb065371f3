//===- CostModel.h - Bytes and time of collectives on a mesh ----*- C++ -*-===//
//
// Part of pmlir.
//
// One model of what a collective costs, shared by the reshard planner, the
// comm report and (later) auto-sharding. A collective over a group of n
// ranks runs as a ring, as NCCL's and MPI's large-message algorithms do:
// one rank sends 2(n-1)/n of an all_reduce's tensor in 2(n-1) steps, (n-1)/n
// of an all_gather's, reduce_scatter's or all_to_all's buffer in n-1 steps,
// a broadcast's or send's whole tensor. Its time is the steps times the
// link latency plus the bytes sent over the link bandwidth; a group over
// several mesh axes runs at the pace of its slowest axis.
//
// A device computes at its FLOP rate or moves its bytes through memory at
// its memory bandwidth, whichever takes longer (a roofline); auto-sharding
// prices an op's block so.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_COSTMODEL_H
#define PMLIR_SHARDING_COSTMODEL_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace pmlir::sharding {

enum class CollectiveKind {
  AllReduce,
  AllGather,
  ReduceScatter,
  AllToAll,
  AllSlice,
  Broadcast,
  Send,
  Recv,
};

/// "all_reduce", "all_gather", ...: the names the comm report uses.
llvm::StringRef stringifyCollectiveKind(CollectiveKind kind);

/// The link a mesh axis' collectives run over.
struct Link {
  double bytesPerSecond;
  double latencySeconds;
};

/// What one device computes with, and holds.
struct Device {
  double flopsPerSecond;
  double memoryBytesPerSecond;
  double memoryBytes;
};

/// What one collective costs one rank.
struct CollectiveCost {
  int64_t wireBytes = 0; ///< bytes one rank sends
  double seconds = 0;    ///< modeled time

  CollectiveCost &operator+=(const CollectiveCost &other) {
    wireBytes += other.wireBytes;
    seconds += other.seconds;
    return *this;
  }
};

class CostModel {
public:
  /// Every axis on the default link.
  CostModel() = default;

  /// Parses links per axis: "tp=450:2,dp=25:10,*=100:5", each entry an
  /// axis (or `*`, every other axis) with its bandwidth in GB/s and its
  /// latency in microseconds. On failure sets `error` and returns nullopt.
  static std::optional<CostModel> parse(llvm::StringRef spec, std::string &error);

  /// The link of `axis` (a sub-axis runs over its axis' link).
  const Link &linkOf(llvm::StringRef axis) const;
  /// Sets the link of `axis`; `*` sets the default.
  void setLink(llvm::StringRef axis, Link link);

  const Device &device() const { return dev; }
  void setDevice(Device device) { dev = device; }
  /// The roofline time of work of `flops` that reads and writes `bytes`.
  double computeSeconds(double flops, double bytes) const;

  /// The share of a collective's buffer that one rank of a group of
  /// `groupSize` sends.
  static double wireFactor(CollectiveKind kind, int64_t groupSize);
  /// The ring steps of a collective over `groupSize` ranks: each pays the
  /// latency once.
  static int64_t steps(CollectiveKind kind, int64_t groupSize);

  /// The cost of `kind` moving a buffer of `bytes` (per rank, as the comm
  /// report counts it) over a group of `groupSize` ranks spanning `axes`.
  CollectiveCost cost(CollectiveKind kind, int64_t bytes, llvm::ArrayRef<llvm::StringRef> axes,
                      int64_t groupSize) const;

  /// The default link: 100 GB/s, 5 us.
  static constexpr Link kDefaultLink = {100e9, 5e-6};
  /// The default device: 100 TFLOP/s, 2 TB/s, 80 GB.
  static constexpr Device kDefaultDevice = {100e12, 2e12, 80e9};

private:
  Link fallback = kDefaultLink;
  Device dev = kDefaultDevice;
  llvm::StringMap<Link> links;
};

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_COSTMODEL_H
