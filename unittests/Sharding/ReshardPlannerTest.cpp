//===- ReshardPlannerTest.cpp - Every reshard of a matrix on a 2x2 mesh ---===//
//
// Part of pmlir.
//
// Plans the change between every pair of shardings of a rank-2 tensor on a
// 2x2 mesh (each axis unused, pending, or splitting either dimension, in
// either order), and on a tp of 4 between its two halves (sub-axes), and
// executes each plan on 4 simulated ranks: collectives over groups as
// upstream `shard` defines them (a group over listed axes, the last
// fastest; pmlir::Mesh's groups), started from each rank's block as the
// layout decoder (pmlir/Support/Layout.h) cuts it, pending sums as unequal
// shares. Each rank must end with its block of the target, padding zeros,
// shapes as planned.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Reshard.h"

#include "ShardingTestUtils.h"

#include "pmlir/Support/Layout.h"

#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <numeric>

using namespace mlir;
using namespace pmlir;
using namespace pmlir::sharding;
using namespace pmlir::sharding::testing;
using pmlir::SubAxis;

namespace {

/// One rank's local tensor.
struct Buffer {
  std::vector<int64_t> shape;
  std::vector<double> data;

  int64_t inner(int64_t d) const {
    int64_t n = 1;
    for (size_t i = d + 1; i < shape.size(); ++i)
      n *= shape[i];
    return n;
  }
  int64_t outer(int64_t d) const {
    int64_t n = 1;
    for (int64_t i = 0; i < d; ++i)
      n *= shape[i];
    return n;
  }
  /// Elements [start, start + size) of dimension `d`; past the end, zeros.
  Buffer slice(int64_t d, int64_t start, int64_t size) const {
    Buffer out{shape, {}};
    out.shape[d] = size;
    int64_t in = inner(d);
    for (int64_t o = 0; o < outer(d); ++o)
      for (int64_t i = start; i < start + size; ++i)
        for (int64_t k = 0; k < in; ++k)
          out.data.push_back(i < shape[d] ? data[(o * shape[d] + i) * in + k] : 0.0);
    return out;
  }
  static Buffer concat(const std::vector<Buffer> &parts, int64_t d) {
    Buffer out{parts[0].shape, {}};
    out.shape[d] = 0;
    for (const Buffer &p : parts)
      out.shape[d] += p.shape[d];
    int64_t in = parts[0].inner(d);
    for (int64_t o = 0; o < parts[0].outer(d); ++o)
      for (const Buffer &p : parts)
        for (int64_t k = 0; k < p.shape[d] * in; ++k)
          out.data.push_back(p.data[o * p.shape[d] * in + k]);
    return out;
  }
};

/// The ranks of a mesh, with its groups over axes or sub-axes.
class Ranks {
public:
  explicit Ranks(const Mesh &mesh) : mesh(mesh) {}

  int64_t size() const { return mesh.numRanks(); }
  std::vector<int64_t> coordinates(int64_t rank) const { return mesh.coordinates(rank); }

  /// The members of `rank`'s group over `axes`, in group order.
  std::vector<int64_t> group(int64_t rank, const Axes &axes) const {
    std::vector<SubAxis> parts;
    for (StringRef a : axes)
      parts.push_back(*mesh.subAxis(a.str()));
    return mesh.group(rank, parts);
  }
  int64_t indexIn(int64_t rank, const Axes &axes) const {
    std::vector<int64_t> members = group(rank, axes);
    return std::find(members.begin(), members.end(), rank) - members.begin();
  }

