//===- ReshardPlanner.cpp - The collectives of a change of sharding ------===//
//
// Part of pmlir.
//
// A dry run of pmlir/Sharding/Reshard.h's plan: the steps and their shapes,
// no IR.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Reshard.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace pmlir::sharding;

namespace {

struct Planner {
  Planner(MeshAttr mesh, RankedTensorType global) : mesh(mesh), global(global) {}

  MeshAttr mesh;
  RankedTensorType global;
  ReshardPlan plan;

  int64_t width() const { return std::max<int64_t>(1, global.getElementTypeBitWidth() / 8); }
  int64_t bytesOf(ArrayRef<int64_t> shape) const {
    int64_t n = width();
    for (int64_t s : shape)
      n *= s;
    return n;
  }
  SmallVector<int64_t> localShape(const Sharding &s) const {
    return SmallVector<int64_t>(localType(mesh, global, s).getShape());
  }
  bool padded(int64_t d, ArrayRef<StringRef> axes) const {
    return global.getShape()[d] % devicesOf(mesh, axes) != 0;
  }
  int64_t paddedSize(int64_t d, ArrayRef<StringRef> axes) const {
    int64_t devices = devicesOf(mesh, axes);
    return devices * pmlir::shardSize(global.getShape()[d], devices);
  }

  ReshardStep &add(CollectiveKind kind, ArrayRef<StringRef> axes, int64_t dim,
                   const Sharding &after) {
    ReshardStep step;
    step.kind = kind;
    step.axes = Axes(axes);
    step.dim = dim;
    step.after = after;
    step.resultShape = localShape(after);
    step.groupSize = devicesOf(mesh, axes);
    plan.steps.push_back(std::move(step));
    return plan.steps.back();
  }

  static bool isPrefix(ArrayRef<StringRef> a, ArrayRef<StringRef> b) {
    return a.size() <= b.size() && a == b.take_front(a.size());
  }

  bool run(const Sharding &from, const Sharding &to, std::string &error);
};

bool Planner::run(const Sharding &from, const Sharding &to, std::string &error) {
  plan.from = from;
  plan.to = to;
  for (StringRef a : to.pending)
    if (!llvm::is_contained(from.pending, a)) {
      error = "a full value cannot become a pending sum";
      return false;
    }
  Sharding cur = from;

  // Pending sums: reduce-scatter along dimensions the target splits over
  // the reduced axes, all-reduce the rest.
  Axes reduce;
  for (StringRef a : cur.pending)
    if (!llvm::is_contained(to.pending, a))
      reduce.push_back(a);
  for (auto [d, want] : llvm::enumerate(to.dims)) {
    if (!isPrefix(cur.dims[d], want))
      continue;
    Axes scatter;
    for (StringRef a : ArrayRef(want).drop_front(cur.dims[d].size())) {
      if (!llvm::is_contained(reduce, a))
        break;
      scatter.push_back(a);
    }
    if (scatter.empty())
      continue;
    // An uneven scatter pads the full dimension first; a dimension already
    // split goes through all_reduce and the gathers below.
    Axes split = cur.dims[d];
    llvm::append_range(split, scatter);
    int64_t padTo = -1;
    if (padded(d, split)) {
      if (!cur.dims[d].empty())
        continue;
      padTo = paddedSize(d, split);
    }
    SmallVector<int64_t> input = localShape(cur);
    if (padTo != -1)
      input[d] = padTo;
    cur.dims[d] = split;
    llvm::erase_if(cur.pending, [&](StringRef a) { return llvm::is_contained(scatter, a); });
    llvm::erase_if(reduce, [&](StringRef a) { return llvm::is_contained(scatter, a); });
    ReshardStep &step = add(CollectiveKind::ReduceScatter, scatter, d, cur);
    step.padTo = padTo;
    step.bytes = bytesOf(input);
  }
  if (!reduce.empty()) {
    llvm::erase_if(cur.pending, [&](StringRef a) { return llvm::is_contained(reduce, a); });
    ReshardStep &step = add(CollectiveKind::AllReduce, reduce, 0, cur);
    step.bytes = bytesOf(step.resultShape);
  }

  // An axis at the minor end of one dimension that the target appends to
  // another moves there in one all_to_all.
  for (bool moved = true; moved;) {
    moved = false;
    for (size_t src = 0; src < cur.dims.size() && !moved; ++src) {
      if (cur.dims[src].empty() || isPrefix(cur.dims[src], to.dims[src]))
        continue;
      StringRef a = cur.dims[src].back();
      for (size_t dst = 0; dst < cur.dims.size(); ++dst) {
        if (dst == src || !isPrefix(cur.dims[dst], to.dims[dst]) ||
            to.dims[dst].size() == cur.dims[dst].size() || to.dims[dst][cur.dims[dst].size()] != a)
          continue;
        Axes srcAfter(ArrayRef(cur.dims[src]).drop_back()), dstAfter = cur.dims[dst];
        dstAfter.push_back(a);
        if (padded(src, cur.dims[src]) || padded(src, srcAfter) || padded(dst, cur.dims[dst]) ||
            padded(dst, dstAfter))
          continue; // padded shards move by gathering and slicing
        int64_t bytes = bytesOf(localShape(cur));
        cur.dims[src].pop_back();
        cur.dims[dst].push_back(a);
        ReshardStep &step = add(CollectiveKind::AllToAll, {a}, dst, cur);
        step.concatDim = src;
        step.bytes = bytes;
        moved = true;
        break;
      }
    }
  }

  // Axes leaving a dimension are gathered, axes joining it sliced. A padded
  // dimension that changes is gathered whole (and its padding cut off) and
  // sliced anew: shards of different sizes do not nest.
  for (auto [d, want] : llvm::enumerate(to.dims)) {
    size_t keep = 0;
    while (keep < cur.dims[d].size() && keep < want.size() && cur.dims[d][keep] == want[keep])
      ++keep;
    if (cur.dims[d] != want && (padded(d, cur.dims[d]) || padded(d, want)))
      keep = 0;
    if (keep == cur.dims[d].size())
      continue;
    Axes gathered(ArrayRef<StringRef>(cur.dims[d]).drop_front(keep));
    int64_t gatheredSize =
        paddedSize(d, cur.dims[d]) / devicesOf(mesh, ArrayRef(cur.dims[d]).take_front(keep));
    cur.dims[d].resize(keep);
    ReshardStep &step = add(CollectiveKind::AllGather, gathered, d, cur);
    if (step.resultShape[d] != gatheredSize) {
      step.cutTo = step.resultShape[d];
      step.resultShape[d] = gatheredSize;
    }
    step.bytes = bytesOf(step.resultShape);
  }
  for (auto [d, want] : llvm::enumerate(to.dims)) {
    if (cur.dims[d].size() == want.size())
      continue;
    Axes sliced(ArrayRef<StringRef>(want).drop_front(cur.dims[d].size()));
    int64_t padTo = padded(d, want) ? paddedSize(d, want) : -1;
    if (padTo == localShape(cur)[d])
      padTo = -1;
    cur.dims[d] = Axes(want);
    add(CollectiveKind::AllSlice, sliced, d, cur).padTo = padTo;
  }
  // Pending axes are a set: what is left pending over tp and dp is the sum
  // pending over dp and tp.
  if (cur.pending.size() == to.pending.size() &&
      std::is_permutation(cur.pending.begin(), cur.pending.end(), to.pending.begin()))
    cur.pending = to.pending;
  if (cur != to) {
    error = "";
    return false;
  }
  return true;
}

} // namespace

