//===- Optimizer.cpp - A training step from a gradient function -----------===//
//
// Part of pmlir.
//
// A thin pass over the optimizer engine (pmlir/Training/Optimizer.h).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Training/Transforms/Passes.h"

#include "pmlir/Training/Optimizer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

#define DEBUG_TYPE "pmlir-optimizer"

namespace pmlir {
#define GEN_PASS_DEF_OPTIMIZER
#include "pmlir/Training/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct OptimizerPass : public pmlir::impl::OptimizerBase<OptimizerPass> {
  using OptimizerBase::OptimizerBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto grad = module.lookupSymbol<func::FuncOp>(entry);
    if (!grad) {
      module.emitError() << "pmlir-optimizer: no gradient function @" << entry
                         << " (run pmlir-autodiff first)";
      return signalPassFailure();
    }
    pmlir::training::OptimizerOptions options;
    options.entry = entry;
    options.name = name;
    options.adamw = {lr, beta1, beta2, eps, weightDecay};
    options.maxGradNorm = maxGradNorm;
    options.gradAccum = gradAccum;
    if (std::optional<std::string> unusable = pmlir::training::unusableOptimizerValue(
            options, [](llvm::StringRef option) { return option.str(); })) {
      module.emitError() << "pmlir-optimizer: " << *unusable;
      return signalPassFailure();
    }
    if (failed(pmlir::training::buildTrainStep(grad, options)))
      return signalPassFailure();
    if (!keepEntry)
      grad.erase();
  }
};

} // namespace
