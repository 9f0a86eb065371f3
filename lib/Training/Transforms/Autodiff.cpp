//===- Autodiff.cpp - The gradient of a loss-returning function -----------===//
//
// Part of pmlir.
//
// A thin pass over the autodiff engine (pmlir/Training/Autodiff.h).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Training/Transforms/Passes.h"

#include "pmlir/Training/Autodiff.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-autodiff"

namespace pmlir {
#define GEN_PASS_DEF_AUTODIFF
#include "pmlir/Training/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct AutodiffPass : public pmlir::impl::AutodiffBase<AutodiffPass> {
  using AutodiffBase::AutodiffBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>(entry);
    if (!forward) {
      module.emitError() << "pmlir-autodiff: no function @" << entry << " to differentiate";
      return signalPassFailure();
    }
    pmlir::training::AutodiffOptions options;
    options.entry = entry;
    options.name = name;
    options.recompute = recompute;
    FailureOr<func::FuncOp> grad = pmlir::training::buildGradientFunction(forward, options);
    if (failed(grad))
      return signalPassFailure();
    if (!keepEntry)
      forward.erase();
    LLVM_DEBUG(llvm::dbgs() << "@" << name << ": " << grad->getNumResults() - 1
                            << " parameter gradients\n");
  }
};

} // namespace
