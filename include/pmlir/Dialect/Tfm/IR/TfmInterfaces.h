//===- TfmInterfaces.h - What each tfm op is, for the passes ----*- C++ -*-===//
//
// Part of pmlir.
//
// The data the interfaces of TfmInterfaces.td speak in: factor sharding
// rules (as Shardy's OpShardingRule: an op's iteration space is a list of
// factors, each tensor dimension a product of factors, major first; a
// factor is parallel, contracting (each device sums over its block: the
// result is a pending sum) or needs replication), what partition offers an
// op's local rewrite and an op that partitions itself, and the op traits.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_TFMINTERFACES_H
#define PMLIR_DIALECT_TFM_IR_TFMINTERFACES_H

#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace pmlir::tfm {

enum class FactorKind { Parallel, Contracting, Replicated };

/// How a pending sum on an operand reaches the result (from the op's
/// traits: pendingRuleOf).
enum class PendingRule {
  /// LinearInEachOperand: one pending operand with the others not pending
  /// on its axes gives a result pending on them.
  LinearInOne,
  /// SumOfOperands, LinearInAllOperands: the result is pending on the
  /// axes that every float operand is pending on.
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
  /// Pairs of factors that may split over the same axes: an op that
  /// partitions itself knows what a device holds then (expert parallelism:
  /// a device's block of the tokens and its block of the experts).
  llvm::SmallVector<std::pair<int64_t, int64_t>> sharing;
  /// What the op sends itself when an axis splits both factors of a
  /// sharing pair (expert parallelism: each token's rows to the devices of
  /// its experts and back): `count` all-to-alls over the shared axes, each
  /// moving `bytes` over all devices together, a device its block's share
  /// (the first factors of the pairs split the blocks).
  struct Exchanges {
    int64_t bytes = 0;
    int64_t count = 0;
  } exchanges;

  /// Whether factors `f` and `g` may split over the same axes.
  bool share(int64_t f, int64_t g) const {
    return llvm::is_contained(sharing, std::make_pair(f, g)) ||
           llvm::is_contained(sharing, std::make_pair(g, f));
  }

  /// Whether result `r` sums over factor `f`: `f` is contracting and no
  /// dimension of the result holds it. (A contracting factor some result
  /// keeps, as the query gradient keeps the query sequence that the key
  /// gradient sums over, splits that result and leaves the others pending.)
  bool sumsOver(unsigned r, int64_t f) const;

  /// Whether factor `f` is the minor-most factor of every dimension it is
  /// part of. Only such a factor may be split unevenly: its padding then
  /// sits at the end of each of its dimensions.
  bool isMinorEverywhere(int64_t f) const;
};

/// The rule of elementwise ops with trailing broadcast: one parallel factor
/// per result dimension, each operand holding the trailing ones; pending
/// sums as the op's traits say.
ShardingRule trailingBroadcastRule(mlir::Operation *op);

/// How pending sums pass through `op`, from its traits.
PendingRule pendingRuleOf(mlir::Operation *op);

/// What partition offers an op's local rewrite (partitionLocally).
class LocalPartition {
public:
  virtual ~LocalPartition() = default;
  /// The mesh axes the op's contracting factors are split over: its
  /// results are pending sums over them.
  virtual llvm::ArrayRef<llvm::StringRef> contractedAxes() const = 0;
  /// Per dimension, the axes that split local result `i` as computed.
  virtual llvm::ArrayRef<llvm::SmallVector<llvm::StringRef>> resultAxes(unsigned i) const = 0;
  /// The local value of the global value `v`.
  virtual mlir::Value localOf(mlir::Value global) const = 0;
  /// An index value: `base` plus this rank's block index along `axes`
  /// times `localSize`, the first global element of its block, computed
  /// before the local op.
  virtual mlir::Value blockStart(llvm::ArrayRef<llvm::StringRef> axes, int64_t localSize,
                                 int64_t base) = 0;
};

class ShardingAttr;

