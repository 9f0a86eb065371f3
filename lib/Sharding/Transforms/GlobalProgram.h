//===- GlobalProgram.h - Passes that shard a global program --------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_LIB_TRANSFORMS_SHARDING_GLOBALPROGRAM_H
#define PMLIR_LIB_TRANSFORMS_SHARDING_GLOBALPROGRAM_H

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"

namespace pmlir {

/// Whether `module` is a global program that `who` (a pass that shards one)
/// may take; after an error on the module when it is already partitioned
/// (pmlir-partition declared its shard.grid): its shapes are one rank's,
/// and sharding them again would split what is split.
inline bool isGlobalProgram(mlir::ModuleOp module, llvm::StringRef who) {
  if (module.getOps<mlir::shard::GridOp>().empty())
    return true;
  module.emitError() << who
                     << " shards a global program, and this one is already partitioned (it "
                        "has a shard.grid: its shapes are each rank's)";
  return false;
}

} // namespace pmlir

#endif // PMLIR_LIB_TRANSFORMS_SHARDING_GLOBALPROGRAM_H
