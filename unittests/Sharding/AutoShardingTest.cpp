//===- AutoShardingTest.cpp - The intra-op problem and the auto-sharder ---===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Auto/AutoSharding.h"
#include "pmlir/Sharding/Auto/Problem.h"
#include "pmlir/Sharding/Topology.h"
#include "pmlir/Support/Bytes.h"

#include "ShardingTestUtils.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <random>

using namespace mlir;
using namespace pmlir::sharding;
using namespace pmlir::sharding::autoshard;
using namespace pmlir::sharding::testing;

namespace {

// Two variables of two strategies and one edge; every choice priced by
// hand: (0,0) 1+5+0, (0,1) 1+2+7, (1,0) 3+5+4, (1,1) 3+2+kForbidden.
Problem handProblem() {
  Problem p;
  p.cost = {{1, 3}, {5, 2}};
  p.names = {"a", "b"};
  Problem::Edge e;
  e.from = 0;
  e.to = 1;
  e.fromClass = {0, 1};
  e.toClass = {0, 1};
  e.cost = {{0, 7}, {4, kForbidden}};
  p.edges.push_back(e);
  return p;
}

TEST(AutoShardingProblemTest, ObjectiveEqualsHandComputedCosts) {
  Problem p = handProblem();
  EXPECT_DOUBLE_EQ(evaluate(p, {0, 0}), 6);
  EXPECT_DOUBLE_EQ(evaluate(p, {0, 1}), 10);
  EXPECT_DOUBLE_EQ(evaluate(p, {1, 0}), 12);
  EXPECT_TRUE(std::isinf(evaluate(p, {1, 1})));
  for (Solver solver : {Solver::Cbc, Solver::Exhaustive}) {
    SolveResult r = solve(p, solver, 10);
    ASSERT_EQ(r.status, SolveStatus::Solved) << r.error;
    EXPECT_EQ(r.solution.choice, (std::vector<int>{0, 0}));
    EXPECT_NEAR(r.solution.objective, 6, 1e-9);
  }
}

TEST(AutoShardingProblemTest, MemoryBudgetAndItsMinimum) {
  Problem p = handProblem();
  // One point of 1 byte plus variable 0's 10 or 4 and variable 1's 3 or 6:
  // (0,0) holds 14 bytes, (0,1) 17, (1,0) 8.
  p.memory.push_back({"here", 1.0, {{0, {10, 4}}, {1, {3, 6}}}});
  for (auto [budget, choice, objective] :
       {std::tuple{15.0, std::vector<int>{0, 0}, 6.0}, {12.0, {1, 0}, 12.0}}) {
    p.memoryBudget = budget;
    for (Solver solver : {Solver::Cbc, Solver::Exhaustive}) {
      SolveResult r = solve(p, solver, 10);
      ASSERT_EQ(r.status, SolveStatus::Solved) << r.error;
      EXPECT_EQ(r.solution.choice, choice) << "budget " << budget;
      EXPECT_NEAR(r.solution.objective, objective, 1e-9);
    }
  }
  p.memoryBudget = 7;
  for (Solver solver : {Solver::Cbc, Solver::Exhaustive}) {
    EXPECT_EQ(solve(p, solver, 10).status, SolveStatus::Infeasible);
    // (1,0)'s 8 bytes are the least of the valid choices ((1,1) is
    // forbidden).
    SolveResult least = minimizePeakMemory(p, solver, 10);
    ASSERT_EQ(least.status, SolveStatus::Solved) << least.error;
    EXPECT_NEAR(least.solution.objective, 8, 1e-9);
  }
}

// CBC and the exhaustive search agree on random problems: chains and
// crossing edges, forbidden pairs, shared classes, a memory bound.
TEST(AutoShardingProblemTest, CbcEqualsExhaustiveSearch) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> cost(0, 10);
  for (int trial = 0; trial < 40; ++trial) {
    Problem p;
    int vars = 3 + trial % 4;
    for (int v = 0; v < vars; ++v) {
      int strategies = 2 + (trial + v) % 4;
      std::vector<double> c;
      for (int s = 0; s < strategies; ++s)
        c.push_back(cost(rng));
      p.cost.push_back(c);
      p.names.push_back("v" + std::to_string(v));
    }
    for (int k = 0; k < vars + trial % 3; ++k) {
      Problem::Edge e;
      e.from = k % vars;
      e.to = (k * 2 + 1) % vars;
      if (e.from == e.to)
        continue;
      // Two classes per end: strategies of equal parity share a row.
      for (size_t s = 0; s < p.cost[e.from].size(); ++s)
        e.fromClass.push_back(s % 2);
      for (size_t t = 0; t < p.cost[e.to].size(); ++t)
        e.toClass.push_back(t % 2);
      e.cost = {{cost(rng), cost(rng)}, {cost(rng), trial % 5 == 0 ? kForbidden : cost(rng)}};
      p.edges.push_back(e);
    }
    Problem::MemoryPoint point;
    for (int v = 0; v < vars; ++v) {
      std::vector<double> bytes;
      for (size_t s = 0; s < p.cost[v].size(); ++s)
        bytes.push_back(static_cast<double>((v + s * 3) % 5));
      point.terms.push_back({v, bytes});
    }
    p.memory.push_back(point);
    p.memoryBudget = trial % 2 ? 2.0 * vars : std::numeric_limits<double>::infinity();
    SolveResult exhaustive = solveExhaustively(p);
    SolveResult cbc = solveWithCbc(p, 10);
    ASSERT_EQ(exhaustive.status, cbc.status) << "trial " << trial;
    if (exhaustive.status != SolveStatus::Solved)
      continue;
    EXPECT_NEAR(cbc.solution.objective, exhaustive.solution.objective, 1e-6) << "trial " << trial;
    EXPECT_NEAR(evaluate(p, cbc.solution.choice), cbc.solution.objective, 1e-9);
    EXPECT_LE(peakMemory(p, cbc.solution.choice), p.memoryBudget);
  }
}

