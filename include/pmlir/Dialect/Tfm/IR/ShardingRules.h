//===- ShardingRules.h - Factor-based sharding rules of tfm ops -*- C++ -*-===//
//
// Part of pmlir.
//
// As Shardy's OpShardingRule: an op's iteration space is a list of factors,
// each tensor dimension is a product of factors (major first), and a factor
// is parallel (each device computes its block), contracting (each device
// sums over its block: the result is a pending sum) or needs replication (a
// norm's hidden dimension, softmax's row). One propagation engine reads
// these rules for every op.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_SHARDINGRULES_H
#define PMLIR_DIALECT_TFM_IR_SHARDINGRULES_H

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/Layout.h"

#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace pmlir::tfm {

using Axes = llvm::SmallVector<llvm::StringRef>;

/// A sharding as passes work on it: per dimension the mesh axes that split
/// it (major first) and the axes of a pending sum.
struct Sharding {
  llvm::SmallVector<Axes> dims;
  Axes pending;

  static Sharding of(ShardingAttr attr);
  ShardingAttr toAttr(mlir::MLIRContext *context, bool withPending = true) const;
  bool operator==(const Sharding &other) const {
    return dims == other.dims && pending == other.pending;
  }
  bool operator!=(const Sharding &other) const { return !(*this == other); }
};

/// The bytes of the ranked tensor `v` (at least one per element).
inline int64_t tensorBytes(mlir::Value v) {
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  return type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// The number of devices `axes` span on `mesh`.
int64_t devicesOf(MeshAttr mesh, llvm::ArrayRef<llvm::StringRef> axes);

/// Shards of uneven splits are padded (pmlir/Support/Layout.h).
using pmlir::shardSize;

/// Gives each factor of a dimension (`factors`, major first) the axes of
/// `dimAxes` that split it: major factors first, each taking axes while they
/// divide what remains of it, and the major part (a sub-axis) of an axis
/// that what remains divides (2 kv heads on a tp of 4 take "tp:(1)2", the
/// query group "tp:(2)2"). Axes past a factor they do not split fully
/// are not contiguous blocks of the next factor and are left out. The last
/// factor, if minor everywhere, takes the axes that remain as an uneven
/// (padded) split while they do not outnumber its elements.
void factorAxes(llvm::ArrayRef<int64_t> factors, llvm::ArrayRef<llvm::StringRef> dimAxes,
                const ShardingRule &rule, MeshAttr mesh,
                llvm::SmallVectorImpl<Axes> &perFactor);

/// The module's tfm.mesh, or null after an error saying that `who` needs
/// one.
MeshAttr meshOf(mlir::Operation *module, llvm::StringRef who);

/// The rule of an op (its ShardingRuleOpInterface: every tfm op but
/// tfm.layer, tfm.yield and the pieces of partitioned programs), or
/// std::nullopt for ops without one.
std::optional<ShardingRule> getShardingRule(mlir::Operation *op);

} // namespace pmlir::tfm

#endif // PMLIR_DIALECT_TFM_IR_SHARDINGRULES_H
