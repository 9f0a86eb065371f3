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
    // eps divides: v is 0 wherever a gradient is, and 0 / (0 + 0) is NaN.
    if (!(eps > 0) || !std::isfinite(eps)) {
      module.emitError() << "pmlir-optimizer: eps must be a finite value > 0 (the update divides "
                            "by sqrt(v) + eps, and v is 0 where a gradient is), got "
                         << eps;
      return signalPassFailure();
    }
    for (auto [what, value] : {std::pair<const char *, double>{"lr", lr},
                               {"weight-decay", weightDecay},
                               {"max-grad-norm", maxGradNorm}})
      if (!(value >= 0) || !std::isfinite(value)) {
        module.emitError() << "pmlir-optimizer: " << what << " must be a finite value >= 0, got "
                           << value;
        return signalPassFailure();
      }
    for (auto [what, value] : {std::pair<const char *, double>{"beta1", beta1}, {"beta2", beta2}})
      if (!(value >= 0 && value < 1)) {
        module.emitError() << "pmlir-optimizer: " << what << " must be in [0, 1), got " << value;
        return signalPassFailure();
      }
    if (failed(pmlir::training::buildTrainStep(grad, options)))
      return signalPassFailure();
    if (!keepEntry)
      grad.erase();
  }
};

} // namespace
