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
};

/// The module's tfm.mesh, or null after an error saying that `who` needs
/// one.
MeshAttr meshOf(mlir::Operation *module, llvm::StringRef who);

/// The rule of a tfm op (every op but tfm.layer and tfm.yield, whose values
/// are those of the region), or std::nullopt for ops without one.
std::optional<ShardingRule> getShardingRule(mlir::Operation *op);

} // namespace pmlir::tfm

#endif // PMLIR_DIALECT_TFM_IR_SHARDINGRULES_H