  /// Executes `step` on every rank's buffer.
  void run(const ReshardStep &step, std::vector<Buffer> &buffers) const {
    if (step.padTo != -1)
      for (Buffer &b : buffers)
        b = b.slice(step.dim, 0, step.padTo);
    std::vector<Buffer> out(size());
    for (int64_t r = 0; r < size(); ++r) {
      std::vector<int64_t> members = group(r, step.axes);
      int64_t n = members.size(), me = indexIn(r, step.axes);
      auto sum = [&]() {
        Buffer total = buffers[members[0]];
        for (int64_t m = 1; m < n; ++m)
          for (size_t i = 0; i < total.data.size(); ++i)
            total.data[i] += buffers[members[m]].data[i];
        return total;
      };
      auto chunk = [&](const Buffer &b, int64_t d, int64_t i) {
        int64_t size = b.shape[d] / n;
        EXPECT_EQ(size * n, b.shape[d]) << "uneven chunks";
        return b.slice(d, i * size, size);
      };
      switch (step.kind) {
      case CollectiveKind::AllReduce:
        out[r] = sum();
        break;
      case CollectiveKind::ReduceScatter:
        out[r] = chunk(sum(), step.dim, me);
        break;
      case CollectiveKind::AllGather: {
        std::vector<Buffer> parts;
        for (int64_t m : members)
          parts.push_back(buffers[m]);
        out[r] = Buffer::concat(parts, step.dim);
        break;
      }
      case CollectiveKind::AllToAll: {
        std::vector<Buffer> parts;
        for (int64_t m : members)
          parts.push_back(chunk(buffers[m], step.dim, me));
        out[r] = Buffer::concat(parts, step.concatDim);
        break;
      }
      case CollectiveKind::AllSlice:
        out[r] = chunk(buffers[r], step.dim, me);
        break;
      default:
        ADD_FAILURE() << "unexpected " << stringifyCollectiveKind(step.kind).str();
      }
      EXPECT_EQ(out[r].shape,
                std::vector<int64_t>(step.resultShape.begin(), step.resultShape.end()))
          << stringifyCollectiveKind(step.kind).str() << " on rank " << r;
    }
    buffers = std::move(out);
    if (step.cutTo != -1)
      for (Buffer &b : buffers)
        b = b.slice(step.dim, 0, step.cutTo);
  }

private:
  const Mesh &mesh;
};

/// Every sharding of a rank-2 tensor on axes x and y: each axis unused,
/// pending or in either dimension (both in one dimension in either order).
std::vector<Sharding> allShardings(StringRef x = "x", StringRef y = "y") {
  std::vector<Sharding> all;
  // 0: unused, 1: dimension 0, 2: dimension 1, 3: pending.
  for (int px = 0; px < 4; ++px)
    for (int py = 0; py < 4; ++py)
      for (bool yFirst : {false, true}) {
        if (yFirst && !(px == py && (px == 1 || px == 2)))
          continue;
        Sharding s = makeSharding({{}, {}});
        auto place = [&](StringRef axis, int where) {
          if (where == 1 || where == 2)
            s.dims[where - 1].push_back(axis);
          else if (where == 3)
            s.pending.push_back(axis);
        };
        if (yFirst) {
          place(y, py);
          place(x, px);
        } else {
          place(x, px);
          place(y, py);
        }
        all.push_back(s);
      }
  return all;
}

/// The global tensor: element i is i + 1.
std::vector<double> globalTensor(ArrayRef<int64_t> shape) {
  std::vector<double> data(shape[0] * shape[1]);
  std::iota(data.begin(), data.end(), 1.0);
  return data;
}

/// Each rank's block of `global` under `s`; a pending sum is spread over
/// its group in unequal shares.
std::vector<Buffer> blocksOf(MeshAttr mesh, const Mesh &supportMesh, const Ranks &ranks,
                             ArrayRef<int64_t> shape, const std::vector<double> &global,
                             const Sharding &s) {
  std::vector<Buffer> out;
  DimAxes dims;
  std::vector<int64_t> local;
  std::vector<int64_t> parts;
  for (auto [d, axes] : llvm::enumerate(s.dims)) {
    dims.push_back({});
    for (StringRef a : axes)
      dims.back().push_back(a.str());
    int64_t n = s.partsOf(d);
    local.push_back(n * shardSize(shape[d] / n, devicesOf(mesh, axes)));
    parts.push_back(n);
  }
  for (int64_t r = 0; r < ranks.size(); ++r) {
    std::string error;
    std::optional<BlockLayout> layout = BlockLayout::decode(
        supportMesh, dims, local, std::vector<int64_t>(shape.begin(), shape.end()),
        ranks.coordinates(r), error, parts);
    EXPECT_TRUE(layout) << error;
    Buffer b{local, std::vector<double>(local[0] * local[1], 0.0)};
    layout->copyOut(global.data(), sizeof(double), b.data.data());
    if (!s.pending.empty()) {
      int64_t n = ranks.group(r, s.pending).size(), me = ranks.indexIn(r, s.pending);
      double share = double(me + 1) / double(n * (n + 1) / 2);
      for (double &v : b.data)
        v *= share;
    }
    out.push_back(std::move(b));
  }
  return out;
}

/// Each rank holds its block of the target (`want`) in `shape`; where the
/// target is still pending over `pending`, the sum over its group does.
void expectTargetBlocks(const Ranks &ranks, const std::vector<Buffer> &buffers,
                        const std::vector<Buffer> &want, const std::vector<int64_t> &shape,
                        ArrayRef<StringRef> pending) {
  for (int64_t r = 0; r < ranks.size(); ++r) {
    ASSERT_EQ(buffers[r].shape, shape) << "rank " << r;
    std::vector<double> have = buffers[r].data;
    if (!pending.empty()) {
      std::fill(have.begin(), have.end(), 0.0);
      for (int64_t m : ranks.group(r, Axes(pending)))
        for (size_t i = 0; i < have.size(); ++i)
          have[i] += buffers[m].data[i];
    }
    for (size_t i = 0; i < have.size(); ++i)
      ASSERT_NEAR(have[i], want[r].data[i], 1e-9) << "rank " << r << " element " << i;
  }
}

class ReshardPlannerTest : public ::testing::TestWithParam<std::vector<int64_t>> {
protected:
  void SetUp() override { loadDialects(context); }
  MLIRContext context;
};

/// What checkEveryPair saw.
struct PairCounts {
  int planned = 0;
  /// Collective steps over a sub-axis.
  int overParts = 0;
};

/// Plans every pair of `all` (shardings of a tensor of `shape` on `mesh`),
/// runs each plan on the ranks of `supportMesh` (the same mesh), and checks
/// that every rank ends with its block of the target.
void checkEveryPair(MLIRContext &context, MeshAttr mesh, const Mesh &supportMesh,
                    const std::vector<int64_t> &shape, const std::vector<Sharding> &all,
                    PairCounts &counts) {
  Ranks ranks(supportMesh);
  auto type = RankedTensorType::get(shape, Float64Type::get(&context));
  std::vector<double> global = globalTensor(shape);
  for (const Sharding &from : all)
    for (const Sharding &to : all) {
      SCOPED_TRACE(describe(from) + " -> " + describe(to));
      std::string why;
      std::optional<ReshardPlan> plan = planReshard(mesh, type, from, to, why);
      bool pendingGrows = llvm::any_of(
          to.pending, [&](StringRef a) { return !llvm::is_contained(from.pending, a); });
      if (pendingGrows) {
        EXPECT_FALSE(plan);
        EXPECT_EQ(why, "a full value cannot become a pending sum");
        continue;
      }
      ASSERT_TRUE(plan) << why;
      ++counts.planned;
      if (from == to)
        EXPECT_TRUE(plan->steps.empty());
      for (const ReshardStep &step : plan->steps)
        counts.overParts +=
            llvm::any_of(step.axes, [&](StringRef a) { return mesh.axisIndex(a) < 0; });
      std::vector<Buffer> buffers = blocksOf(mesh, supportMesh, ranks, shape, global, from);
      for (const ReshardStep &step : plan->steps)
        ranks.run(step, buffers);
      ASSERT_FALSE(plan->steps.empty() && from != to);
      if (!plan->steps.empty())
        EXPECT_EQ(plan->steps.back().after, to);
      // Each rank holds its block of the target; where the target is
      // still pending, the sum over its group does.
      RankedTensorType local = localType(mesh, type, to);
      expectTargetBlocks(
          ranks, buffers, blocksOf(mesh, supportMesh, ranks, shape, global, Sharding{to.dims, {}}),
          std::vector<int64_t>(local.getShape().begin(), local.getShape().end()), to.pending);
    }
}

TEST_P(ReshardPlannerTest, EveryPairOnTwoByTwo) {
  MeshAttr mesh = parseMesh(context, "x = 2, y = 2");
  std::string error;
  std::optional<Mesh> supportMesh = Mesh::parse("x=2,y=2", "y,x", error);
  ASSERT_TRUE(supportMesh) << error;
  std::vector<Sharding> all = allShardings();
  ASSERT_EQ(all.size(), 18u);
  PairCounts counts;
  checkEveryPair(context, mesh, *supportMesh, GetParam(), all, counts);
  EXPECT_GT(counts.planned, 150);
}

// The halves of a tp of 4 as two axes: every pair of shardings over its
// major half tp:(1)2 and minor half tp:(2)2, and with tp whole. Collectives
// run over sub-axes; each plan, run on the 4 ranks, gives every rank its
// block of the target.
TEST_P(ReshardPlannerTest, SubAxesOfATpOfFour) {
  MeshAttr mesh = parseMesh(context, "tp = 4");
  std::string error;
  std::optional<Mesh> supportMesh = Mesh::parse("tp=4", "", error);
  ASSERT_TRUE(supportMesh) << error;
  std::vector<Sharding> all = allShardings("tp:(1)2", "tp:(2)2");
  all.push_back(makeSharding({{"tp"}, {}}));
  all.push_back(makeSharding({{}, {"tp"}}));
  all.push_back(makeSharding({{}, {}}, {"tp"}));
  PairCounts counts;
  checkEveryPair(context, mesh, *supportMesh, GetParam(), all, counts);
  EXPECT_GT(counts.planned, 150);
  EXPECT_GT(counts.overParts, 100);
}

/// The shape of `shape` in a plan's view, where a dimension of parts is
/// two: [parts, the rest].
std::vector<int64_t> inView(const std::vector<int64_t> &shape, ArrayRef<int64_t> partsView) {
  if (partsView.empty())
    return shape;
  std::vector<int64_t> view;
  for (auto [d, n] : llvm::enumerate(partsView)) {
    if (n != 1)
      view.push_back(n);
    view.push_back(shape[d] / n);
  }
  return view;
}

// A matrix whose columns are 2 parts (a fused weight of two projections):
// every pair of shardings with and without the parts on the columns. The
// plans move each part's blocks in the view [parts, the rest]; a change of
// parts while the columns stay split is refused.
TEST_P(ReshardPlannerTest, FusedPartsMoveInTheirView) {
  std::vector<int64_t> shape = GetParam();
  if (shape[1] % 2 != 0)
    GTEST_SKIP() << "columns of two parts need an even width";
  MeshAttr mesh = parseMesh(context, "x = 2, y = 2");
  std::string error;
  std::optional<Mesh> supportMesh = Mesh::parse("x=2,y=2", "y,x", error);
  ASSERT_TRUE(supportMesh) << error;
  Ranks ranks(*supportMesh);
  auto type = RankedTensorType::get(shape, Float64Type::get(&context));
  std::vector<double> global = globalTensor(shape);
  std::vector<Sharding> all;
  for (Sharding s : allShardings()) {
    all.push_back(s);
    if (!s.dims[1].empty()) {
      s.setParts(1, 2);
      all.push_back(s);
    }
  }
  int planned = 0, refused = 0;
  for (const Sharding &from : all)
    for (const Sharding &to : all) {
      if (!from.hasParts() && !to.hasParts())
        continue; // EveryPairOnTwoByTwo
      SCOPED_TRACE(describe(from) + " -> " + describe(to));
      std::string why;
      std::optional<ReshardPlan> plan = planReshard(mesh, type, from, to, why);
      if (!plan) {
        bool pendingGrows = llvm::any_of(
            to.pending, [&](StringRef a) { return !llvm::is_contained(from.pending, a); });
        bool partsChangeWhileSplit =
            from.partsOf(1) != to.partsOf(1) && !from.dims[1].empty() && !to.dims[1].empty();
        EXPECT_TRUE(pendingGrows || partsChangeWhileSplit) << why;
        if (partsChangeWhileSplit && !pendingGrows)
          EXPECT_EQ(why, "dimension 1 would change from " + std::to_string(from.partsOf(1)) +
                             " parts to " + std::to_string(to.partsOf(1)) + " while split");
        ++refused;
        continue;
      }
      ++planned;
      std::vector<Buffer> buffers = blocksOf(mesh, *supportMesh, ranks, shape, global, from);
      for (Buffer &b : buffers)
        b.shape = inView(b.shape, plan->partsView);
      for (const ReshardStep &step : plan->steps)
        ranks.run(step, buffers);
      RankedTensorType local = localType(mesh, type, to);
      std::vector<int64_t> localShape(local.getShape().begin(), local.getShape().end());
      expectTargetBlocks(
          ranks, buffers,
          blocksOf(mesh, *supportMesh, ranks, shape, global, Sharding{to.dims, {}, to.parts}),
          inView(localShape, plan->partsView), to.pending);
    }
  EXPECT_GT(planned, 100);
  EXPECT_GT(refused, 0);
}

INSTANTIATE_TEST_SUITE_P(EvenAndPadded, ReshardPlannerTest,
                         ::testing::Values(std::vector<int64_t>{4, 8}, std::vector<int64_t>{5, 6}));

// The plans pmlir's recipes rely on, step by step, with their bytes and
// their cost on the shared model.
class ReshardPlanShapes : public ::testing::Test {
protected:
  void SetUp() override { loadDialects(context); }
  MLIRContext context;
};

TEST_F(ReshardPlanShapes, PendingSumReduceScattersAlongTheTargetSplit) {
  MeshAttr mesh = parseMesh(context, "dp = 2, tp = 2");
  auto type = RankedTensorType::get({2, 16, 64}, Float32Type::get(&context));
  std::string why;
  // Sequence parallelism: a row-parallel output pending over tp, wanted
  // split on the sequence: one reduce_scatter, no all_reduce.
  std::optional<ReshardPlan> plan = planReshard(mesh, type, makeSharding({{"dp"}, {}, {}}, {"tp"}),
                                                makeSharding({{"dp"}, {"tp"}, {}}), why);
  ASSERT_TRUE(plan) << why;
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, CollectiveKind::ReduceScatter);
  EXPECT_EQ(plan->steps[0].dim, 1);
  EXPECT_EQ(plan->steps[0].bytes, 1 * 16 * 64 * 4);
  EXPECT_EQ(plan->steps[0].resultShape, llvm::SmallVector<int64_t>({1, 8, 64}));
  // Its cost is half an all_reduce's bytes.
  std::optional<ReshardPlan> allReduce = planReshard(
      mesh, type, makeSharding({{"dp"}, {}, {}}, {"tp"}), makeSharding({{"dp"}, {}, {}}), why);
  ASSERT_TRUE(allReduce) << why;
  ASSERT_EQ(allReduce->steps.size(), 1u);
  EXPECT_EQ(allReduce->steps[0].kind, CollectiveKind::AllReduce);
  CostModel model;
  EXPECT_EQ(plan->cost(model).wireBytes * 2, allReduce->cost(model).wireBytes);
}

