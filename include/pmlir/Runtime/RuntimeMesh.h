//===- RuntimeMesh.h - A Mesh as pmlir_rt_init takes it ---------*- C++ -*-===//
//
// Part of pmlir.
//
// pmlir_rt_init receives the mesh as a structure of axes, sizes and rank
// order, not as text to parse again: this view of a pmlir::Mesh is it, valid
// while the view lives.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_RUNTIME_RUNTIMEMESH_H
#define PMLIR_RUNTIME_RUNTIMEMESH_H

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Support/Mesh.h"

#include <vector>

namespace pmlir::rt {

class RuntimeMesh {
public:
  explicit RuntimeMesh(const Mesh &mesh)
      : sizes(mesh.axisSizes()), order(mesh.rankOrder().begin(), mesh.rankOrder().end()) {
    for (const std::string &name : mesh.axisNames())
      names.push_back(name.c_str());
    view = {static_cast<int>(names.size()), names.data(), sizes.data(), order.data()};
  }
  RuntimeMesh(const RuntimeMesh &) = delete;
  RuntimeMesh &operator=(const RuntimeMesh &) = delete;

  const pmlir_rt_mesh *get() const { return &view; }

private:
  std::vector<const char *> names; // into the Mesh's names
  std::vector<int64_t> sizes;
  std::vector<int> order;
  pmlir_rt_mesh view;
};

} // namespace pmlir::rt

#endif // PMLIR_RUNTIME_RUNTIMEMESH_H
