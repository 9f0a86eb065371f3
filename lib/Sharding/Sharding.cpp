//===- Sharding.cpp - A sharding as the engine works on it ---------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Sharding.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace pmlir::sharding;

Sharding Sharding::of(ShardingAttr attr) {
  Sharding s;
  for (int64_t d = 0; d < attr.getRank(); ++d)
    s.dims.push_back(attr.axesOf(d));
  s.pending = attr.pendingAxes();
  s.parts.assign(attr.getParts().begin(), attr.getParts().end());
  return s;
}

ShardingAttr Sharding::toAttr(MLIRContext *context, bool withPending) const {
  return ShardingAttr::get(context, dims, withPending ? ArrayRef(pending) : ArrayRef<StringRef>{},
                           /*open=*/{}, /*priority=*/0, parts);
}

int64_t pmlir::sharding::devicesOf(MeshAttr mesh, ArrayRef<StringRef> axes) {
  int64_t n = 1;
  for (StringRef a : axes)
    n *= mesh.axisSize(a);
  return n;
}

void pmlir::sharding::factorAxes(ArrayRef<int64_t> factors, ArrayRef<StringRef> dimAxes,
                                 const ShardingRule &rule, MeshAttr mesh,
                                 SmallVectorImpl<Axes> &perFactor, int64_t parts) {
  // The parts are the major factors, unsplit.
  if (parts > 1) {
    int64_t product = 1;
    while (product < parts && !factors.empty()) {
      product *= rule.factors[factors.front()].size;
      factors = factors.drop_front();
    }
    if (product != parts)
      return;
  }
  // An axis larger than what remains of a factor that divides it splits:
  // the factor takes its major part, the next factor sees the rest.
  SmallVector<StringRef> queue(dimAxes);
  size_t next = 0;
  for (auto [i, f] : llvm::enumerate(factors)) {
    int64_t remaining = rule.factors[f].size;
    while (next < queue.size()) {
      int64_t n = mesh.axisSize(queue[next]);
      if (remaining % n == 0) {
        remaining /= n;
        perFactor[f].push_back(queue[next++]);
        continue;
      }
      std::optional<MeshAttr::SubAxis> sub = mesh.subAxis(queue[next]);
      if (sub && remaining > 1 && n % remaining == 0) {
        perFactor[f].push_back(mesh.subAxisName(sub->index, sub->pre, remaining));
        queue[next] = mesh.subAxisName(sub->index, sub->pre * remaining, n / remaining);
        remaining = 1;
      }
      break;
    }
    if (remaining != 1 && i + 1 == factors.size() && rule.isMinorEverywhere(f)) {
      int64_t devices = devicesOf(mesh, perFactor[f]);
      while (next < queue.size() && devices * mesh.axisSize(queue[next]) <= rule.factors[f].size) {
        devices *= mesh.axisSize(queue[next]);
        perFactor[f].push_back(queue[next++]);
      }
    }
    if (remaining != 1)
      break;
  }
}

std::pair<Axes, int64_t> pmlir::sharding::dimAxes(ArrayRef<int64_t> factors,
                                                  ArrayRef<Axes> perFactor,
                                                  const ShardingRule &rule, MeshAttr mesh) {
  int64_t parts = 1;
  size_t i = 0;
  while (i < factors.size() && perFactor[factors[i]].empty())
    parts *= rule.factors[factors[i++]].size;
  if (i == factors.size())
    return {{}, 1};
  Axes axes;
  for (; i < factors.size(); ++i) {
    int64_t f = factors[i];
    llvm::append_range(axes, perFactor[f]);
    if (devicesOf(mesh, perFactor[f]) != rule.factors[f].size)
      break;
  }
  return {mesh.mergeSubAxes(axes), parts};
}

ShardingRule pmlir::sharding::refineForParts(const ShardingRule &rule,
                                             ArrayRef<const Sharding *> shardings) {
  ShardingRule refined = rule;
  SmallVector<ArrayRef<SmallVector<int64_t>>> tensors;
  for (const auto &dims : rule.operands)
    tensors.push_back(dims ? ArrayRef<SmallVector<int64_t>>(*dims)
                           : ArrayRef<SmallVector<int64_t>>());
  for (const auto &dims : rule.results)
    tensors.push_back(dims);
  // A factor some tensor splits as a whole dimension without parts stays
  // one: the tensors disagree, and partition reshards one of them.
  auto splitWhole = [&](int64_t f) {
    for (auto [dims, sharding] : llvm::zip(tensors, shardings))
      for (auto [d, factors] : llvm::enumerate(dims))
        if (sharding && d < sharding->dims.size() && factors.size() == 1 && factors.front() == f &&
            sharding->partsOf(d) == 1 && !sharding->dims[d].empty())
          return true;
    return false;
  };
  for (auto [dims, sharding] : llvm::zip(tensors, shardings)) {
    if (!sharding)
      continue;
    for (auto [d, factors] : llvm::enumerate(dims)) {
      int64_t parts = sharding->partsOf(d);
      if (parts == 1 || factors.size() != 1 || d >= sharding->dims.size() ||
          splitWhole(factors.front()))
        continue;
      int64_t f = factors.front();
      // Split once: the first tensor to name the parts decides them.
      if (refined.factors[f].size != rule.factors[f].size || refined.factors[f].size % parts != 0 ||
          refined.factors[f].size == parts)
        continue;
      refined.factors[f].size /= parts;
      int64_t major = refined.factors.size();
      refined.factors.push_back({parts, pmlir::tfm::FactorKind::Replicated});
      auto splitIn = [&](SmallVector<SmallVector<int64_t>> &dimsOf) {
        for (SmallVector<int64_t> &fs : dimsOf)
          if (auto it = llvm::find(fs, f); it != fs.end())
            fs.insert(it, major);
      };
      for (auto &operand : refined.operands)
        if (operand)
          splitIn(*operand);
      for (auto &result : refined.results)
        splitIn(result);
    }
  }
  return refined;
}