CollectiveCost ReshardPlan::cost(const CostModel &model) const {
  CollectiveCost total;
  for (const ReshardStep &step : steps)
    total += model.cost(step.kind, step.bytes, step.axes, step.groupSize);
  return total;
}

std::optional<ReshardPlan> pmlir::sharding::planReshard(MeshAttr mesh, RankedTensorType global,
                                                        const Sharding &from, const Sharding &to,
                                                        std::string &error) {
  if (!from.hasParts() && !to.hasParts()) {
    Planner planner(mesh, global);
    if (!planner.run(from, to, error))
      return std::nullopt;
    return std::move(planner.plan);
  }
  // A dimension made of parts becomes two in a view, [parts, the rest], the
  // parts unsplit: its blocks are then contiguous blocks of the rest, which
  // the plain planner moves. The other side must have the same parts, or
  // leave the dimension whole.
  int64_t rank = global.getRank();
  SmallVector<int64_t> parts(rank, 1), viewShape;
  Sharding viewFrom, viewTo;
  viewFrom.pending = from.pending;
  viewTo.pending = to.pending;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t p = from.partsOf(d), q = to.partsOf(d);
    if (p != q && !(p == 1 && from.dims[d].empty()) && !(q == 1 && to.dims[d].empty())) {
      error = "dimension " + std::to_string(d) + " would change from " + std::to_string(p) +
              " parts to " + std::to_string(q) + " while split";
      return std::nullopt;
    }
    parts[d] = std::max(p, q);
    int64_t size = global.getShape()[d];
    if (parts[d] == 1) {
      viewShape.push_back(size);
      viewFrom.dims.push_back(from.dims[d]);
      viewTo.dims.push_back(to.dims[d]);
      continue;
    }
    if (size % parts[d] != 0) {
      error = "dimension " + std::to_string(d) + " of " + std::to_string(size) +
              " elements is not made of " + std::to_string(parts[d]) + " equal parts";
      return std::nullopt;
    }
    viewShape.append({parts[d], size / parts[d]});
    viewFrom.dims.append({Axes{}, from.dims[d]});
    viewTo.dims.append({Axes{}, to.dims[d]});
  }
  Planner planner(mesh, global.clone(viewShape));
  if (!planner.run(viewFrom, viewTo, error))
    return std::nullopt;
  planner.plan.from = from;
  planner.plan.to = to;
  planner.plan.partsView = parts;
  return std::move(planner.plan);
}

RankedTensorType pmlir::sharding::localType(MeshAttr mesh, RankedTensorType global,
                                            const Sharding &sharding) {
  // A dimension of parts holds its block of each part.
  SmallVector<int64_t> shape(global.getShape());
  for (auto [d, axes] : llvm::enumerate(sharding.dims)) {
    int64_t parts = sharding.partsOf(d);
    shape[d] = parts * pmlir::shardSize(shape[d] / parts, devicesOf(mesh, axes));
  }
  return global.clone(shape);
}
