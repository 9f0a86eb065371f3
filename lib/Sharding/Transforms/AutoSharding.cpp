//===- AutoSharding.cpp - Choose shardings with an integer program --------===//
//
// Part of pmlir.
//
// The pass around the auto-sharding engine (pmlir/Sharding/Auto): the
// options become a cost model on the module's mesh, each function is
// solved, and the plan is written as seeds.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Transforms/Passes.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/ShardingRules.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Pipelining/Pipelining.h"
#include "pmlir/Sharding/Auto/AutoSharding.h"
#include "pmlir/Sharding/Topology.h"
#include "pmlir/Support/Bytes.h"

#include "pmlir/Analysis/JsonReport.h"

#include "GlobalProgram.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/Debug.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

#define DEBUG_TYPE "pmlir-auto-sharding"

namespace pmlir {
#define GEN_PASS_DEF_AUTOSHARDING
#include "pmlir/Sharding/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::tfm;
using namespace pmlir::sharding;

namespace {

/// The plan's prediction as JSON.
llvm::json::Object predictionJson(const autoshard::Plan &plan) {
  const autoshard::Prediction &p = plan.prediction;
  llvm::json::Object comm;
  for (const auto &[axes, c] : p.commPerAxes)
    comm[pmlir::jsonText(axes)] = llvm::json::Object{{"seconds", c.seconds},
                                                     {"bytes", c.bytes},
                                                     {"wire_bytes_per_rank", c.wireBytes},
                                                     {"collectives", c.collectives}};
  const autoshard::ProblemStats &s = plan.stats;
  return llvm::json::Object{{"compute_seconds", p.computeSeconds},
                            {"comm_seconds", p.commSeconds},
                            {"objective_seconds", p.objective},
                            {"peak_memory_bytes", p.peakMemoryBytes},
                            {"comm", std::move(comm)},
                            {"problem", llvm::json::Object{{"ops", s.ops},
                                                           {"arguments", s.arguments},
                                                           {"layers", s.layers},
                                                           {"layer_classes", s.layerClasses},
                                                           {"classes", s.classes},
                                                           {"followers", s.followers},
                                                           {"variables", s.variables},
                                                           {"strategies", s.strategies},
                                                           {"edges", s.edges},
                                                           {"build_seconds", s.buildSeconds},
                                                           {"solve_seconds", s.solveSeconds},
                                                           {"optimal", s.optimal}}}};
}

struct AutoShardingPass : public pmlir::impl::AutoShardingBase<AutoShardingPass> {
  using AutoShardingBase::AutoShardingBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (!pmlir::isGlobalProgram(module, "auto-sharding"))
      return signalPassFailure();
    MeshAttr mesh = meshOf(module, "auto-sharding");
    if (!mesh)
      return signalPassFailure();
    // An axis named otherwise than the default ("pp") is meant to be one of
    // the mesh's. (The planner solves a pipelined program on the submesh
    // without pp.)
    if (pipelineAxis != "pp" && mesh.axisIndex(pipelineAxis) < 0) {
      emitError(module.getLoc()) << "auto-sharding: pipeline-axis '" << pipelineAxis
                                 << "' is no axis of the mesh " << mesh;
      return signalPassFailure();
    }
    std::optional<autoshard::Options> options = makeOptions(module, mesh);
    if (!options)
      return signalPassFailure();
    llvm::json::Object functions;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      // A pipelined function's ranks run different stages: none of its
      // values is split over the pipeline axis, and each rank holds what
      // its stages read and make, in the order its schedule runs them.
      autoshard::Options funcOptions = *options;
      if (func->hasAttr(pmlir::pipe::kStagesAttr)) {
        funcOptions.excludedAxes.push_back(pipelineAxis);
        auto schedules = module.getOps<pmlir::pipe::ScheduleOp>();
        if (!schedules.empty()) {
          auto timelines = pmlir::pipeline::rankTimelines(func, (*schedules.begin()).getSchedule());
          if (failed(timelines))
            return signalPassFailure();
          funcOptions.rankTimelines = std::move(*timelines);
        }
      }
      autoshard::AutoSharder sharder(func, mesh, funcOptions);
      std::string error;
      std::optional<autoshard::Plan> plan = sharder.solve(error);
      if (!plan) {
        func.emitError() << "auto-sharding: " << error;
        return signalPassFailure();
      }
      FailureOr<int64_t> constraints = autoshard::writeSeeds(func, mesh, *plan);
      if (failed(constraints))
        return signalPassFailure();
      llvm::json::Object entry = predictionJson(*plan);
      entry["constraints"] = *constraints;
      functions[pmlir::jsonText(func.getSymName())] = std::move(entry);
    }
    if (!report.empty() &&
        failed(pmlir::writeJsonReport(module, report, "auto-sharding report",
                                      llvm::json::Object{{"mesh", pmlir::meshJson(module)},
                                                         {"topology", topology},
                                                         {"functions", std::move(functions)}})))
      return signalPassFailure();
  }

  std::optional<autoshard::Options> makeOptions(ModuleOp module, MeshAttr mesh) {
    std::string error;
    std::optional<Topology> topo = Topology::load(topology, error);
    if (!topo) {
      module.emitError() << "auto-sharding: " << error;
      return std::nullopt;
    }
    std::vector<std::string> axisNames;
    for (StringAttr axis : mesh.getAxes())
      axisNames.push_back(axis.str());
    if (std::optional<std::string> unknown = topo->unknownAxis(axisNames)) {
      module.emitError() << "auto-sharding: topology '" << topology << "': " << *unknown;
      return std::nullopt;
    }
    // The mesh's own rank order, unless the rank-order option replaces it.
    if (!rankOrder.empty()) {
      SmallVector<StringAttr> order;
      for (StringRef name : llvm::split(StringRef(rankOrder), ','))
        order.push_back(StringAttr::get(&getContext(), name));
      mesh = MeshAttr::getChecked([&] { return module.emitError() << "auto-sharding: "; },
                                  &getContext(), mesh.getAxes(), mesh.getSizes(),
                                  ArrayRef<StringAttr>(order));
      if (!mesh)
        return std::nullopt;
    }
    std::optional<pmlir::Mesh> placed = mesh.toMesh(error);
    if (!placed) {
      module.emitError() << "auto-sharding places mesh " << mesh << " on the topology: " << error;
      return std::nullopt;
    }
    autoshard::Options options;
    options.model = topo->costModel(*placed);
    options.memoryBudget = topo->device.memoryBytes;
    if (!memoryBudget.empty()) {
      std::optional<double> bytes = pmlir::parseBytes(memoryBudget);
      if (!bytes) {
        module.emitError() << "auto-sharding: memory budget '" << memoryBudget
                           << "' is not a positive byte count up to 4 EiB (as 12GiB, 800MB or 1e9)";
        return std::nullopt;
      }
      options.memoryBudget = *bytes;
    }
    options.solver = solver;
    if (!(timeLimit > 0) || std::isinf(timeLimit)) {
      module.emitError() << "auto-sharding: time limit "
                         << llvm::formatv("{0}", timeLimit.getValue())
                         << " must be a positive finite number of seconds";
      return std::nullopt;
    }
    options.timeLimitSeconds = timeLimit;
    options.follow = follow;
    options.mergeLayers = mergeLayers;
    options.keepAnnotations = keepAnnotations;
    return options;
  }
};

} // namespace