TEST_F(ReshardPlanShapes, UnevenGatherCutsItsPadding) {
  MeshAttr mesh = parseMesh(context, "tp = 4");
  auto type = RankedTensorType::get({6, 8}, Float32Type::get(&context));
  std::string why;
  std::optional<ReshardPlan> plan =
      planReshard(mesh, type, makeSharding({{"tp"}, {}}), makeSharding({{}, {}}), why);
  ASSERT_TRUE(plan) << why;
  ASSERT_EQ(plan->steps.size(), 1u);
  // Shards of 2 rows gather to 8, cut to 6.
  EXPECT_EQ(plan->steps[0].kind, CollectiveKind::AllGather);
  EXPECT_EQ(plan->steps[0].resultShape, llvm::SmallVector<int64_t>({8, 8}));
  EXPECT_EQ(plan->steps[0].cutTo, 6);
}

TEST_F(ReshardPlanShapes, RefusesWhatCollectivesCannotDo) {
  MeshAttr mesh = parseMesh(context, "tp = 4");
  auto type = RankedTensorType::get({8, 8}, Float32Type::get(&context));
  std::string why;
  EXPECT_FALSE(
      planReshard(mesh, type, makeSharding({{}, {}}), makeSharding({{}, {}}, {"tp"}), why));
  EXPECT_EQ(why, "a full value cannot become a pending sum");
}

