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

/// The module's tfm.mesh, or null after an error saying that `who` needs
/// one.
MeshAttr meshOf(mlir::Operation *module, llvm::StringRef who);

/// The rule of an op (its ShardingRuleOpInterface: every tfm op but
/// tfm.layer, tfm.yield and the pieces of partitioned programs), or
/// std::nullopt for ops without one.
std::optional<ShardingRule> getShardingRule(mlir::Operation *op);

} // namespace pmlir::tfm

#endif // PMLIR_DIALECT_TFM_IR_SHARDINGRULES_H
