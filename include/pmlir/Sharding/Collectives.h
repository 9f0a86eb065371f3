//===- Collectives.h - The collectives of a partitioned program -*- C++ -*-===//
//
// Part of pmlir.
//
// What a partitioned program's shard collectives move on one rank, as the
// comm report writes it and the planner predicts it: each collective once
// per op in the program (a training step's microbatches and a pipeline
// rank's schedule are unrolled, so an op is one call), with the bytes of
// the largest buffer it moves (the tensor of an all_reduce, the gathered
// result of an all_gather, the input of a reduce_scatter or all_to_all,
// the tensor of a broadcast, send or recv; an all_slice moves nothing),
// named by the mesh axes its grid axes are.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_COLLECTIVES_H
#define PMLIR_SHARDING_COLLECTIVES_H

#include "pmlir/Sharding/CostModel.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>
#include <vector>

namespace pmlir::sharding {

/// One collective of a partitioned program, as one rank runs it.
struct Collective {
  mlir::Operation *op;
  CollectiveKind kind;
  /// The mesh axes (or sub-axes) of its group, in grid order; "axisN" for
  /// a grid axis the module's tfm.mesh does not name.
  std::vector<std::string> axes;
  /// The ranks of its group.
  int64_t groupSize = 1;
  int64_t bytes = 0;
  CollectiveCost cost;

  /// The axes joined by commas: "tp", "dp,tp".
  std::string axesKey() const;
};

/// Totals of some collectives.
struct CollectiveTotal {
  int64_t count = 0, bytes = 0, wireBytes = 0;
  double seconds = 0;

  void add(const Collective &c) {
    ++count;
    bytes += c.bytes;
    wireBytes += c.cost.wireBytes;
    seconds += c.cost.seconds;
  }
};

/// The collectives of `module` in program order, priced by `model`; fails
/// (with a diagnostic) where the module's grid does not fit its tfm.mesh.
mlir::FailureOr<std::vector<Collective>> collectivesOf(mlir::ModuleOp module,
                                                       const CostModel &model);

/// Per group of mesh axes ("tp", "dp,tp"), the totals of what communicates
/// (all_slices, local slices, left out).
std::map<std::string, CollectiveTotal> totalsPerAxes(const std::vector<Collective> &collectives);

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_COLLECTIVES_H