/// What partition offers an op that partitions itself (partitionItself):
/// the local values of its operands in the shardings it asks for, the
/// collectives it combines local results with, and its results' places.
/// Shardings are as computed: `pending` lists the axes a local value is a
/// partial sum over.
class OpPartition {
public:
  virtual ~OpPartition() = default;
  /// Where the op's local program is built.
  virtual mlir::OpBuilder &builder() = 0;
  /// The sharding of the local value of the global value `global`.
  virtual ShardingAttr shardingOf(mlir::Value global) const = 0;
  /// The local value of `global` in sharding `want` (resharded once per
  /// block), or failure after a diagnostic.
  virtual mlir::FailureOr<mlir::Value> localAs(mlir::Value global, ShardingAttr want) = 0;
  /// `local`, the local value of a global value of type `global` in
  /// sharding `from`, resharded to `to`; or failure after a diagnostic.
  virtual mlir::FailureOr<mlir::Value> reshard(mlir::RankedTensorType global, mlir::Value local,
                                               ShardingAttr from, ShardingAttr to) = 0;
  /// An index value: `base` plus this rank's block index along `axes`
  /// times `localSize`, the first global element of its block.
  virtual mlir::Value blockStart(llvm::ArrayRef<llvm::StringRef> axes, int64_t localSize,
                                 int64_t base) = 0;
  /// `local` summed (all-reduced) over the ranks of `axes`.
  virtual mlir::Value sumOver(mlir::Value local, llvm::ArrayRef<llvm::StringRef> axes) = 0;
  /// `local`'s maximum (all-reduced) over the ranks of `axes`.
  virtual mlir::Value maxOver(mlir::Value local, llvm::ArrayRef<llvm::StringRef> axes) = 0;
  /// The axes of the partitioned program's grid that make up the mesh
  /// axes `axes`, for a collective of the op's own over them.
  virtual llvm::SmallVector<int16_t> gridAxesOf(llvm::ArrayRef<llvm::StringRef> axes) = 0;
  /// Sets `local`, in sharding `computed`, as the local value of the op's
  /// result `result`, resharded to the result's own sharding where that
  /// differs; failure after a diagnostic.
  virtual mlir::LogicalResult setResult(mlir::OpResult result, mlir::Value local,
                                        ShardingAttr computed) = 0;
  /// Keeps `values`, local values the op's partition made, for the
  /// partition of a later op of the same block (a loss's statistics for
  /// its gradient), which finds them by keptBy(this op).
  virtual void keep(mlir::ValueRange values) = 0;
  /// What the partition of `earlier` kept (keep), where `earlier` comes
  /// before the op in its block, so that its local values dominate the
  /// op's; empty otherwise.
  virtual llvm::ArrayRef<mlir::Value> keptBy(mlir::Operation *earlier) const = 0;
};

/// A value a backward pass keeps, and why.
struct SavedValue {
  mlir::Value value;
  llvm::StringRef kind;
};

namespace OpTrait {
template <typename ConcreteType>
class SequenceLocal : public mlir::OpTrait::TraitBase<ConcreteType, SequenceLocal> {};
template <typename ConcreteType>
class KeepsZeroPadding : public mlir::OpTrait::TraitBase<ConcreteType, KeepsZeroPadding> {};
template <typename ConcreteType>
class LinearInEachOperand : public mlir::OpTrait::TraitBase<ConcreteType, LinearInEachOperand> {};
template <typename ConcreteType>
class SumOfOperands : public mlir::OpTrait::TraitBase<ConcreteType, SumOfOperands> {};
template <typename ConcreteType>
class LinearInAllOperands : public mlir::OpTrait::TraitBase<ConcreteType, LinearInAllOperands> {};
template <typename ConcreteType>
class InlineBody : public mlir::OpTrait::TraitBase<ConcreteType, InlineBody> {};
} // namespace OpTrait

/// The value `v` stands for: the result of an op with an inline body (a
/// tfm.layer, a pipe.fragment) is the value its body yields, through any
/// nesting.
inline mlir::Value yieldedValue(mlir::Value v) {
  while (auto result = mlir::dyn_cast<mlir::OpResult>(v)) {
    mlir::Operation *op = result.getOwner();
    if (!op->hasTrait<OpTrait::InlineBody>())
      break;
    v = op->getRegion(0).front().getTerminator()->getOperand(result.getResultNumber());
  }
  return v;
}

} // namespace pmlir::tfm

#include "pmlir/Dialect/Tfm/IR/TfmInterfaces.h.inc"

#endif // PMLIR_DIALECT_TFM_IR_TFMINTERFACES_H
