//===- PropagationTest.cpp - Shardings completed from seeds --------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Propagation.h"

#include "ShardingTestUtils.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace pmlir::sharding;
using namespace pmlir::sharding::testing;

namespace {

class PropagationTest : public ::testing::Test {
protected:
  void SetUp() override { loadDialects(context); }

  /// Parses `body` as the function @f of a module on `mesh`.
  func::FuncOp parse(StringRef meshText, StringRef body) {
    std::string text =
        ("module attributes {tfm.mesh = #tfm.mesh<" + meshText + ">} {\n" + body + "\n}").str();
    module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module) << text;
    mesh = (*module)->getAttrOfType<MeshAttr>(pmlir::tfm::kMeshAttr);
    return cast<func::FuncOp>(module->lookupSymbol("f"));
  }

  /// The value an op named `name` defines (the first, in walk order).
  Value resultOf(func::FuncOp func, StringRef name, unsigned n = 0) {
    Value found;
    func.walk([&](Operation *op) {
      if (!found && op->getName().getStringRef() == name) {
        if (n-- == 0)
          found = op->getResult(0);
      }
    });
    EXPECT_TRUE(found) << name.str();
    return found;
  }

  static std::string shardingOf(const ShardingMap &known, Value v) {
    auto it = known.find(v);
    return it == known.end() ? "unknown" : describe(it->second);
  }

  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  MeshAttr mesh;
};

// Megatron's MLP from its weights: column-parallel fc1 splits the hidden
// activation, row-parallel fc2 contracts over it into a pending sum, which
// passes the linear scale and stops at the bias add.
TEST_F(PropagationTest, ColumnThenRowParallelMakesAPendingSum) {
  func::FuncOp f = parse("dp = 2, tp = 2", R"(
  func.func @f(%x: tensor<4x8xf32>, %w1: tensor<8x32xf32>, %w2: tensor<32x8xf32>,
               %b2: tensor<8xf32>) -> tensor<4x8xf32> {
    %h = tfm.matmul %x, %w1 : tensor<4x8xf32>, tensor<8x32xf32> -> tensor<4x32xf32>
    %g = tfm.gelu %h tanh : tensor<4x32xf32>
    %y = tfm.matmul %g, %w2 : tensor<4x32xf32>, tensor<32x8xf32> -> tensor<4x8xf32>
    %s = tfm.scale %y, 2.0 : tensor<4x8xf32>
    %z = tfm.add %s, %b2 : tensor<4x8xf32>, tensor<8xf32>
    return %z : tensor<4x8xf32>
  })");
  ASSERT_TRUE(f);
  ShardingMap known = propagateShardings(f, mesh,
                                         {{f.getArgument(0), makeSharding({{"dp"}, {}})},
                                          {f.getArgument(1), makeSharding({{}, {"tp"}})},
                                          {f.getArgument(2), makeSharding({{"tp"}, {}})}});
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.matmul")), "[[dp], [tp]]");
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.gelu")), "[[dp], [tp]]");
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.matmul", 1)), "[[dp], []] pending [tp]");
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.scale")), "[[dp], []] pending [tp]");
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.add")), "[[dp], []]");
  // The bias gets its sharding backward from the add.
  EXPECT_EQ(shardingOf(known, f.getArgument(3)), "[[]]");
}

// Two seeds propose different axes for the same factor: the one backed by
// more tensor bytes wins, whatever the axes' names, and the lighter seed
// is resharded where it is used (with a warning).
TEST_F(PropagationTest, HeavierProposalWins) {
  func::FuncOp f = parse("dp = 2, tp = 2", R"(
  func.func @f(%big: tensor<4x64x8xf32>, %small: tensor<64x8xf32>) -> tensor<4x64x8xf32> {
    %a = tfm.add %big, %small : tensor<4x64x8xf32>, tensor<64x8xf32>
    return %a : tensor<4x64x8xf32>
  })");
  ASSERT_TRUE(f);
  std::string warning;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
    warning = d.str();
    return success();
  });
  for (StringRef heavy : {"dp", "tp"}) {
    StringRef light = heavy == "dp" ? "tp" : "dp";
    warning.clear();
    ShardingMap known = propagateShardings(f, mesh,
                                           {{f.getArgument(0), makeSharding({{}, {heavy}, {}})},
                                            {f.getArgument(1), makeSharding({{light}, {}})}});
    EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.add")), "[[], [" + heavy.str() + "], []]");
    EXPECT_EQ(shardingOf(known, f.getArgument(1)), "[[" + light.str() + "], []]");
    EXPECT_NE(warning.find("argument #1"), std::string::npos) << warning;
    EXPECT_NE(warning.find("conflicts with argument #0"), std::string::npos) << warning;
  }
}