TEST(TopologyTest, PlacesAxesOnLinksAndParsesJson) {
  std::string error;
  std::optional<Topology> h100 = Topology::load("h100", error);
  ASSERT_TRUE(h100) << error;
  // tp is fastest: 8 ranks of one node; dp=2 spans 16 ranks, two nodes.
  std::optional<pmlir::Mesh> mesh = pmlir::Mesh::parse("dp=2,tp=8", "", error);
  ASSERT_TRUE(mesh) << error;
  CostModel model = h100->costModel(*mesh);
  EXPECT_DOUBLE_EQ(model.linkOf("tp").bytesPerSecond, 360e9);
  EXPECT_DOUBLE_EQ(model.linkOf("dp").bytesPerSecond, 45e9);
  EXPECT_DOUBLE_EQ(model.device().flopsPerSecond, 600e12);

  std::optional<Topology> custom = Topology::fromJson(
      R"({"name": "two", "devices_per_node": 2,
          "device": {"tflops": 1, "memory_gb": 2, "memory_gbps": 100},
          "intra_node": {"gbps": 50, "latency_us": 1},
          "inter_node": {"gbps": 5, "latency_us": 10},
          "axes": {"pp": {"gbps": 1, "latency_us": 20}}})",
      error);
  ASSERT_TRUE(custom) << error;
  std::optional<pmlir::Mesh> four = pmlir::Mesh::parse("pp=2,dp=2,tp=2", "", error);
  ASSERT_TRUE(four) << error;
  CostModel m = custom->costModel(*four);
  EXPECT_DOUBLE_EQ(m.linkOf("tp").bytesPerSecond, 50e9);
  EXPECT_DOUBLE_EQ(m.linkOf("dp").bytesPerSecond, 5e9);
  EXPECT_DOUBLE_EQ(m.linkOf("pp").bytesPerSecond, 1e9);
  EXPECT_DOUBLE_EQ(m.device().memoryBytes, 2e9);
  // Groups that fit a node's count but straddle two nodes: on 3 devices a
  // node, tp = 2's group {2, 3} crosses from node 0 to node 1, so tp runs
  // over the link between nodes; tp = 3 on 3 a node does not.
  std::optional<Topology> three = Topology::fromJson(
      R"({"name": "three", "devices_per_node": 3,
          "device": {"tflops": 1, "memory_gb": 2, "memory_gbps": 100},
          "intra_node": {"gbps": 50, "latency_us": 1},
          "inter_node": {"gbps": 5, "latency_us": 10}})",
      error);
  ASSERT_TRUE(three) << error;
  std::optional<pmlir::Mesh> straddling = pmlir::Mesh::parse("dp=2,tp=2", "", error);
  ASSERT_TRUE(straddling) << error;
  EXPECT_DOUBLE_EQ(three->costModel(*straddling).linkOf("tp").bytesPerSecond, 5e9);
  std::optional<pmlir::Mesh> aligned = pmlir::Mesh::parse("dp=2,tp=3", "", error);
  ASSERT_TRUE(aligned) << error;
  EXPECT_DOUBLE_EQ(three->costModel(*aligned).linkOf("tp").bytesPerSecond, 50e9);
  // One group's link (the step's simulation): its members on one node, or
  // not; a whole axis's pinned link; a group over two axes spanning nodes.
  auto whole = [&](const std::string &name) {
    int64_t index = 0;
    while (four->axisNames()[index] != name)
      ++index;
    return pmlir::SubAxis{index, 1, four->axisSizes()[index]};
  };
  auto linkOfGroup = [&](std::vector<pmlir::SubAxis> axes, int64_t rank) {
    return custom->linkOfGroup(*four, axes, four->group(rank, axes)).bytesPerSecond;
  };
  EXPECT_DOUBLE_EQ(linkOfGroup({whole("tp")}, 5), 50e9);
  EXPECT_DOUBLE_EQ(linkOfGroup({whole("dp")}, 5), 5e9);
  EXPECT_DOUBLE_EQ(linkOfGroup({whole("pp")}, 5), 1e9);
  EXPECT_DOUBLE_EQ(linkOfGroup({whole("dp"), whole("tp")}, 5), 5e9);

  EXPECT_FALSE(Topology::fromJson(R"({"devices_per_node": 8})", error));
  EXPECT_EQ(error,
            "the topology needs a 'device' object {\"tflops\", \"memory_gb\", \"memory_gbps\"}");
  EXPECT_FALSE(Topology::fromJson(
      R"({"devices_per_node": 8, "device": {"tflops": -1, "memory_gb": 1, "memory_gbps": 1}})",
      error));
  EXPECT_EQ(error, "the device's 'tflops' must be positive, not -1");
  // Past the bounds: costs the solver cannot take (CLP asserted on 1e-300).
  auto withDevice = [](const std::string &device, const std::string &intra) {
    return R"({"devices_per_node": 8, "device": )" + device + R"(, "intra_node": )" + intra +
           R"(, "inter_node": {"gbps": 40, "latency_us": 10}})";
  };
  const std::string device = R"({"tflops": 100, "memory_gb": 80, "memory_gbps": 2000})";
  const std::string link = R"({"gbps": 300, "latency_us": 3})";
  EXPECT_TRUE(Topology::fromJson(withDevice(device, link), error)) << error;
  EXPECT_FALSE(Topology::fromJson(
      withDevice(R"({"tflops": 1e-300, "memory_gb": 80, "memory_gbps": 2000})", link), error));
  EXPECT_EQ(error, "the device's 'tflops' must be 0.001 to 1000000, not 1e-300");
  EXPECT_FALSE(
      Topology::fromJson(withDevice(device, R"({"gbps": 300, "latency_us": 1e30})"), error));
  EXPECT_EQ(error, "the 'intra_node' link's 'latency_us' must be 0 to 1000000, not 1e+30");
  EXPECT_FALSE(Topology::fromJson(
      R"({"devices_per_node": 1e300, "device": {"tflops": 1, "memory_gb": 1, "memory_gbps": 1}})",
      error));
  EXPECT_EQ(error, "the topology's 'devices_per_node' must be 1 to 1048576, not 1e+300");
  // A misspelt key is refused, not left out.
  EXPECT_FALSE(Topology::fromJson(withDevice(device, R"({"gbps": 300, "latency_ms": 3})"), error));
  EXPECT_EQ(error, "the 'intra_node' link has the key 'latency_ms', which is none of 'gbps', "
                   "'latency_us'");
  EXPECT_FALSE(Topology::load("/", error));
  EXPECT_EQ(error, "topology '/' is a directory, not a JSON file");
  EXPECT_FALSE(Topology::load("nowhere.json", error));
  EXPECT_EQ(
      error,
      "topology 'nowhere.json' is neither a preset (cpu, h100, h200) nor a readable JSON file");

  EXPECT_EQ(pmlir::parseBytes("12GiB"), 12.0 * (1 << 30));
  EXPECT_EQ(pmlir::parseBytes("800MB"), 800e6);
  EXPECT_EQ(pmlir::parseBytes("1e9"), 1e9);
  EXPECT_FALSE(pmlir::parseBytes("lots"));
  EXPECT_FALSE(pmlir::parseBytes("-1GB"));
  EXPECT_FALSE(pmlir::parseBytes("3 parsecs"));
}

