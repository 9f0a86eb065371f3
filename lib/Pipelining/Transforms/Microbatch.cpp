//===- Microbatch.cpp - Repeat a forward over microbatches ----------------===//
//
// Part of pmlir.
//
// A thin pass over pmlir::pipeline::repeatOverMicrobatches.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Pipelining/Transforms/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Pipelining/Pipelining.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace pmlir {
#define GEN_PASS_DEF_MICROBATCH
#include "pmlir/Pipelining/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct MicrobatchPass : public pmlir::impl::MicrobatchBase<MicrobatchPass> {
  using MicrobatchBase::MicrobatchBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto func = module.lookupSymbol<func::FuncOp>(entry);
    if (!func) {
      module.emitError() << "pmlir-microbatch: no function @" << entry << " to repeat";
      return signalPassFailure();
    }
    if (failed(pmlir::pipeline::repeatOverMicrobatches(func, microbatches)))
      return signalPassFailure();
  }
};

} // namespace
