//===- Sharding.h - A sharding as the engine works on it --------*- C++ -*-===//
//
// Part of pmlir.
//
// The engine's view of a value's sharding (per dimension the mesh axes that
// split it, major first, and the axes of a pending sum) and the projection
// of a dimension's axes onto the factors of an op's sharding rule.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_SHARDING_H
#define PMLIR_SHARDING_SHARDING_H

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/Layout.h"
#include "pmlir/Support/TypeBytes.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace pmlir::sharding {

using tfm::MeshAttr;
using tfm::ShardingAttr;
using tfm::ShardingRule;

using Axes = llvm::SmallVector<llvm::StringRef>;

/// A sharding as the engine works on it: per dimension the mesh axes that
/// split it (major first), the axes of a pending sum, and per dimension the
/// equal parts it is made of, each split by its axes (empty: 1 each).
struct Sharding {
  llvm::SmallVector<Axes> dims;
  Axes pending;
  llvm::SmallVector<int64_t> parts;

  static Sharding of(ShardingAttr attr);
  ShardingAttr toAttr(mlir::MLIRContext *context, bool withPending = true) const;
  int64_t partsOf(size_t d) const { return parts.empty() ? 1 : parts[d]; }
  bool hasParts() const {
    return llvm::any_of(parts, [](int64_t p) { return p != 1; });
  }
  /// Sets dimension `d`'s part count, keeping `parts` empty while all are 1.
  void setParts(size_t d, int64_t n) {
    if (n == 1 && parts.empty())
      return;
    parts.resize(dims.size(), 1);
    parts[d] = n;
    if (!hasParts())
      parts.clear();
  }
  bool operator==(const Sharding &other) const {
    return dims == other.dims && pending == other.pending && parts == other.parts;
  }
  bool operator!=(const Sharding &other) const { return !(*this == other); }
};

/// The bytes of the ranked tensor `v` (at least one per element).
inline int64_t tensorBytes(mlir::Value v) {
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  return type.getNumElements() * elementBytes(type.getElementType());
}

/// The number of devices `axes` span on `mesh`.
int64_t devicesOf(MeshAttr mesh, llvm::ArrayRef<llvm::StringRef> axes);

/// Shards of uneven splits are padded (pmlir/Support/Layout.h).
using pmlir::shardSize;

/// Factor projection: gives each factor of a dimension (`factors`, major
/// first) the axes of `dimAxes` that split it. A dimension of `parts` equal
/// parts leaves its major factors whose sizes multiply to `parts` unsplit
/// and projects its axes on the rest (none where no such factors lead it).
/// Major factors first, each
/// taking axes while they divide what remains of it, and the major part (a
/// sub-axis) of an axis that what remains divides (2 kv heads on a tp of 4
/// take "tp:(1)2", the query group "tp:(2)2"). Axes past a factor they do
/// not split fully are not contiguous blocks of the next factor and are
/// left out. The last factor, if minor everywhere, takes the axes that
/// remain as an uneven (padded) split while they do not outnumber its
/// elements.
void factorAxes(llvm::ArrayRef<int64_t> factors, llvm::ArrayRef<llvm::StringRef> dimAxes,
                const ShardingRule &rule, MeshAttr mesh, llvm::SmallVectorImpl<Axes> &perFactor,
                int64_t parts = 1);

/// The inverse: the axes and part count of a dimension made of `factors`
/// whose axes are `perFactor`. Its blocks must be contiguous in each part:
/// unsplit major factors make parts, and after the first split factor a
/// factor's axes count only below factors split all the way (GPT-2's fused
/// QKV dimension, parts major and heads split: 3 parts over tp).
std::pair<Axes, int64_t> dimAxes(llvm::ArrayRef<int64_t> factors, llvm::ArrayRef<Axes> perFactor,
                                 const ShardingRule &rule, MeshAttr mesh);

/// `rule` where a tensor of its op makes a dimension that is one factor
/// alone of parts (`shardings`: per operand, then per result, the known
/// sharding or null): that factor split into the parts (a major factor,
/// unsplit) and the rest, wherever it appears. So an op that reads a parted
/// tensor elementwise (an optimizer's update of GPT-2's fused QKV weight)
/// keeps its parts instead of resharding it.
ShardingRule refineForParts(const ShardingRule &rule, llvm::ArrayRef<const Sharding *> shardings);

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_SHARDING_H
