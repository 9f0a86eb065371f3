//===- PrintModelSummary.cpp - Size and cost of tfm model functions -------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Transforms/ModelSummary.h"
#include "pmlir/Transforms/Passes.h"

#include "llvm/Support/Format.h"

namespace pmlir {
#define GEN_PASS_DEF_PRINTMODELSUMMARY
#include "pmlir/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

static int64_t product(ArrayRef<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

/// Dense FLOPs of one op (2 per multiply-add); a causal mask is not
/// subtracted, so the count is comparable across attention variants.
static double opFlops(Operation *op) {
  if (auto mm = dyn_cast<tfm::MatmulOp>(op)) {
    ArrayRef<int64_t> lhs = mm.getLhs().getType().getShape();
    ArrayRef<int64_t> out = mm.getResult().getType().getShape();
    int64_t k = mm.getTransposeLhs() ? lhs[lhs.size() - 2] : lhs.back();
    return 2.0 * product(out) * k;
  }
  if (auto attn = dyn_cast<tfm::AttentionOp>(op)) {
    ArrayRef<int64_t> q = attn.getQuery().getType().getShape();
    ArrayRef<int64_t> k = attn.getKey().getType().getShape();
    ArrayRef<int64_t> v = attn.getValue().getType().getShape();
    double scores = 1.0 * q[0] * q[1] * q[2] * k[2];
    return 2.0 * scores * q[3] + 2.0 * scores * v[3];
  }
  return 0.0;
}

ModelSummary pmlir::summarizeModel(func::FuncOp func) {
  ModelSummary s;
  s.function = func.getSymName().str();
  for (BlockArgument arg : func.getArguments()) {
    auto type = cast<ShapedType>(arg.getType());
    auto name = func.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  tfm::kNameAttr);
    if (!name || name.getValue() == "input_ids") {
      std::string text;
      llvm::raw_string_ostream os(text);
      os << (name ? name.getValue() : "%arg" + std::to_string(arg.getArgNumber()))
         << " " << type;
      s.inputs.push_back(text);
      continue;
    }
    ++s.weightTensors;
    s.parameters += type.getNumElements();
    s.weightBytes += type.getNumElements() *
                     ((type.getElementTypeBitWidth() + 7) / 8);
  }
  llvm::append_range(s.results, func.getResultTypes());
  func.walk([&](Operation *op) {
    if (!isa<tfm::TfmDialect>(op->getDialect()) ||
        op->hasTrait<OpTrait::IsTerminator>())
      return;
    ++s.opCounts[op->getName().getStringRef().str()];
    if (isa<tfm::LayerOp>(op))
      ++s.layers;
    s.flops += opFlops(op);
  });
  return s;
}

void ModelSummary::print(llvm::raw_ostream &os) const {
  os << "model @" << function << "\n";
  os << "  layers:  " << layers << "\n";
  os << "  inputs:  ";
  llvm::interleaveComma(inputs, os);
  os << "\n  weights: " << weightTensors << " tensors, " << parameters
     << " parameters (" << llvm::format("%.1f", weightBytes / 1e6) << " MB)\n";
  os << "  results: ";
  llvm::interleaveComma(results, os);
  os << "\n  dense matmul + attention FLOPs per call: "
     << llvm::format("%.4g", flops / 1e9) << " GFLOP\n";
  os << "  ops:     ";
  llvm::interleaveComma(opCounts, os, [&](const auto &entry) {
    os << entry.first << " " << entry.second;
  });
  os << "\n";
}

namespace {

struct PrintModelSummaryPass
    : public pmlir::impl::PrintModelSummaryBase<PrintModelSummaryPass> {
  void runOnOperation() override {
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
