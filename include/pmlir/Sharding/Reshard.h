//===- Reshard.h - Plan and emit the change of a value's sharding -*- C++ -*-===//
//
// Part of pmlir.
//
// A reshard turns a rank's block of a tensor under one sharding into its
// block under another. The planner picks the collectives without touching
// IR (a dry run: auto-sharding and the cost of a proposal ask it), and the
// emitter writes a plan as upstream `shard` ops on the grid `kGridName`
// (pmlir/Sharding/Grid.h), where a collective over a sub-axis is one over
// the grid axes of its parts.
//
// The plan, for any change: pending sums are reduce_scattered along
// dimensions the target splits over the reduced axes and all_reduced
// otherwise; an axis at the minor end of one dimension that the target
// appends to another moves there in one all_to_all; axes leaving a
// dimension are all_gathered, axes joining one all_sliced (no
// communication). Uneven splits are padded (pmlir/Support/Layout.h): a
// padded dimension that changes is gathered whole, its padding cut off, and
// sliced anew, since shards of different sizes do not nest.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_RESHARD_H
#define PMLIR_SHARDING_RESHARD_H

#include "pmlir/Sharding/CostModel.h"
#include "pmlir/Sharding/Grid.h"
#include "pmlir/Sharding/Sharding.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"

#include <string>
#include <vector>

namespace pmlir::sharding {

/// One collective of a reshard, on local shapes.
struct ReshardStep {
  CollectiveKind kind;
  /// The mesh axes or sub-axes of the collective's groups, major first.
  Axes axes;
  /// The dimension it gathers, scatters or slices; for an all_to_all the
  /// one it splits (that gains the axis).
  int64_t dim = 0;
  /// For an all_to_all, the dimension it concatenates (that loses the axis).
  int64_t concatDim = 0;
  /// When not -1, `dim` of the input is first padded with zeros to this size
  /// (an uneven scatter or slice).
  int64_t padTo = -1;
  /// The collective's local result shape; an all_gather's includes the
  /// gathered padding, which `cutTo` (when not -1) cuts off `dim`.
  llvm::SmallVector<int64_t> resultShape;
  int64_t cutTo = -1;
  /// The sharding after this step.
  Sharding after;
  /// The bytes of the buffer the collective moves on a rank, as the comm
  /// report counts them: an all_reduce's tensor, an all_gather's result, a
  /// reduce_scatter's or all_to_all's input; an all_slice moves none.
  int64_t bytes = 0;
  /// The ranks of each of its groups.
  int64_t groupSize = 1;
};

struct ReshardPlan {
  Sharding from, to;
  std::vector<ReshardStep> steps;
  /// Where a dimension is made of parts (in `from` or `to`), the steps work
  /// on the view that makes each such dimension two, [parts, the rest], and
  /// their dimensions, shapes and shardings are the view's: here, per
  /// dimension of the tensor, its parts in that view (empty: no view).
  llvm::SmallVector<int64_t> partsView;

  /// What the plan costs one rank.
  CollectiveCost cost(const CostModel &model) const;
};

/// Plans the change of sharding `from` -> `to` of a tensor of type
/// `global` on `mesh`. Fails, with `error` set to why (a phrase, such as
/// "a full value cannot become a pending sum"), where no collectives do it.
/// Touches no IR.
std::optional<ReshardPlan> planReshard(MeshAttr mesh, mlir::RankedTensorType global,
                                       const Sharding &from, const Sharding &to,
                                       std::string &error);

/// The local type of a tensor of type `global` under `sharding`: each
/// dimension a (padded) shard.
mlir::RankedTensorType localType(MeshAttr mesh, mlir::RankedTensorType global,
                                 const Sharding &sharding);

/// Emits `plan` on the local value `v` at the builder's insertion point, on
/// `grid`, and returns the resharded local value.
mlir::Value emitReshard(mlir::OpBuilder &b, mlir::Location loc, Grid &grid, const ReshardPlan &plan,
                        mlir::Value v);

/// `v` with dimension `d` grown (zeros at the end) or cut to `size`.
mlir::Value resizeDim(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v, int64_t d,
                      int64_t size);

/// This rank's block index along `axes` (major first), as an index value:
/// Mesh::blockIndex, read as this rank's linear index over the grid axes of
/// `axes`.
mlir::Value emitBlockIndex(mlir::OpBuilder &b, mlir::Location loc, Grid &grid,
                           llvm::ArrayRef<llvm::StringRef> axes);

/// The first global element of this rank's block: `base` plus the block
/// index along `axes` times `localSize`.
mlir::Value emitBlockStart(mlir::OpBuilder &b, mlir::Location loc, Grid &grid,
                           llvm::ArrayRef<llvm::StringRef> axes, int64_t localSize, int64_t base);

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_RESHARD_H
