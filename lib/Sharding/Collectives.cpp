//===- Collectives.cpp - The collectives of a partitioned program ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Collectives.h"

#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Sharding/Grid.h"
#include "pmlir/Sharding/Sharding.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::sharding;

std::string Collective::axesKey() const {
  std::string key;
  for (const std::string &a : axes)
    key += (key.empty() ? "" : ",") + a;
  return key;
}

namespace {

/// The kind, the grid axes and the bytes of a collective, or std::nullopt
/// for a shard op that is not one.
using KindAxesBytes = std::tuple<CollectiveKind, ArrayRef<int16_t>, int64_t>;
std::optional<KindAxesBytes> kindAxesBytesOf(Operation *op) {
  return llvm::TypeSwitch<Operation *, std::optional<KindAxesBytes>>(op)
      .Case([](shard::AllReduceOp c) {
        return std::make_tuple(CollectiveKind::AllReduce, c.getGridAxes(),
                               tensorBytes(c.getInput()));
      })
      .Case([](shard::AllGatherOp c) {
        return std::make_tuple(CollectiveKind::AllGather, c.getGridAxes(),
                               tensorBytes(c.getResult()));
      })
      .Case([](shard::ReduceScatterOp c) {
        return std::make_tuple(CollectiveKind::ReduceScatter, c.getGridAxes(),
                               tensorBytes(c.getInput()));
      })
      .Case([](shard::AllToAllOp c) {
        return std::make_tuple(CollectiveKind::AllToAll, c.getGridAxes(),
                               tensorBytes(c.getInput()));
      })
      .Case([](shard::AllSliceOp c) {
        return std::make_tuple(CollectiveKind::AllSlice, c.getGridAxes(), int64_t(0));
      })
      .Case([](shard::BroadcastOp c) {
        return std::make_tuple(CollectiveKind::Broadcast, c.getGridAxes(),
                               tensorBytes(c.getInput()));
      })
      .Case([](shard::SendOp c) {
        return std::make_tuple(CollectiveKind::Send, c.getGridAxes(), tensorBytes(c.getInput()));
      })
      .Case([](shard::RecvOp c) {
        return std::make_tuple(CollectiveKind::Recv, c.getGridAxes(), tensorBytes(c.getResult()));
      })
      // Expert parallelism's exchanges send as many rows as the tokens
      // choose other devices' experts: counted as all-to-alls of this
      // device's rows, the volume of balanced routing.
      .Case([](tfm::MoeAllToAllOp c) {
        return std::make_tuple(CollectiveKind::AllToAll, c.getGridAxes(), tensorBytes(c.getRows()));
      })
      .Case([](tfm::MoeAllToAllBackOp c) {
        return std::make_tuple(CollectiveKind::AllToAll, c.getGridAxes(),
                               tensorBytes(c.getResult()));
      })
      .Default([](Operation *) { return std::nullopt; });
}

} // namespace

FailureOr<std::vector<Collective>> pmlir::sharding::collectivesOf(ModuleOp module,
                                                                  const CostModel &model) {
  auto mesh = module->getAttrOfType<tfm::MeshAttr>(tfm::kMeshAttr);
  // Grid axes by the mesh axes or sub-axes they are (pmlir/Sharding/Grid.h),
  // adjacent parts of one axis read as their union.
  std::optional<Grid> grid;
  if (auto gridOp = module.lookupSymbol<shard::GridOp>(kGridName); gridOp && mesh) {
    FailureOr<Grid> declared = Grid::declaredBy(gridOp, mesh);
    if (failed(declared))
      return failure();
    grid = *declared;
  }
  std::vector<Collective> out;
  module.walk([&](Operation *op) {
    std::optional<KindAxesBytes> found = kindAxesBytesOf(op);
    if (!found)
      return;
    auto [kind, gridAxes, bytes] = *found;
    Collective c{op, kind, {}, 1, bytes, {}};
    SmallVector<StringRef> parts;
    for (int16_t a : gridAxes) {
      if (grid && a < static_cast<int16_t>(grid->parts().size())) {
        const SubAxis &part = grid->parts()[a];
        parts.push_back(mesh.subAxisName(part.index, part.pre, part.size));
      } else {
        c.axes.push_back("axis" + std::to_string(a));
      }
    }
    for (StringRef name : mesh ? mesh.mergeSubAxes(parts) : parts)
      c.axes.push_back(name.str());
    // The ranks of its group: the product of its grid axes.
    auto gridOp = SymbolTable::lookupNearestSymbolFrom<shard::GridOp>(
        op, op->getAttrOfType<FlatSymbolRefAttr>("grid"));
    for (int16_t a : gridAxes)
      if (gridOp && a < gridOp.getRank())
        c.groupSize *= gridOp.getShape()[a];
    SmallVector<StringRef> names(c.axes.begin(), c.axes.end());
    c.cost = model.cost(kind, bytes, names, c.groupSize);
    out.push_back(std::move(c));
  });
  return out;
}

std::map<std::string, CollectiveTotal>
pmlir::sharding::totalsPerAxes(const std::vector<Collective> &collectives) {
  std::map<std::string, CollectiveTotal> totals;
  for (const Collective &c : collectives)
    if (c.kind != CollectiveKind::AllSlice)
      totals[c.axesKey()].add(c);
  return totals;
}
