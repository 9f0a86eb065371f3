//===- StepMetrics.cpp - What a program reports of itself after a step ----===//
//
// Part of pmlir.
//
// A program's tfm.step_metric ops hand the runtime values it adds up over a
// step (pmlir_rt_step_metric): how many tokens each expert of a sparse
// layer got, and how many it dropped past its capacity. Each op's value is
// whole on every rank that runs it (its sharding rule), and the ranks that
// do not run it (another pipeline stage's layers) hold nothing of it, so a
// maximum over every rank gives each metric to rank 0, which prints it.
//
//===----------------------------------------------------------------------===//

#include "Job.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Runtime/RuntimeAbi.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <limits>

using namespace mlir;

namespace pmlir::exec {

std::string Job::findStepMetrics(ModuleOp module) {
  stepMetrics.clear();
  std::string error;
  module.walk([&](tfm::StepMetricOp op) {
    std::optional<int> kind = rt::abi::stepMetricCode(tfm::stringifyStepMetricKind(op.getKind()));
    if (!kind)
      return WalkResult::advance();
    int64_t index = static_cast<int64_t>(op.getIndex());
    int64_t size = op.getValue().getType().getDimSize(0);
    // An empty value has nothing to report.
    if (size == 0)
      return WalkResult::advance();
    // A metric the forward and the training step both hold is one.
    auto same = llvm::find_if(
        stepMetrics, [&](const StepMetric &m) { return m.kind == *kind && m.index == index; });
    if (same == stepMetrics.end()) {
      stepMetrics.push_back({*kind, index, size});
    } else if (same->size != size) {
      error = (llvm::Twine("tfm.step_metric ") + tfm::stringifyStepMetricKind(op.getKind()) +
               " index " + llvm::Twine(index) + " reports " + llvm::Twine(size) +
               " values in one place and " + llvm::Twine(same->size) +
               " in another: each index is one metric of one size")
                  .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (!error.empty())
    return error;
  llvm::sort(stepMetrics, [](const StepMetric &a, const StepMetric &b) {
    return std::make_pair(a.kind, a.index) < std::make_pair(b.kind, b.index);
  });
  return "";
}

std::string Job::stepMetricsReport() const {
  if (stepMetrics.empty())
    return "";
  std::vector<int64_t> table;
  for (const StepMetric &m : stepMetrics) {
    size_t at = table.size();
    table.resize(at + static_cast<size_t>(m.size), 0);
    pmlir_rt_step_metric_values(m.kind, m.index, table.data() + at, m.size);
  }
  if (mesh) {
    std::vector<int64_t> axes = allAxes(), whole(table.size());
    pmlir_rt_all_reduce(table.data(), whole.data(), static_cast<int64_t>(table.size()),
                        PMLIR_RT_I64, PMLIR_RT_MAX, axes.data(), static_cast<int64_t>(axes.size()));
    table = std::move(whole);
  }
  if (rank != 0)
    return "";

  // Expert tokens: the fewest and the most any expert of any layer got,
  // the layers where they were, and the mean (every layer routes the same
  // tokens). Dropped tokens: their sum against the routed, and the layer
  // that dropped the most. --verbose lists each layer's.
  std::string text, perLayer;
  llvm::raw_string_ostream os(text), layerOs(perLayer);
  int64_t layers = 0, slots = 0, routed = 0, dropped = 0;
  int64_t fewest = std::numeric_limits<int64_t>::max(), most = -1, fewestAt = 0, mostAt = 0;
  int64_t worstDrop = -1, worstDropAt = 0;
  bool capacity = false;
  size_t at = 0;
  for (const StepMetric &m : stepMetrics) {
    llvm::ArrayRef<int64_t> values(table.data() + at, static_cast<size_t>(m.size));
    at += static_cast<size_t>(m.size);
    if (m.kind == PMLIR_RT_STEP_METRIC_EXPERT_TOKENS) {
      ++layers;
      slots += m.size;
      for (int64_t v : values) {
        routed += v;
        if (v < fewest)
          fewest = v, fewestAt = m.index;
        if (v > most)
          most = v, mostAt = m.index;
      }
      layerOs << "  layer " << m.index << ": tokens per expert";
    } else if (m.kind == PMLIR_RT_STEP_METRIC_DROPPED_TOKENS) {
      capacity = true;
      int64_t sum = 0;
      for (int64_t v : values)
        sum += v;
      dropped += sum;
      if (sum > worstDrop)
        worstDrop = sum, worstDropAt = m.index;
      layerOs << "  layer " << m.index << ": dropped per expert";
    } else {
      continue;
    }
    for (int64_t v : values)
      layerOs << " " << v;
    layerOs << "\n";
  }
  if (layers > 0)
    os << llvm::format("  tokens per expert: min %lld (layer %lld), max %lld (layer %lld), mean "
                       "%.1f over %lld sparse layers\n",
                       static_cast<long long>(fewest), static_cast<long long>(fewestAt),
                       static_cast<long long>(most), static_cast<long long>(mostAt),
                       static_cast<double>(routed) / static_cast<double>(slots),
                       static_cast<long long>(layers));
  if (capacity)
    os << llvm::format(
        "  dropped past capacity: %lld of %lld (%.2f%%), the most in layer %lld "
        "(%lld)\n",
        static_cast<long long>(dropped), static_cast<long long>(routed),
        routed > 0 ? 100.0 * static_cast<double>(dropped) / static_cast<double>(routed) : 0.0,
        static_cast<long long>(worstDropAt), static_cast<long long>(worstDrop));
  if (o.verbose)
    os << perLayer;
  return text;
}

} // namespace pmlir::exec