class AutoShardingTest : public ::testing::Test {
protected:
  void SetUp() override { loadDialects(context); }

  func::FuncOp parse(StringRef text) {
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module);
    mesh = (*module)->getAttrOfType<MeshAttr>(pmlir::tfm::kMeshAttr);
    return *module->getOps<func::FuncOp>().begin();
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  MeshAttr mesh;
};

// As Alpa's test_mlp: the objective of a two-layer MLP on tp = 2, with
// compute free and weights that fit only when split, is the one collective
// of Megatron's plan, priced by hand: fc1 column-parallel, fc2
// row-parallel, its pending [8, 1024] f32 output reduce-scattered into a
// split result (one ring step of 1 us and 16 KiB at 100 GB/s).
TEST_F(AutoShardingTest, MlpObjectiveIsMegatronsCollective) {
  func::FuncOp func = parse(R"(
module attributes {tfm.mesh = #tfm.mesh<tp = 2>} {
  func.func @mlp(%x: tensor<8x1024xf32>, %w1: tensor<1024x4096xf32>, %w2: tensor<4096x1024xf32>) -> tensor<8x1024xf32> {
    %h = tfm.matmul %x, %w1 : tensor<8x1024xf32>, tensor<1024x4096xf32> -> tensor<8x4096xf32>
    %g = tfm.gelu %h tanh : tensor<8x4096xf32>
    %y = tfm.matmul %g, %w2 : tensor<8x4096xf32>, tensor<4096x1024xf32> -> tensor<8x1024xf32>
    return %y : tensor<8x1024xf32>
  }
})");
  Options options;
  options.model.setDevice({1e30, 1e30, 80e9});
  options.model.setLink("*", {100e9, 1e-6});
  // 16 MiB a weight: both fit only split.
  options.memoryBudget = 20.0 * (1 << 20);
  double expected = 1e-6 + 16384 / 100e9;
  std::vector<std::string> plans;
  for (Solver solver : {Solver::Cbc, Solver::Exhaustive}) {
    options.solver = solver;
    AutoSharder sharder(func, mesh, options);
    std::string error;
    std::optional<Plan> plan = sharder.solve(error);
    ASSERT_TRUE(plan) << error;
    EXPECT_NEAR(plan->prediction.objective, expected, 1e-12);
    EXPECT_NEAR(plan->prediction.commSeconds, expected, 1e-12);
    EXPECT_EQ(plan->prediction.commPerAxes.at("tp").bytes, 32768);
    EXPECT_EQ(plan->prediction.commPerAxes.at("tp").wireBytes, 16384);
    EXPECT_EQ(describe(plan->shardings.lookup(func.getArgument(1))), "[[], [tp]]");
    EXPECT_EQ(describe(plan->shardings.lookup(func.getArgument(2))), "[[tp], []]");
    EXPECT_LE(plan->prediction.peakMemoryBytes, options.memoryBudget);
  }
  // Under 16 MiB, no plan fits: the least any needs is both weights split
  // (16 MiB) and, at the gelu, the input and both hidden activations split
  // (16 + 64 + 64 KiB).
  options.memoryBudget = 8.0 * (1 << 20);
  AutoSharder tight(func, mesh, options);
  std::string error;
  EXPECT_FALSE(tight.solve(error));
  EXPECT_EQ(error, "cannot fit under 8.00 MiB: the least memory any plan needs is 16.14 MiB");
}