// Seeds of lower priority enter first and their consequences settle before
// seeds of higher priority are seen; those are then resharded where the
// earlier round decided otherwise.
TEST_F(PropagationTest, PrioritiesEnterInRounds) {
  func::FuncOp f = parse("dp = 2, tp = 2", R"(
  func.func @f(%x: tensor<64x8xf32>, %y: tensor<64x8xf32>) -> tensor<64x8xf32> {
    %a = tfm.gelu %x tanh : tensor<64x8xf32>
    %b = tfm.add %a, %y : tensor<64x8xf32>, tensor<64x8xf32>
    return %b : tensor<64x8xf32>
  })");
  ASSERT_TRUE(f);
  ScopedDiagnosticHandler quiet(&context, [](Diagnostic &) { return success(); });
  ShardingSeed x{f.getArgument(0), makeSharding({{"dp"}, {}}), {}, /*priority=*/1};
  ShardingSeed y{f.getArgument(1), makeSharding({{}, {"tp"}}), {}, /*priority=*/0};
  // %y's round first: it reaches the add and, backward, the gelu.
  ShardingMap known = propagateShardings(f, mesh, {x, y});
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.gelu")), "[[], [tp]]");
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.add")), "[[], [tp]]");
  EXPECT_EQ(shardingOf(known, f.getArgument(0)), "[[dp], []]");
  // %x's round first: forward through the gelu to the add.
  x.priority = 0;
  y.priority = 1;
  known = propagateShardings(f, mesh, {x, y});
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.gelu")), "[[dp], []]");
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.add")), "[[dp], []]");
  // One round: the add sees both, on different factors, and takes both.
  y.priority = 0;
  known = propagateShardings(f, mesh, {x, y});
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.add")), "[[dp], [tp]]");
}

// An open dimension of a seed may be split further; a closed one never is.
TEST_F(PropagationTest, OpenDimensionsExtend) {
  func::FuncOp f = parse("dp = 2, tp = 2", R"(
  func.func @f(%x: tensor<8x16xf32>, %y: tensor<8x16xf32>) -> tensor<8x16xf32> {
    %a = tfm.add %x, %y : tensor<8x16xf32>, tensor<8x16xf32>
    return %a : tensor<8x16xf32>
  })");
  ASSERT_TRUE(f);
  ShardingSeed x{f.getArgument(0), makeSharding({{}, {}}), {0}};
  ShardingSeed y{f.getArgument(1), makeSharding({{"dp"}, {}})};
  ShardingMap known = propagateShardings(f, mesh, {x, y});
  EXPECT_EQ(shardingOf(known, resultOf(f, "tfm.add")), "[[dp], []]");
  EXPECT_EQ(shardingOf(known, f.getArgument(0)), "[[dp], []]");
  // Closed, %x stays replicated (and is sliced where the add needs it).
  x.open.clear();
  known = propagateShardings(f, mesh, {x, y});
  EXPECT_EQ(shardingOf(known, f.getArgument(0)), "[[], []]");
}

// Values nothing reaches have no sharding (the pass replicates them); a
// result hint reaches a returned value when nothing else does.
TEST_F(PropagationTest, UnreachedValuesAndResultHints) {
  func::FuncOp f = parse("tp = 2", R"(
  func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %a = tfm.gelu %x tanh : tensor<4x8xf32>
    return %a : tensor<4x8xf32>
  })");
  ASSERT_TRUE(f);
  Value gelu = resultOf(f, "tfm.gelu");
  ShardingMap known = propagateShardings(f, mesh, {});
  EXPECT_EQ(shardingOf(known, gelu), "unknown");
  EXPECT_EQ(shardingOf(known, f.getArgument(0)), "unknown");
  known = propagateShardings(f, mesh, {}, {{gelu, makeSharding({{}, {"tp"}})}});
  EXPECT_EQ(shardingOf(known, gelu), "[[], [tp]]");
  // ... and from there backward to the argument.
  EXPECT_EQ(shardingOf(known, f.getArgument(0)), "[[], [tp]]");
}

// checkSharding names the constraint a bad sharding breaks.
TEST_F(PropagationTest, CheckShardingNamesTheConstraint) {
  func::FuncOp f = parse("dp = 2, tp = 4", R"(
  func.func @f(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
    return %x : tensor<2x8xf32>
  })");
  ASSERT_TRUE(f);
  std::string message;
  ScopedDiagnosticHandler capture(&context, [&](Diagnostic &d) {
    message = d.str();
    return success();
  });
  auto check = [&](StringRef text) {
    auto attr = cast<ShardingAttr>(parseAttribute(text, &context));
    message.clear();
    return checkSharding(
        mesh, f.getArgument(0), attr, [&]() { return emitError(f.getLoc()); }, "argument #0");
  };
  EXPECT_TRUE(succeeded(check("#tfm.sharding<[[\"dp\"], [\"tp\"]]>")));
  EXPECT_TRUE(failed(check("#tfm.sharding<[[\"pp\"], []]>")));
  EXPECT_NE(message.find("names mesh axis 'pp'"), std::string::npos) << message;
  EXPECT_TRUE(failed(check("#tfm.sharding<[[\"tp\"], []]>")));
  EXPECT_NE(message.find("splits dimension 0 of"), std::string::npos) << message;
  EXPECT_NE(message.find("over 4 devices, more than its size"), std::string::npos) << message;
  EXPECT_TRUE(failed(check("#tfm.sharding<[[], [\"tp\", \"tp:(1)2\"]]>")));
  EXPECT_NE(message.find("share devices"), std::string::npos) << message;
  EXPECT_TRUE(failed(check("#tfm.sharding<[[]]>")));
  EXPECT_NE(message.find("of rank 1"), std::string::npos) << message;
}

} // namespace