TEST_F(ReshardPlanShapes, SubAxesAreGroupsOfTheirOwn) {
  // Two kv heads on a tp of 4 hold half a head each ([tp] on the heads'
  // features); a head whole on each pair of ranks is one all_gather over
  // the minor half, in groups of 2, and a sum over the minor half is one
  // all_reduce over it.
  MeshAttr mesh = parseMesh(context, "tp = 4");
  auto type = RankedTensorType::get({2, 8}, Float32Type::get(&context));
  std::string why;
  std::optional<ReshardPlan> plan = planReshard(
      mesh, type, makeSharding({{"tp:(1)2"}, {"tp:(2)2"}}), makeSharding({{"tp:(1)2"}, {}}), why);
  ASSERT_TRUE(plan) << why;
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, CollectiveKind::AllGather);
  EXPECT_EQ(plan->steps[0].axes, Axes({"tp:(2)2"}));
  EXPECT_EQ(plan->steps[0].groupSize, 2);
  EXPECT_EQ(plan->steps[0].resultShape, llvm::SmallVector<int64_t>({1, 8}));
  plan = planReshard(mesh, type, makeSharding({{}, {}}, {"tp:(2)2"}), makeSharding({{}, {}}), why);
  ASSERT_TRUE(plan) << why;
  ASSERT_EQ(plan->steps.size(), 1u);
  EXPECT_EQ(plan->steps[0].kind, CollectiveKind::AllReduce);
  EXPECT_EQ(plan->steps[0].groupSize, 2);
}

} // namespace
