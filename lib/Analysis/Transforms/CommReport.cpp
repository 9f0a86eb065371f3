//===- CommReport.cpp - The collectives of a partitioned program, as JSON -===//
//
// Part of pmlir.
//
// Each collective's bytes_per_rank is the size of the largest buffer it
// moves on one rank: the tensor of an all_reduce, the gathered result of an
// all_gather, the input of a reduce_scatter or all_to_all, the tensor of a
// broadcast, send or recv. all_slice moves nothing (0 bytes). These are the
// volumes Megatron's analysis counts (a TP all-reduce of b·s·h elements),
// as pmlir/Sharding/Collectives.h counts them for the planner too.
// Each also gets wire_bytes_per_rank, what one rank sends in the ring
// algorithms (NCCL's bus bytes): 2(n-1)/n of an all_reduce's tensor,
// (n-1)/n of an all_gather's, reduce_scatter's or all_to_all's buffer, the
// tensor of a broadcast or send, for a group of n ranks. In wire bytes a
// reduce_scatter and an all_gather together cost what an all_reduce costs.
// And `seconds`, the modeled time of the ring on the links given per axis.
// Bytes and time come from the cost model the reshard planner uses
// (pmlir/Sharding/CostModel.h). Expert parallelism's exchanges
// (tfm.moe_all_to_all and back) count as all_to_alls of a rank's routed
// rows: what it sends when the router spreads its tokens evenly over the
// experts; the rows it really sends are data (the runtime's trace has
// them).
//
//===----------------------------------------------------------------------===//

#include "pmlir/Analysis/Transforms/Passes.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "pmlir/Analysis/JsonReport.h"
#include "pmlir/Sharding/Collectives.h"
#include "pmlir/Sharding/CostModel.h"

#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "pmlir-comm-report"

namespace pmlir {
#define GEN_PASS_DEF_COMMREPORT
#include "pmlir/Analysis/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir;
using pmlir::sharding::CollectiveKind;
using pmlir::sharding::CostModel;
using pmlir::sharding::stringifyCollectiveKind;

namespace {

struct CommReportPass : public pmlir::impl::CommReportBase<CommReportPass> {
  using CommReportBase::CommReportBase;

  void runOnOperation() override {
    LLVM_DEBUG(llvm::dbgs() << "writing the comm report to " << output << "\n");
    ModuleOp module = getOperation();
    auto mesh = module->getAttrOfType<pmlir::tfm::MeshAttr>(pmlir::tfm::kMeshAttr);
    std::string error;
    std::optional<CostModel> model = CostModel::parse(links, error);
    if (!model) {
      mlir::emitError(module.getLoc()) << "pmlir-comm-report: " << error;
      return signalPassFailure();
    }
    FailureOr<std::vector<pmlir::sharding::Collective>> collectives =
        pmlir::sharding::collectivesOf(module, *model);
    if (failed(collectives))
      return signalPassFailure();
    using Total = pmlir::sharding::CollectiveTotal;
    Total all;
    std::map<std::string, Total> perKind, perAxes;
    // Wire bytes on tp inside the blocks, per layer index (the forward and
    // the backward layer of a block together).
    std::map<int64_t, int64_t> tpPerLayer;
    bool sequenceParallel = false;
    llvm::json::Array list;
    for (const pmlir::sharding::Collective &c : *collectives) {
      std::string axesKey = c.axesKey();
      llvm::json::Array axesJson;
      for (const std::string &name : c.axes)
        axesJson.push_back(name);
      StringRef kindName = stringifyCollectiveKind(c.kind);
      // The total counts what communicates (an all_slice is a local slice).
      Total none;
      for (Total *t : {&perKind[kindName.str()], &perAxes[axesKey],
                       c.kind == CollectiveKind::AllSlice ? &none : &all})
        t->add(c);
      llvm::json::Object entry{{"kind", kindName},
                               {"axes", std::move(axesJson)},
                               {"bytes_per_rank", c.bytes},
                               {"wire_bytes_per_rank", c.cost.wireBytes},
                               {"seconds", c.cost.seconds}};
      auto type = cast<RankedTensorType>(c.op->getOperand(0).getType());
      entry["shape"] = llvm::json::Array(type.getShape());
      if (auto layer = c.op->getParentOfType<pmlir::tfm::LayerOp>()) {
        entry["layer"] = layer.getIndex();
        if (axesKey == "tp")
          tpPerLayer[layer.getIndex()] += c.cost.wireBytes;
      }
      sequenceParallel |= c.kind == CollectiveKind::ReduceScatter && axesKey == "tp";
      list.push_back(std::move(entry));
    }
    auto totalJson = [](const Total &t) {
      return llvm::json::Object{{"count", t.count},
                                {"bytes_per_rank", t.bytes},
                                {"wire_bytes_per_rank", t.wireBytes},
                                {"seconds", t.seconds}};
    };
    auto totals = [&](const std::map<std::string, Total> &m) {
      llvm::json::Object o;
      for (auto &[key, t] : m)
        o[key] = totalJson(t);
      return o;
    };
    llvm::json::Object report{{"mesh", meshJson(module)},
                              {"total", totalJson(all)},
                              {"totals", totals(perKind)},
                              {"per_axis", totals(perAxes)},
                              {"collectives", std::move(list)}};
    if (std::optional<llvm::json::Object> step = analyticTrainingVolumes(
            module, mesh, perAxes["dp"].wireBytes, tpPerLayer, sequenceParallel))
      report["training"] = std::move(*step);
    if (failed(
            writeJsonReport(module, output, "comm report", llvm::json::Value(std::move(report)))))
      return signalPassFailure();
  }

