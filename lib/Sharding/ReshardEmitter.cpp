//===- ReshardEmitter.cpp - A reshard plan as shard collectives ----------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Sharding/Reshard.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace pmlir::sharding;
using pmlir::kGridName;

Value pmlir::sharding::resizeDim(OpBuilder &b, Location loc, Value v, int64_t d, int64_t size) {
  auto type = cast<RankedTensorType>(v.getType());
  SmallVector<int64_t> shape(type.getShape());
  if (shape[d] == size)
    return v;
  SmallVector<OpFoldResult> zeros(shape.size(), b.getIndexAttr(0)), high = zeros;
  high[d] = b.getIndexAttr(size - shape[d]);
  bool grow = shape[d] < size;
  shape[d] = size;
  auto resized = type.clone(shape);
  if (grow) {
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(type.getElementType()));
    return tensor::PadOp::create(b, loc, resized, v, zeros, high, zero);
  }
  SmallVector<OpFoldResult> offsets(shape.size(), b.getIndexAttr(0)),
      strides(shape.size(), b.getIndexAttr(1)), sizes;
  for (int64_t n : shape)
    sizes.push_back(b.getIndexAttr(n));
  return tensor::ExtractSliceOp::create(b, loc, resized, v, offsets, sizes, strides);
}

Value pmlir::sharding::emitReshard(OpBuilder &b, Location loc, Grid &grid, const ReshardPlan &plan,
                                   Value v) {
  auto localType = cast<RankedTensorType>(v.getType());
  auto elementType = localType.getElementType();
  // Dimensions of parts: into the plan's view, [parts, the rest], and back.
  SmallVector<ReassociationIndices> view;
  if (!plan.partsView.empty() && !plan.steps.empty()) {
    SmallVector<int64_t> viewShape;
    for (auto [d, parts] : llvm::enumerate(plan.partsView)) {
      view.emplace_back();
      if (parts != 1) {
        view.back().push_back(viewShape.size());
        viewShape.push_back(parts);
      }
      view.back().push_back(viewShape.size());
      viewShape.push_back(localType.getShape()[d] / parts);
    }
    v = tensor::ExpandShapeOp::create(b, loc, localType.clone(viewShape), v, view);
  }
  for (const ReshardStep &step : plan.steps) {
    if (step.padTo != -1)
      v = resizeDim(b, loc, v, step.dim, step.padTo);
    auto type = RankedTensorType::get(step.resultShape, elementType);
    SmallVector<int16_t> axes = grid.axesOf(step.axes);
    switch (step.kind) {
    case CollectiveKind::ReduceScatter:
      v = shard::ReduceScatterOp::create(b, loc, type, kGridName, axes, v,
                                         shard::ReductionKind::Sum, APInt(64, step.dim));
      break;
    case CollectiveKind::AllReduce:
      v = shard::AllReduceOp::create(b, loc, type, kGridName, axes, v, shard::ReductionKind::Sum);
      break;
    case CollectiveKind::AllToAll:
      v = shard::AllToAllOp::create(b, loc, type, kGridName, axes, v, APInt(64, step.dim),
                                    APInt(64, step.concatDim));
      break;
    case CollectiveKind::AllGather:
      v = shard::AllGatherOp::create(b, loc, type, kGridName, axes, v, APInt(64, step.dim));
      break;
    case CollectiveKind::AllSlice:
      v = shard::AllSliceOp::create(b, loc, type, v, kGridName, axes, step.dim);
      break;
    case CollectiveKind::Broadcast:
    case CollectiveKind::Send:
    case CollectiveKind::Recv:
      llvm_unreachable("a reshard plan has no point-to-point steps");
    }
    if (step.cutTo != -1)
      v = resizeDim(b, loc, v, step.dim, step.cutTo);
  }
  if (!view.empty()) {
    auto viewType = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape;
    for (const ReassociationIndices &dims : view) {
      int64_t n = 1;
      for (int64_t d : dims)
        n *= viewType.getShape()[d];
      shape.push_back(n);
    }
    v = tensor::CollapseShapeOp::create(b, loc, viewType.clone(shape), v, view);
  }
  return v;
}

Value pmlir::sharding::emitBlockIndex(OpBuilder &b, Location loc, Grid &grid,
                                      ArrayRef<StringRef> axes) {
  // The parts of `axes` are grid axes, major first: the block index is the
  // rank's linear index over them.
  SmallVector<int16_t> gridAxes = grid.axesOf(axes);
  auto multi = shard::ProcessMultiIndexOp::create(b, loc, kGridName, gridAxes);
  Value index;
  for (auto [a, coord] : llvm::zip(gridAxes, multi.getResults())) {
    if (!index) {
      index = coord;
      continue;
    }
    int64_t size = grid.parts()[a].size;
    Value scaled =
        arith::MulIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, size));
    index = arith::AddIOp::create(b, loc, scaled, coord);
  }
  if (!index)
    index = arith::ConstantIndexOp::create(b, loc, 0);
  return index;
}

Value pmlir::sharding::emitBlockStart(OpBuilder &b, Location loc, Grid &grid,
                                      ArrayRef<StringRef> axes, int64_t localSize, int64_t base) {
  Value index = emitBlockIndex(b, loc, grid, axes);
  Value start =
      arith::MulIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, localSize));
  if (base == 0)
    return start;
  return arith::AddIOp::create(b, loc, start, arith::ConstantIndexOp::create(b, loc, base));
}
