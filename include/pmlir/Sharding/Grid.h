//===- Grid.h - The grid a partitioned program runs on ----------*- C++ -*-===//
//
// Part of pmlir.
//
// A partitioned program's collectives run on the `shard` grid `kGridName`:
// the mesh with each axis cut into the parts (sub-axes) that the program
// names (pmlir::cutAxes), so that a collective over "tp:(2)2" is one over
// grid axes and the runtime makes its group. A program that names whole
// axes only runs on the mesh itself, grid axis i being mesh axis i. A grid
// of parts lists them in its `tfm.grid_axes`, where the lowering to the
// runtime and pmlir-run read them.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SHARDING_GRID_H
#define PMLIR_SHARDING_GRID_H

#include "pmlir/Sharding/Sharding.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>
#include <vector>

namespace pmlir::sharding {

/// The attribute of a `shard.grid` whose axes are parts of the mesh's: the
/// name of each grid axis, a mesh axis or a sub-axis.
inline constexpr llvm::StringLiteral kGridAxesAttr = "tfm.grid_axes";

/// The discardable attribute that gives a shard.send and its shard.recv
/// the tag their message carries (pmlir-pipeline-lower numbers its
/// transfers so); untagged messages carry tag 0 and match in program
/// order.
inline constexpr llvm::StringLiteral kMessageTagAttr = "pipe.tag";

class Grid {
public:
  /// The mesh's own axes.
  explicit Grid(MeshAttr mesh);

  /// `mesh` cut at the ends of every part that `names` (axis or sub-axis
  /// names of `mesh`) name; nullopt, with `error` set, where two of them
  /// end inside each other.
  static std::optional<Grid> cut(MeshAttr mesh, llvm::ArrayRef<std::string> names,
                                 std::string &error);
  /// The sub-axes that the shardings (#tfm.sharding) anywhere in `module`
  /// name, each once.
  static std::vector<std::string> subAxesNamedIn(mlir::ModuleOp module, MeshAttr mesh);
  /// The grid `op` declares on `mesh`: its tfm.grid_axes, or the mesh's
  /// axes where it has none. Fails, with an error on `op`, where the two
  /// disagree.
  static mlir::FailureOr<Grid> declaredBy(mlir::shard::GridOp op, MeshAttr mesh);

  /// Declares this grid as `kGridName` at the builder's insertion point.
  mlir::shard::GridOp declare(mlir::OpBuilder &b, mlir::Location loc) const;

  MeshAttr getMesh() const { return mesh; }
  /// The grid's axes: parts of the mesh's axes (a whole axis is one part).
  const std::vector<pmlir::SubAxis> &parts() const { return cutParts; }
  /// Whether the grid's axes are the mesh's.
  bool isMesh() const;

  /// The grid axes that make up `axes` (axis or sub-axis names of the
  /// mesh, major first), in order. A part the grid does not cut at its
  /// ends is noted in uncut() and stands as the grid axes it overlaps, so
  /// that a caller can emit on, then cut anew and start over.
  llvm::SmallVector<int16_t> axesOf(llvm::ArrayRef<llvm::StringRef> axes);
  /// The parts that axesOf() was asked for and this grid does not hold.
  const std::vector<std::string> &uncut() const { return missing; }

private:
  MeshAttr mesh;
  std::vector<pmlir::SubAxis> cutParts;
  std::vector<std::string> missing;
};

} // namespace pmlir::sharding

#endif // PMLIR_SHARDING_GRID_H
