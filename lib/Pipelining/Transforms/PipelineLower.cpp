//===- PipelineLower.cpp - One pipeline rank's program --------------------===//
//
// Part of pmlir.
//
// A thin pass over pmlir::pipeline::lowerToPipelineRank.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Transforms/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Pipelining/Pipelining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace pmlir {
#define GEN_PASS_DEF_PIPELINELOWER
#include "pmlir/Pipelining/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct PipelineLowerPass : public pmlir::impl::PipelineLowerBase<PipelineLowerPass> {
  using PipelineLowerBase::PipelineLowerBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func) {
      module.emitError() << "pmlir-pipeline-lower: no function @" << entry;
      return signalPassFailure();
    }
    if (failed(pmlir::pipeline::lowerToPipelineRank(func, rank, axis, trace)))
      return signalPassFailure();
  }
};

} // namespace
