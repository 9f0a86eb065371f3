//===- Partition.h - Per-rank SPMD program of a sharded one ---*- C++ -*-===//
//
// Part of pmlir.
//
// The partitioner: a global program whose values all have shardings (after
// sharding propagation) becomes the program one rank runs, on local shapes,
// with upstream `shard` collectives on the grid of its tfm.mesh. Each op is
// partitioned from its sharding rule (ShardingRuleOpInterface), or by
// itself where it says so (partitionItself); pmlir-partition is the pass
// over it.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_PARTITION_H
#define PMLIR_SHARDING_PARTITION_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

namespace pmlir::sharding {

/// Partitions every function of `module` with a body on the module's grid:
/// the one it declares (a program partitioned in steps), else one cut for
/// the sub-axes its shardings name, declared here. Fails after a
/// diagnostic.
mlir::LogicalResult partitionModule(mlir::ModuleOp module);

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_PARTITION_H
