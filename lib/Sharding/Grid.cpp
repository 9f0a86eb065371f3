//===- Grid.cpp - The grid a partitioned program runs on ------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Grid.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace pmlir::sharding;
using pmlir::SubAxis;

namespace {

std::vector<std::string> axisNames(MeshAttr mesh) {
  std::vector<std::string> names;
  for (StringAttr name : mesh.getAxes())
    names.push_back(name.str());
  return names;
}

} // namespace

Grid::Grid(MeshAttr mesh) : mesh(mesh) {
  for (auto [i, size] : llvm::enumerate(mesh.getSizes()))
    cutParts.push_back({int64_t(i), 1, size});
}

std::optional<Grid> Grid::cut(MeshAttr mesh, ArrayRef<std::string> names, std::string &error) {
  std::vector<SubAxis> named;
  for (const std::string &name : names) {
    std::optional<SubAxis> part = mesh.subAxis(name);
    if (!part) {
      error = "'" + name + "' names no axis or sub-axis of the mesh";
      return std::nullopt;
    }
    named.push_back(*part);
  }
  std::optional<std::vector<SubAxis>> parts =
      pmlir::cutAxes(axisNames(mesh), std::vector<int64_t>(mesh.getSizes()), named, error);
  if (!parts)
    return std::nullopt;
  Grid grid(mesh);
  grid.cutParts = std::move(*parts);
  return grid;
}

std::vector<std::string> Grid::subAxesNamedIn(ModuleOp module, MeshAttr mesh) {
  std::vector<std::string> names;
  auto note = [&](StringRef name) {
    if (mesh.axisIndex(name) < 0 && mesh.subAxis(name) && !llvm::is_contained(names, name))
      names.push_back(name.str());
  };
  module.walk([&](Operation *op) {
    op->getAttrDictionary().walk([&](ShardingAttr sharding) {
      for (int64_t d = 0; d < sharding.getRank(); ++d)
        for (StringRef a : sharding.axesOf(d))
          note(a);
      for (StringRef a : sharding.pendingAxes())
        note(a);
    });
  });
  return names;
}

FailureOr<Grid> Grid::declaredBy(shard::GridOp op, MeshAttr mesh) {
  auto names = op->getAttrOfType<ArrayAttr>(kGridAxesAttr);
  Grid grid(mesh);
  if (names) {
    grid.cutParts.clear();
    for (Attribute name : names) {
      auto text = dyn_cast<StringAttr>(name);
      std::optional<SubAxis> part = text ? mesh.subAxis(text.getValue()) : std::nullopt;
      if (!part)
        return op.emitOpError() << "has " << kGridAxesAttr << " entry " << name
                                << ", which names no axis or sub-axis of " << mesh;
      grid.cutParts.push_back(*part);
    }
    std::vector<SubAxis> named = grid.cutParts;
    std::string error;
    std::optional<std::vector<SubAxis>> tiled =
        pmlir::cutAxes(axisNames(mesh), std::vector<int64_t>(mesh.getSizes()), named, error);
    if (!tiled || *tiled != grid.cutParts)
      return op.emitOpError() << "has " << kGridAxesAttr << " " << names
                              << ", which are not the axes of " << mesh
                              << " cut into parts, major parts first";
  }
  SmallVector<int64_t> sizes;
  for (const SubAxis &part : grid.cutParts)
    sizes.push_back(part.size);
  if (ArrayRef<int64_t>(sizes) != op.getShape())
    return op.emitOpError() << "has the shape of neither " << mesh << " nor its " << kGridAxesAttr;
  return grid;
}

shard::GridOp Grid::declare(OpBuilder &b, Location loc) const {
  SmallVector<int64_t> sizes;
  SmallVector<Attribute> names;
  for (const SubAxis &part : cutParts) {
    sizes.push_back(part.size);
    names.push_back(b.getStringAttr(mesh.subAxisName(part.index, part.pre, part.size)));
  }
  auto op = shard::GridOp::create(b, loc, pmlir::kGridName, sizes);
  if (!isMesh())
    op->setAttr(kGridAxesAttr, b.getArrayAttr(names));
  return op;
}

bool Grid::isMesh() const {
  return cutParts.size() == mesh.getSizes().size() &&
         llvm::all_of(cutParts, [&](const SubAxis &part) {
           return part.pre == 1 && part.size == mesh.getSizes()[part.index];
         });
}

SmallVector<int16_t> Grid::axesOf(ArrayRef<StringRef> axes) {
  SmallVector<int16_t> out;
  for (StringRef name : axes) {
    std::optional<SubAxis> resolved = mesh.subAxis(name);
    if (!resolved) {
      missing.push_back(name.str()); // Grid::cut names it
      continue;
    }
    SubAxis part = *resolved;
    std::vector<int> run = pmlir::partsIn(cutParts, part);
    if (run.empty()) {
      if (!llvm::is_contained(missing, name))
        missing.push_back(name.str());
      for (auto [i, cut] : llvm::enumerate(cutParts))
        if (cut.overlaps(part))
          run.push_back(int(i));
    }
    for (int i : run)
      out.push_back(static_cast<int16_t>(i));
  }
  return out;
}
