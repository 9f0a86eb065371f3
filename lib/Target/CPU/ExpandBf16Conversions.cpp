//===- ExpandBf16Conversions.cpp - bf16 <-> f32 as integer ops ------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace pmlir {
#define GEN_PASS_DEF_EXPANDBF16CONVERSIONS
#include "pmlir/Target/CPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

struct ExpandBf16ConversionsPass
    : public pmlir::impl::ExpandBf16ConversionsBase<ExpandBf16ConversionsPass> {
  void runOnOperation() override {
    // Upstream's bf16 patterns alone: its arith-expand-ops pass would also
    // take arith.maximumf and minimumf apart into compares and selects,
    // which LLVM no longer recognizes as a max reduction, so a row max
    // stays scalar.
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
