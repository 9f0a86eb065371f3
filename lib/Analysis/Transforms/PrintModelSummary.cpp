//===- PrintModelSummary.cpp - Size and cost of tfm model functions -------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Analysis/ModelSummary.h"
#include "pmlir/Analysis/Transforms/Passes.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/TypeBytes.h"

#include "llvm/Support/Format.h"

namespace pmlir {
#define GEN_PASS_DEF_PRINTMODELSUMMARY
#include "pmlir/Analysis/Transforms/Passes.h.inc"
} // namespace pmlir

#include "llvm/Support/Debug.h"
#include "llvm/Support/MathExtras.h"

#include <limits>

#define DEBUG_TYPE "pmlir-print-model-summary"

using namespace mlir;
using namespace pmlir;

ModelSummary pmlir::summarizeModel(func::FuncOp func) {
  ModelSummary s;
  s.function = func.getSymName().str();
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<ShapedType>(arg.getType());
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(), tfm::kNameAttr);
    if (tfm::argumentRole(func, arg.getArgNumber()) != tfm::ArgumentRole::Param) {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << (name ? name.getValue() : "%arg" + std::to_string(arg.getArgNumber())) << " " << type;
      s.inputs.push_back(text);
      continue;
    }
    ++s.weightTensors;
    if (!type.hasStaticShape()) {
      ++s.dynamicTensors;
      continue;
    }
    // Saturating: a shape past 2^63 elements is no model, but no UB either.
    int64_t elements = 1, bytes = 0;
    for (int64_t d : type.getShape())
      if (llvm::MulOverflow(elements, d, elements))
        elements = std::numeric_limits<int64_t>::max();
    if (llvm::MulOverflow(elements, elementBytes(type.getElementType()), bytes))
      bytes = std::numeric_limits<int64_t>::max();
    if (llvm::AddOverflow(s.parameters, elements, s.parameters))
      s.parameters = std::numeric_limits<int64_t>::max();
    if (llvm::AddOverflow(s.weightBytes, bytes, s.weightBytes))
      s.weightBytes = std::numeric_limits<int64_t>::max();
  }
  llvm::append_range(s.results, func.getResultTypes());
  func.walk([&](Operation *op) {
    if (!isa<tfm::TfmDialect>(op->getDialect()) || op->hasTrait<OpTrait::IsTerminator>())
      return;
    ++s.opCounts[op->getName().getStringRef().str()];
    if (isa<tfm::LayerOp>(op))
      ++s.layers;
    if (auto cost = dyn_cast<tfm::CostOpInterface>(op))
      s.flops += cost.getFlops();
  });
  return s;
}

void ModelSummary::print(llvm::raw_ostream &os) const {
  os << "model @" << function << "\n";
  os << "  layers:  " << layers << "\n";
  os << "  inputs:  ";
  llvm::interleaveComma(inputs, os);
  os << "\n  weights: " << weightTensors << " tensors, " << parameters << " parameters ("
     << llvm::format("%.1f", weightBytes / 1e6) << " MB)\n";
  os << "  results: ";
  llvm::interleaveComma(results, os);
  os << "\n  dense matmul + attention FLOPs per call: " << llvm::format("%.4g", flops / 1e9)
     << " GFLOP";
  if (dynamicTensors)
    os << " (" << dynamicTensors
       << " weight tensors of dynamic shape are not counted in parameters or FLOPs)";
  os << "\n";
  os << "  ops:     ";
  llvm::interleaveComma(opCounts, os,
                        [&](const auto &entry) { os << entry.first << " " << entry.second; });
  os << "\n";
}

namespace {

struct PrintModelSummaryPass : public pmlir::impl::PrintModelSummaryBase<PrintModelSummaryPass> {
  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "summarizing " << getOperation()->getName() << "\n");
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      ModelSummary summary = summarizeModel(func);
      if (summary.opCounts.empty())
        continue;
      summary.print(llvm::outs());
    }
    markAllAnalysesPreserved();
  }
};

} // namespace
