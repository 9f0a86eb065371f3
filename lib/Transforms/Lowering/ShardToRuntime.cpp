//===- ShardToRuntime.cpp - shard collectives as pmlir_rt_* calls ---------===//
//
// Part of pmlir.
//
// A collective on a tensor becomes: the tensor flattened and taken as a
// buffer, a fresh result buffer, a call of the runtime entry point for its
// element type with the ordered grid axes as a constant memref, and the
// result buffer taken back as a tensor. Grid axis i is mesh axis i of
// pmlir-run's --mesh. Collectives not handled here are refused by name;
// grids left without users are erased.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Transforms/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"

namespace pmlir {
#define GEN_PASS_DEF_LOWERSHARDTORUNTIME
#include "pmlir/Transforms/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The runtime's suffix for an element type, or "" if it has none.
std::string typeSuffix(Type t) {
  if (t.isF32())
    return "f32";
  if (t.isF64())
    return "f64";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(64))
    return "i64";
  return "";
}

/// pmlir_rt_reduction's value, or -1.
int runtimeReduction(shard::ReductionKind kind) {
  switch (kind) {
  case shard::ReductionKind::Sum: return 0;
  case shard::ReductionKind::Max: return 1;
  case shard::ReductionKind::Min: return 2;
  case shard::ReductionKind::Product: return 3;
  default: return -1;
  }
}

MemRefType dynamic1D(Type element) {
  return MemRefType::get({ShapedType::kDynamic}, element);
}

struct Lowering {
  ModuleOp module;
  SymbolTable symbols;
  explicit Lowering(ModuleOp m) : module(m), symbols(m) {}

  /// A private constant global holding `axes`, shared by equal lists.
  Value axesMemRef(OpBuilder &b, Location loc, ArrayRef<shard::GridAxis> axes) {
    std::string name = "pmlir_grid_axes";
    for (shard::GridAxis a : axes)
      name += "_" + std::to_string(a);
    auto type = MemRefType::get({int64_t(axes.size())}, b.getI64Type());
    if (!symbols.lookup(name)) {
      OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
      SmallVector<int64_t> values(axes.begin(), axes.end());
      auto init = DenseElementsAttr::get(
          RankedTensorType::get({int64_t(axes.size())}, b.getI64Type()),
          ArrayRef<int64_t>(values));
      auto global = memref::GlobalOp::create(top, loc, name, top.getStringAttr("private"),
                                             type, init, /*constant=*/true,
                                             /*alignment=*/nullptr);
      symbols.insert(global);
    }
    Value g = memref::GetGlobalOp::create(b, loc, type, name);
    return memref::CastOp::create(b, loc, dynamic1D(b.getI64Type()), g);
  }

  void declare(OpBuilder &b, Location loc, StringRef name, FunctionType type) {
    if (symbols.lookup(name))
      return;
    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    auto fn = func::FuncOp::create(top, loc, name, type);
    fn.setPrivate();
    fn->setAttr("llvm.emit_c_interface", top.getUnitAttr());
    symbols.insert(fn);
  }

  LogicalResult lower(shard::AllReduceOp op) {
    auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
    auto out = dyn_cast<RankedTensorType>(op.getResult().getType());
    if (!in || !out || !in.hasStaticShape())
      return op.emitOpError("is lowered for tensors of static shape only");
    Type element = in.getElementType();
    std::string suffix = typeSuffix(element);
    if (suffix.empty() || out.getElementType() != element)
      return op.emitOpError("is lowered for f32, f64, i32 and i64 with the same "
                            "input and result element type, got ")
             << in << " -> " << out;
    int reduction = runtimeReduction(op.getReduction());
    if (reduction < 0)
      return op.emitOpError("reduction '")
             << shard::stringifyReductionKind(op.getReduction())
             << "' is not lowered (sum, max, min and product are)";

    OpBuilder b(op);
    Location loc = op.getLoc();
    int64_t n = in.getNumElements();
    auto flatType = RankedTensorType::get({n}, element);
    Value flat = op.getInput();
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < in.getRank(); ++d)
      all[0].push_back(d);
    if (in.getRank() != 1)
      flat = in.getRank() == 0
                 ? tensor::ExpandShapeOp::create(b, loc, flatType, flat,
                                                 ArrayRef<ReassociationIndices>{})
                       .getResult()
                 : tensor::CollapseShapeOp::create(b, loc, flat, all).getResult();
    auto bufferType = MemRefType::get({n}, element);
    Value inBuffer = bufferization::ToBufferOp::create(b, loc, bufferType, flat,
                                                       /*read_only=*/true);
    Value outBuffer = memref::AllocOp::create(b, loc, bufferType);
    Value axes = axesMemRef(b, loc, op.getGridAxes());
    Value code = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(reduction));
    std::string name = "pmlir_rt_all_reduce_" + suffix;
    SmallVector<Value> args = {memref::CastOp::create(b, loc, dynamic1D(element), inBuffer),
                               memref::CastOp::create(b, loc, dynamic1D(element), outBuffer),
                               axes, code};
    declare(b, loc, name, b.getFunctionType(ValueRange(args).getTypes(), {}));
    func::CallOp::create(b, loc, name, TypeRange{}, args);
    Value result = bufferization::ToTensorOp::create(b, loc, flatType, outBuffer,
                                                     /*restrict=*/true, /*writable=*/true);
    if (in.getRank() == 0)
      result = tensor::CollapseShapeOp::create(b, loc, out, result,
                                               ArrayRef<ReassociationIndices>{});
    else if (in.getRank() != 1)
      result = tensor::ExpandShapeOp::create(b, loc, out, result, all);
    op.replaceAllUsesWith(result);
    op.erase();
    return success();
  }
};

struct LowerShardToRuntimePass
    : public pmlir::impl::LowerShardToRuntimeBase<LowerShardToRuntimePass> {
  void runOnOperation() override {
    Lowering lowering(getOperation());
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<shard::ShardDialect>(op->getDialect()) &&
          !isa<shard::GridOp, shard::ShardingOp, shard::ShardOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      LogicalResult done = failure();
      if (auto allReduce = dyn_cast<shard::AllReduceOp>(op))
        done = lowering.lower(allReduce);
      else
        op->emitOpError("is not lowered to the runtime yet (shard.all_reduce is)");
      if (failed(done))
        return signalPassFailure();
    }
    // The grids have served: collectives name their axes by index now.
    for (auto grid : llvm::make_early_inc_range(getOperation().getOps<shard::GridOp>()))
      if (SymbolTable::symbolKnownUseEmpty(grid, getOperation()))
        grid.erase();
  }
};

} // namespace
