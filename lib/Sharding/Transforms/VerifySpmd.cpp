//===- VerifySpmd.cpp - Proof that every rank's collectives match ---------===//
//
// Part of pmlir.
//
// A thin pass over pmlir::sharding::verifySpmd: it finds the mesh, the
// grid and the program of each rank (a pipelined function lowered, on a
// copy, once per pipeline rank, as pmlir-pipeline-lower makes it).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Pipelining/Pipelining.h"
#include "pmlir/Sharding/Grid.h"
#include "pmlir/Sharding/SpmdCheck.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"

namespace pmlir {
#define GEN_PASS_DEF_VERIFYSPMD
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;

namespace {

struct VerifySpmdPass : public pmlir::impl::VerifySpmdBase<VerifySpmdPass> {
  using VerifySpmdBase::VerifySpmdBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto gridOp = module.lookupSymbol<shard::GridOp>(kGridName);
    if (!gridOp)
      return markAllAnalysesPreserved(); // not partitioned: one program, no collectives
    if (ShapedType::isDynamicShape(gridOp.getShape())) {
      gridOp.emitError("pmlir-verify-spmd: the grid needs a static shape");
      return signalPassFailure();
    }
    std::string error;
    std::optional<Mesh> mesh = meshOf(module, gridOp, error);
    if (!mesh) {
      module.emitError("pmlir-verify-spmd: ") << error;
      return signalPassFailure();
    }
    if (mesh->numRanks() > sharding::kMaxCheckedRanks) {
      module.emitWarning("pmlir-verify-spmd: the mesh has ")
          << mesh->numRanks() << " ranks, more than the " << sharding::kMaxCheckedRanks
          << " the check traces: the ranks' collectives are not proven to match";
      return markAllAnalysesPreserved();
    }
    auto meshAttr = tfm::MeshAttr::get(&getContext(), *mesh);
    FailureOr<sharding::Grid> grid = sharding::Grid::declaredBy(gridOp, meshAttr);
    if (failed(grid))
      return signalPassFailure();

    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.isPublic())
        continue;
      bool pipelined = false;
      func.walk([&](pipe::FragmentOp) {
        pipelined = true;
        return WalkResult::interrupt();
      });
      if (!pipelined) {
        if (failed(sharding::verifySpmd(*grid, *mesh, {func}, [](int64_t) { return size_t(0); })))
          return signalPassFailure();
        continue;
      }
      // Each pipeline rank's program, as pmlir-pipeline-lower makes it.
      int ppAxis = mesh->axisIndex(axis);
      if (ppAxis < 0) {
        func.emitError("pmlir-verify-spmd: @")
            << func.getSymName() << " is cut into pipeline stages, and the mesh has no axis '"
            << axis << "'";
        return signalPassFailure();
      }
      std::vector<OwningOpRef<ModuleOp>> copies;
      SmallVector<func::FuncOp> programs;
      for (int64_t p = 0; p < mesh->axisSizes()[ppAxis]; ++p) {
        copies.push_back(module.clone());
        auto copy = copies.back()->lookupSymbol<func::FuncOp>(func.getSymName());
        if (failed(pipeline::lowerToPipelineRank(copy, p, axis)))
          return signalPassFailure();
        programs.push_back(copy);
      }
      if (failed(sharding::verifySpmd(*grid, *mesh, programs, [&](int64_t rank) {
            return static_cast<size_t>(mesh->coordinates(rank)[ppAxis]);
          })))
        return signalPassFailure();
    }
    markAllAnalysesPreserved();
  }

  /// The module's tfm.mesh, or a mesh of the grid's axes (named axis0,
  /// axis1, ..., the last varying fastest, as process_linear_index counts)
  /// where it has none.
  static std::optional<Mesh> meshOf(ModuleOp module, shard::GridOp gridOp, std::string &error) {
    if (auto attr = module->getAttrOfType<tfm::MeshAttr>(tfm::kMeshAttr))
      return attr.toMesh(error);
    std::vector<std::string> names, order;
    std::vector<int64_t> sizes(gridOp.getShape().begin(), gridOp.getShape().end());
    for (size_t a = 0; a < sizes.size(); ++a)
      names.push_back("axis" + std::to_string(a));
    order.assign(names.rbegin(), names.rend());
    return Mesh::create(names, sizes, order, error);
  }
};

} // namespace
