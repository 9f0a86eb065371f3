//===- PipelinePartition.cpp - Cut a program into pipeline stages ---------===//
//
// Part of pmlir.
//
// A thin pass over pmlir::pipeline::partitionIntoStages.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Transforms/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Pipelining/Pipelining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace pmlir {
#define GEN_PASS_DEF_PIPELINEPARTITION
#include "pmlir/Pipelining/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct PipelinePartitionPass : public pmlir::impl::PipelinePartitionBase<PipelinePartitionPass> {
  using PipelinePartitionBase::PipelinePartitionBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func) {
      module.emitError() << "pmlir-pipeline-partition: no function @" << entry << " to cut";
      return signalPassFailure();
    }
    pmlir::pipeline::StagePartitionOptions options;
    options.stages = stages;
    options.splitPoints.assign(splitPoints.begin(), splitPoints.end());
    if (failed(pmlir::pipeline::partitionIntoStages(func, options)))
      return signalPassFailure();
  }
};

} // namespace
