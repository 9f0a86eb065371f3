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

enum class FactorKind { Parallel, Contracting, Replicated };

/// How a pending sum on an operand reaches the result.
enum class PendingRule {
  /// The op is linear in each operand alone (scale, matmul, mul, reshapes):
  /// one pending operand with the others not pending on its axes gives a
  /// result pending on them.
  LinearInOne,
  /// The op is a sum of its operands (add, sub): the result is pending on
  /// the axes that every float operand is pending on.
  Additive,
  /// The op needs its operands' full values (nonlinear).
  None,
};

struct ShardingRule {
  struct Factor {
    int64_t size;
    FactorKind kind;
  };
  llvm::SmallVector<Factor> factors;
  /// Per operand and per result, per dimension: its factors, major first.
  /// An operand the rule does not shard (a scalar attribute-like input) has
  /// std::nullopt.
  llvm::SmallVector<std::optional<llvm::SmallVector<llvm::SmallVector<int64_t>>>> operands;
  llvm::SmallVector<llvm::SmallVector<llvm::SmallVector<int64_t>>> results;
  PendingRule pending = PendingRule::None;

  /// Whether factor `f` is the minor-most factor of every dimension it is
  /// part of. Only such a factor may be split unevenly: its padding then
  /// sits at the end of each of its dimensions.
  bool isMinorEverywhere(int64_t f) const;
};

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

/// The rule of a tfm op (every op but tfm.layer and tfm.yield, whose values
/// are those of the region), or std::nullopt for ops without one.
std::optional<ShardingRule> getShardingRule(mlir::Operation *op);

} // namespace pmlir::tfm

#endif // PMLIR_DIALECT_TFM_IR_SHARDINGRULES_H
