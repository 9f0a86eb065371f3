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

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace pmlir::sharding {

using tfm::MeshAttr;
using tfm::ShardingAttr;
using tfm::ShardingRule;

using Axes = llvm::SmallVector<llvm::StringRef>;

/// A sharding as the engine works on it: per dimension the mesh axes that
/// split it (major first) and the axes of a pending sum.
struct Sharding {
  llvm::SmallVector<Axes> dims;
  Axes pending;

  static Sharding of(ShardingAttr attr);
  ShardingAttr toAttr(mlir::MLIRContext *context, bool withPending = true) const;
  bool operator==(const Sharding &other) const {
    return dims == other.dims && pending == other.pending;
  }
  bool operator!=(const Sharding &other) const { return !(*this == other); }
};

/// The bytes of the ranked tensor `v` (at least one per element).
inline int64_t tensorBytes(mlir::Value v) {
  auto type = mlir::cast<mlir::RankedTensorType>(v.getType());
  return type.getNumElements() * std::max<int64_t>(1, type.getElementTypeBitWidth() / 8);
}

/// The number of devices `axes` span on `mesh`.
int64_t devicesOf(MeshAttr mesh, llvm::ArrayRef<llvm::StringRef> axes);

/// Shards of uneven splits are padded (pmlir/Support/Layout.h).
using pmlir::shardSize;

/// Factor projection: gives each factor of a dimension (`factors`, major
/// first) the axes of `dimAxes` that split it: major factors first, each
/// taking axes while they divide what remains of it, and the major part (a
/// sub-axis) of an axis that what remains divides (2 kv heads on a tp of 4
/// take "tp:(1)2", the query group "tp:(2)2"). Axes past a factor they do
/// not split fully are not contiguous blocks of the next factor and are
/// left out. The last factor, if minor everywhere, takes the axes that
/// remain as an uneven (padded) split while they do not outnumber its
/// elements.
void factorAxes(llvm::ArrayRef<int64_t> factors, llvm::ArrayRef<llvm::StringRef> dimAxes,
                const ShardingRule &rule, MeshAttr mesh, llvm::SmallVectorImpl<Axes> &perFactor);

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_SHARDING_H
