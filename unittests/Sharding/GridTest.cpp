//===- GridTest.cpp - The grid of a partitioned program -------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Grid.h"

#include "ShardingTestUtils.h"

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/Parser/Parser.h"

using namespace mlir;
using namespace pmlir::sharding;
using namespace pmlir::sharding::testing;

namespace {

class GridTest : public ::testing::Test {
protected:
  void SetUp() override {
    loadDialects(context);
    context.loadDialect<shard::ShardDialect>();
  }
  MLIRContext context;
};

TEST_F(GridTest, WholeAxesAreTheMesh) {
  MeshAttr mesh = parseMesh(context, "dp = 2, tp = 4");
  Grid grid(mesh);
  EXPECT_TRUE(grid.isMesh());
  EXPECT_EQ(grid.axesOf({"tp", "dp"}), SmallVector<int16_t>({1, 0}));
  // A part the grid does not hold stands as the axes it overlaps, and is
  // noted.
  EXPECT_EQ(grid.axesOf({"tp:(2)2"}), SmallVector<int16_t>({1}));
  EXPECT_EQ(grid.uncut(), std::vector<std::string>({"tp:(2)2"}));
}

TEST_F(GridTest, SubAxesCutTheirAxis) {
  MeshAttr mesh = parseMesh(context, "dp = 2, tp = 8");
  std::string error;
  std::optional<Grid> grid = Grid::cut(mesh, {"tp:(2)2"}, error);
  ASSERT_TRUE(grid) << error;
  EXPECT_FALSE(grid->isMesh());
  ASSERT_EQ(grid->parts().size(), 4u); // dp, tp:(1)2, tp:(2)2, tp:(4)2
  EXPECT_EQ(grid->axesOf({"tp:(2)2"}), SmallVector<int16_t>({2}));
  EXPECT_EQ(grid->axesOf({"tp"}), SmallVector<int16_t>({1, 2, 3}));
  EXPECT_EQ(grid->axesOf({"tp:(2)4", "dp"}), SmallVector<int16_t>({2, 3, 0}));
  EXPECT_TRUE(grid->uncut().empty());
  EXPECT_FALSE(Grid::cut(mesh, {"tp:(1)3"}, error));
}

TEST_F(GridTest, DeclaredAndReadBack) {
  MeshAttr mesh = parseMesh(context, "dp = 2, tp = 4");
  std::string error;
  std::optional<Grid> grid = Grid::cut(mesh, {"tp:(1)2"}, error);
  ASSERT_TRUE(grid) << error;
  OwningOpRef<ModuleOp> module = ModuleOp::create(UnknownLoc::get(&context));
  OpBuilder b(module->getBodyRegion());
  shard::GridOp op = grid->declare(b, module->getLoc());
  EXPECT_EQ(op.getShape(), ArrayRef<int64_t>({2, 2, 2}));
  auto names = op->getAttrOfType<ArrayAttr>(kGridAxesAttr);
  ASSERT_TRUE(names);
  EXPECT_EQ(cast<StringAttr>(names[1]).getValue(), "tp:(1)2");
  EXPECT_EQ(cast<StringAttr>(names[2]).getValue(), "tp:(2)2");
  FailureOr<Grid> back = Grid::declaredBy(op, mesh);
  ASSERT_TRUE(succeeded(back));
  EXPECT_EQ(back->parts(), grid->parts());
  // A grid of the mesh's own axes carries no list.
  shard::GridOp plain = Grid(mesh).declare(b, module->getLoc());
  EXPECT_FALSE(plain->hasAttr(kGridAxesAttr));
}

TEST_F(GridTest, FindsTheSubAxesOfAProgram) {
  const char *text = R"mlir(
    module attributes {tfm.mesh = #tfm.mesh<tp = 4>} {
      func.func @f(%x: tensor<8xf32> {tfm.sharding = #tfm.sharding<[["tp:(1)2"]]>})
          -> (tensor<8xf32> {tfm.sharding = #tfm.sharding<[["tp"]]>}) {
        %y = tfm.gelu %x tanh {tfm.shardings = [#tfm.sharding<[[]], pending = ["tp:(2)2"]>]} : tensor<8xf32>
        return %y : tensor<8xf32>
      }
    })mlir";
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
  ASSERT_TRUE(module);
  MeshAttr mesh = parseMesh(context, "tp = 4");
  std::vector<std::string> names = Grid::subAxesNamedIn(*module, mesh);
  llvm::sort(names);
  EXPECT_EQ(names, std::vector<std::string>({"tp:(1)2", "tp:(2)2"}));
}

} // namespace
