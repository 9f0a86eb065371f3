//===- Propagation.h - Complete shardings from seeds ------------*- C++ -*-===//
//
// Part of pmlir.
//
// The propagation engine: given the shardings of some values (seeds), it
// gives every value of a function it can reach a sharding, asking each op
// for its factor sharding rule (ShardingRuleOpInterface). Seeds never change
// but in their open dimensions, which propagation may split further, once.
// They enter in rounds of increasing priority, each round run to its fixed
// point: forward from operands to results until nothing changes, then one
// backward sweep from results and sibling operands to operands, and again.
// At an op, each factor takes the mesh axes its tensors propose; when they
// disagree the proposal backed by the most tensor bytes wins, so the largest
// tensors keep their layout and the smaller ones are resharded. Contracting
// factors make the result a pending sum; pending sums pass through ops that
// are linear in them and stop at the first op that needs the full value.
// The engine writes no IR: pmlir-sharding-propagation writes what it
// returns, and auto-sharding can call it on proposals.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_PROPAGATION_H
#define PMLIR_SHARDING_PROPAGATION_H

#include "pmlir/Sharding/Sharding.h"

#include "mlir/Interfaces/FunctionInterfaces.h"
#include "llvm/ADT/MapVector.h"

namespace pmlir::sharding {

/// A sharding the user gave: on an argument, a result or a
/// tfm.sharding_constraint.
struct ShardingSeed {
  mlir::Value value;
  Sharding sharding;
  /// Dimensions propagation may split further.
  llvm::SmallVector<int64_t> open;
  /// Seeds of lower priority enter first.
  int64_t priority = 0;
};

/// Per value, its sharding. Values nothing reached are absent (replicated).
using ShardingMap = llvm::MapVector<mlir::Value, Sharding>;

/// Completes the shardings of the values of `func` (its arguments, op
/// results and the arguments of nested tfm.layer bodies) from `seeds`.
/// `resultHints` give returned values a sharding where nothing else does.
/// Warns at an op where a seed loses to a heavier one.
ShardingMap propagateShardings(mlir::FunctionOpInterface func, MeshAttr mesh,
                               llvm::ArrayRef<ShardingSeed> seeds,
                               llvm::ArrayRef<std::pair<mlir::Value, Sharding>> resultHints = {});

/// `attr` as the sharding of `v`, checked on `mesh`: the axes exist, do not
/// overlap and do not outnumber the elements of their dimensions. Errors go
/// to `emitError()` and begin with `what`.
mlir::FailureOr<Sharding> checkSharding(MeshAttr mesh, mlir::Value v, ShardingAttr attr,
                                        llvm::function_ref<mlir::InFlightDiagnostic()> emitError,
                                        llvm::StringRef what);

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_PROPAGATION_H