  /// For a training step: the analytic volumes per step next to what the
  /// program does. Data parallelism all-reduces the gradients, 2 Psi (Psi
  /// the parameter bytes a rank holds without dp) times (n - 1) / n on a
  /// ring; ZeRO-1 and 2 reduce-scatter them and all-gather the parameters,
  /// as much; ZeRO-3 gathers the parameters twice, 3 Psi (n - 1) / n. Tensor
  /// parallelism all-reduces b s h four times per block, forward and
  /// backward (sequence parallelism: as many bytes in reduce-scatters and
  /// all-gathers), 2 (t - 1) / t of it each on a ring.
  static std::optional<llvm::json::Object>
  analyticTrainingVolumes(ModuleOp module, pmlir::tfm::MeshAttr mesh, int64_t dpWire,
                          const std::map<int64_t, int64_t> &tpPerLayer, bool sequenceParallel) {
    std::optional<llvm::json::Object> step;
    module.walk([&](func::FuncOp func) {
      bool trains = false;
      func.walk([&](pmlir::tfm::AdamWOp) { trains = true; });
      if (!trains || step)
        return;
      double psi = 0;
      for (BlockArgument arg : func.getArguments()) {
        unsigned i = arg.getArgNumber();
        if (pmlir::tfm::argumentRole(func, i) != pmlir::tfm::ArgumentRole::Param)
          continue;
        auto type = cast<RankedTensorType>(arg.getType());
        auto globalType = func.getArgAttrOfType<TypeAttr>(i, pmlir::tfm::kGlobalTypeAttr);
        auto global = globalType ? cast<RankedTensorType>(globalType.getValue()) : type;
        double devices = 1;
        if (auto sharding =
                func.getArgAttrOfType<pmlir::tfm::ShardingAttr>(i, pmlir::tfm::kShardingAttr))
          for (int64_t d = 0; d < sharding.getRank(); ++d)
            for (StringRef a : sharding.axesOf(d))
              if (a != "dp")
                devices *= mesh.axisSize(a);
        psi += double(global.getNumElements()) * (global.getElementTypeBitWidth() / 8) / devices;
      }
      int64_t dp = mesh && mesh.axisIndex("dp") >= 0 ? mesh.axisSize("dp") : 1;
      int64_t tp = mesh && mesh.axisIndex("tp") >= 0 ? mesh.axisSize("tp") : 1;
      auto zero = module->getAttrOfType<IntegerAttr>(pmlir::tfm::kZeroStageAttr);
      int64_t stage = zero ? zero.getInt() : 0;
      double dpExpected = (stage == 3 ? 3 : 2) * psi * double(dp - 1) / double(dp);
      step = llvm::json::Object{
          {"function", jsonText(func.getSymName())},
          {"psi_bytes_per_rank", static_cast<int64_t>(psi + 0.5)},
          {"dp", dp},
          {"zero_stage", stage},
          {"dp_expected_wire_bytes_per_rank", static_cast<int64_t>(dpExpected + 0.5)},
          {"dp_wire_bytes_per_rank", dpWire}};
      // b s h of a block: its first forward layer's output, per rank (the
      // whole sequence where sequence parallelism splits it).
      pmlir::tfm::LayerOp first;
      func.walk([&](pmlir::tfm::LayerOp layer) {
        if (!first && !layer.getBackward())
          first = layer;
      });
      if (!first || tpPerLayer.empty() || tp == 1)
        return;
      auto out = cast<RankedTensorType>(first.getResult(0).getType());
      double bsh = double(out.getNumElements()) * (sequenceParallel ? tp : 1);
      double tpExpected =
          4 * 2 * double(tp - 1) / double(tp) * bsh * (out.getElementTypeBitWidth() / 8);
      llvm::json::Array measured;
      for (auto &[layer, wire] : tpPerLayer)
        measured.push_back(llvm::json::Object{{"layer", layer}, {"wire_bytes_per_rank", wire}});
      (*step)["tp_block_expected_wire_bytes_per_rank"] = static_cast<int64_t>(tpExpected + 0.5);
      (*step)["tp_blocks"] = std::move(measured);
    });
    return step;
  }
};

} // namespace
