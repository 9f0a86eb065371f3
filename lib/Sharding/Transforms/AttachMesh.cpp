//===- AttachMesh.cpp - The mesh a global program is sharded over ---------===//
//
// Part of pmlir.
//
// The one place mesh text becomes the module's tfm.mesh: the compile
// pipeline, pmlir-run and the tests attach a mesh through this pass.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Support/Mesh.h"

namespace pmlir {
#define GEN_PASS_DEF_ATTACHMESH
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;

namespace {

struct AttachMeshPass : public pmlir::impl::AttachMeshBase<AttachMeshPass> {
  using AttachMeshBase::AttachMeshBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::string error;
    std::optional<pmlir::Mesh> parsed = pmlir::Mesh::parse(mesh, rankOrder, error);
    if (!parsed) {
      module.emitError() << "pmlir-attach-mesh: " << error;
      return signalPassFailure();
    }
    MeshAttr attr = MeshAttr::get(&getContext(), *parsed);
    if (auto have = module->getAttrOfType<MeshAttr>(kMeshAttr); have && have != attr) {
      module.emitError() << "the module's tfm.mesh " << have << " is not the mesh " << attr
                         << " to attach";
      return signalPassFailure();
    }
    module->setAttr(kMeshAttr, attr);
  }
};

} // namespace