// Identical layers share their variables: four layers cost one layer's
// variables, and the plan gives every layer the same shardings.
TEST_F(AutoShardingTest, IdenticalLayersShareVariables) {
  std::string layers;
  std::string args;
  for (int i = 0; i < 4; ++i) {
    args += ", %w" + std::to_string(i) + ": tensor<256x256xf32>";
    std::string in = i == 0 ? "%x" : "%l" + std::to_string(i - 1);
    layers += "    %l" + std::to_string(i) + " = tfm.layer " + std::to_string(i) +
              " : tensor<8x256xf32> {\n      %m = tfm.matmul " + in + ", %w" + std::to_string(i) +
              " : tensor<8x256xf32>, tensor<256x256xf32> -> tensor<8x256xf32>\n      %g = tfm.gelu "
              "%m tanh : tensor<8x256xf32>\n      tfm.yield %g : tensor<8x256xf32>\n    }\n";
  }
  func::FuncOp func = parse("module attributes {tfm.mesh = #tfm.mesh<dp = 2, tp = 2>} {\n"
                            "  func.func @f(%x: tensor<8x256xf32>" +
                            args + ") -> tensor<8x256xf32> {\n" + layers +
                            "    return %l3 : tensor<8x256xf32>\n  }\n}");
  Options merged, separate;
  separate.mergeLayers = false;
  AutoSharder a(func, mesh, merged), b(func, mesh, separate);
  EXPECT_EQ(a.stats().layers, 4);
  EXPECT_EQ(a.stats().layerClasses, 1);
  // x, one weight class, one matmul (gelu follows it), the result.
  EXPECT_EQ(a.stats().variables, 4);
  EXPECT_EQ(b.stats().variables, 10);
  std::string error;
  std::optional<Plan> pa = a.solve(error), pb = b.solve(error);
  ASSERT_TRUE(pa && pb) << error;
  for (int i = 1; i < 4; ++i)
    EXPECT_EQ(describe(pa->shardings.lookup(func.getArgument(1 + i))),
              describe(pa->shardings.lookup(func.getArgument(1))));
  // Sharing can only restrict: here alternating shardings between layers
  // beat any one sharding all layers share.
  EXPECT_GT(pa->prediction.objective, pb->prediction.objective * (1 + 1e-6));
  // Following restricts nothing here: the gelu keeps the matmul's
  // sharding, and a plan with every op a variable costs the same, merged
  // or not.
  Options mergedExact, separateExact;
  mergedExact.follow = separateExact.follow = false;
  separateExact.mergeLayers = false;
  AutoSharder ae(func, mesh, mergedExact), be(func, mesh, separateExact);
  std::optional<Plan> pae = ae.solve(error), pbe = be.solve(error);
  ASSERT_TRUE(pae && pbe) << error;
  EXPECT_GT(ae.stats().variables, a.stats().variables);
  EXPECT_NEAR(pa->prediction.objective, pae->prediction.objective,
              1e-12 * pae->prediction.objective);
  EXPECT_NEAR(pb->prediction.objective, pbe->prediction.objective,
              1e-12 * pbe->prediction.objective);
}

} // namespace
