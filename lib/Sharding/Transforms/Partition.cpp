//===- Partition.cpp - Per-rank SPMD program from a sharded global one ----===//
//
// Part of pmlir.
//
// A thin pass over the partitioner (pmlir/Sharding/Partition.h).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Sharding/Partition.h"

namespace pmlir {
#define GEN_PASS_DEF_PARTITION
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

namespace {

struct PartitionPass : public pmlir::impl::PartitionBase<PartitionPass> {
  void runOnOperation() override {
    if (mlir::failed(pmlir::sharding::partitionModule(getOperation())))
      signalPassFailure();
  }
};

} // namespace
