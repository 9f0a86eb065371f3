//===- ShardToRuntime.cpp - shard collectives as pmlir_rt_* calls ---------===//
//
// Part of pmlir.
//
// A collective on a tensor becomes: the tensor flattened and taken as a
// buffer, a fresh result buffer, a call of the runtime entry point for its
// element type with the ordered grid axes as a constant memref, and the
// result buffer taken back as a tensor. Grid axis i is mesh axis i of
// pmlir-run's --mesh, or where the grid lists its axes (tfm.grid_axes, a
// grid of sub-axes: pmlir/Sharding/Grid.h) the part of the module's
// tfm.mesh it names, which the runtime gets as its code (SubAxis::code).
// Each op is lowered by a rewrite pattern of its own (LowerToRuntime), over
// what they share (RuntimeCalls: the grids' codes, the declarations made);
// a new collective is one more `lower` and one more pattern. Ops not
// handled here (gather, scatter, reduce, shift, update_halo,
// neighbors_linear_indices) are refused by name before anything is
// lowered; grids left without users are erased. Expert parallelism's
// exchanges (tfm.moe_all_to_all and its inverse) are collectives of tfm's
// on the same grids, lowered here alike, and tfm.step_metric a call that
// hands the runtime a value to report.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

#include "pmlir/Dialect/Pipe/IR/Pipe.h"
#include "pmlir/Dialect/Tfm/IR/Tfm.h"
#include "pmlir/Runtime/RuntimeAbi.h"
#include "pmlir/Sharding/Grid.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "pmlir-lower-shard-to-runtime"

namespace pmlir {
#define GEN_PASS_DEF_LOWERSHARDTORUNTIME
#include "pmlir/Conversion/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

using pmlir::rt::abi::EntryId;

/// The runtime's suffix for an element type (the table spells suffixes as
/// MLIR spells the types), or "" if it has none.
std::string typeSuffix(Type t) {
  std::string text;
  llvm::raw_string_ostream os(text);
  t.print(os);
  for (const pmlir::rt::abi::DType &dtype : pmlir::rt::abi::dtypes())
    if (text == dtype.suffix)
      return text;
  return "";
}

/// pmlir_rt_reduction's value, or -1.
int runtimeReduction(shard::ReductionKind kind) {
  return pmlir::rt::abi::reductionCode(shard::stringifyReductionKind(kind).str()).value_or(-1);
}

MemRefType dynamic1D(Type element) { return MemRefType::get({ShapedType::kDynamic}, element); }

/// What the patterns of the lowering share: the module's symbols, the
/// runtime's codes of each grid's axes, the constants and declarations
/// made so far; and one `lower` for each op lowered.
struct RuntimeCalls {
  ModuleOp module;
  SymbolTable symbols;
  /// Per grid, the runtime's code of each of its axes.
  llvm::StringMap<SmallVector<int64_t>> axisCodes;
  /// Set once an op's lowering failed (after its diagnostic).
  bool anyFailed = false;
  explicit RuntimeCalls(ModuleOp m) : module(m), symbols(m) {}

  /// Reads every grid's axes; fails on a grid of sub-axes without the
  /// tfm.mesh they are parts of.
  LogicalResult readGrids() {
    auto mesh = module->getAttrOfType<pmlir::tfm::MeshAttr>(pmlir::tfm::kMeshAttr);
    for (auto grid : module.getOps<shard::GridOp>()) {
      SmallVector<int64_t> &codes = axisCodes[grid.getSymName()];
      if (!grid->hasAttr(pmlir::sharding::kGridAxesAttr)) {
        for (int64_t a = 0; a < grid.getRank(); ++a)
          codes.push_back(a);
        continue;
      }
      if (!mesh)
        return grid.emitOpError() << "lists its axes as parts of the mesh ("
                                  << pmlir::sharding::kGridAxesAttr
                                  << "), but the module has no tfm.mesh";
      FailureOr<pmlir::sharding::Grid> parts = pmlir::sharding::Grid::declaredBy(grid, mesh);
      if (failed(parts))
        return failure();
      for (const pmlir::SubAxis &part : parts->parts())
        codes.push_back(part.code(mesh.getSizes()[part.index]));
    }
    return success();
  }

  /// The codes of `axes` of grid `grid`.
  SmallVector<int64_t> codesOf(FlatSymbolRefAttr grid, ArrayRef<shard::GridAxis> axes) {
    auto it = axisCodes.find(grid.getValue());
    ArrayRef<int64_t> codes = it == axisCodes.end() ? ArrayRef<int64_t>() : it->second;
    SmallVector<int64_t> out;
    for (shard::GridAxis a : axes)
      out.push_back(a < int64_t(codes.size()) ? codes[a] : a);
    return out;
  }

  /// A private constant global holding the codes of `axes` of `grid`,
  /// shared by equal lists.
  Value axesMemRef(OpBuilder &b, Location loc, FlatSymbolRefAttr grid,
                   ArrayRef<shard::GridAxis> axes) {
    SmallVector<int64_t> values = codesOf(grid, axes);
    std::string name = "pmlir_grid_axes";
    for (int64_t code : values)
      name += "_" + std::to_string(code);
    auto type = MemRefType::get({int64_t(axes.size())}, b.getI64Type());
    if (!symbols.lookup(name)) {
      OpBuilder top = OpBuilder::atBlockBegin(module.getBody());
      auto init = DenseElementsAttr::get(
          RankedTensorType::get({int64_t(axes.size())}, b.getI64Type()), ArrayRef<int64_t>(values));
      auto global = memref::GlobalOp::create(top, loc, name, top.getStringAttr("private"), type,
                                             init, /*constant=*/true,
                                             /*alignment=*/nullptr);
      symbols.insert(global);
    }
    Value g = memref::GetGlobalOp::create(b, loc, type, name);
    return memref::CastOp::create(b, loc, dynamic1D(b.getI64Type()), g);
  }

  /// Declares runtime function `name`; with `cInterface` its memref
  /// arguments travel as descriptors (`_mlir_ciface_<name>`).
  void declare(OpBuilder &b, Location loc, StringRef name, FunctionType type,
               bool cInterface = true) {
    if (symbols.lookup(name))
      return;
    OpBuilder top = OpBuilder::atBlockEnd(module.getBody());
    auto fn = func::FuncOp::create(top, loc, name, type);
    fn.setPrivate();
    if (cInterface)
      fn->setAttr("llvm.emit_c_interface", top.getUnitAttr());
    symbols.insert(fn);
  }

  /// `tensor` flattened and taken as a read-only buffer, cast to memref<?xT>.
  Value flatBuffer(OpBuilder &b, Location loc, Value tensor) {
    auto type = cast<RankedTensorType>(tensor.getType());
    int64_t n = type.getNumElements();
    auto flatType = RankedTensorType::get({n}, type.getElementType());
    if (type.getRank() == 0)
      tensor =
          tensor::ExpandShapeOp::create(b, loc, flatType, tensor, ArrayRef<ReassociationIndices>{});
    else if (type.getRank() != 1)
      tensor = tensor::CollapseShapeOp::create(b, loc, tensor, allDims(type.getRank()));
    Value buffer = bufferization::ToBufferOp::create(
        b, loc, MemRefType::get({n}, type.getElementType()), tensor, /*read_only=*/true);
    return memref::CastOp::create(b, loc, dynamic1D(type.getElementType()), buffer);
  }

  static SmallVector<ReassociationIndices> allDims(int64_t rank) {
    SmallVector<ReassociationIndices> all(1);
    for (int64_t d = 0; d < rank; ++d)
      all[0].push_back(d);
    return all;
  }

  /// A fresh flat buffer of `type`'s size for the runtime to write.
  static Value resultBuffer(OpBuilder &b, Location loc, RankedTensorType type) {
    return memref::AllocOp::create(b, loc,
                                   MemRefType::get({type.getNumElements()}, type.getElementType()));
  }

  static Value dynamicView(OpBuilder &b, Location loc, Value buffer) {
    Type element = cast<MemRefType>(buffer.getType()).getElementType();
    return memref::CastOp::create(b, loc, dynamic1D(element), buffer);
  }

  /// The tensor of `type` that `buffer` holds once the runtime wrote it.
  static Value tensorOf(OpBuilder &b, Location loc, Value buffer, RankedTensorType type) {
    int64_t n = type.getNumElements();
    Value tensor = bufferization::ToTensorOp::create(
        b, loc, RankedTensorType::get({n}, type.getElementType()), buffer,
        /*restrict=*/true, /*writable=*/true);
    if (type.getRank() == 0)
      return tensor::CollapseShapeOp::create(b, loc, type, tensor,
                                             ArrayRef<ReassociationIndices>{});
    if (type.getRank() != 1)
      return tensor::ExpandShapeOp::create(b, loc, type, tensor, allDims(type.getRank()));
    return tensor;
  }

  /// The MLIR type of a parameter or result kind of the ABI table, on
  /// elements `element`.
  static Type abiType(OpBuilder &b, pmlir::rt::abi::Kind kind, Type element) {
    switch (kind) {
    case pmlir::rt::abi::BUFFER:
      return dynamic1D(element);
    case pmlir::rt::abi::AXES:
    case pmlir::rt::abi::COUNTS:
      return dynamic1D(b.getI64Type());
    case pmlir::rt::abi::I32:
      return b.getI32Type();
    case pmlir::rt::abi::I64:
      return b.getI64Type();
    case pmlir::rt::abi::PTR:
    case pmlir::rt::abi::VOID:
      break;
    }
    return Type();
  }

  /// Calls runtime entry `id` (on elements `element` for a typed entry),
  /// declared with the types RuntimeAbi.def gives it.
  func::CallOp call(OpBuilder &b, Location loc, EntryId id, ValueRange args,
                    Type element = Type()) {
    const pmlir::rt::abi::Entry &entry = pmlir::rt::abi::entry(id);
    std::string name =
        pmlir::rt::abi::symbolName(id, element ? typeSuffix(element) : std::string());
    SmallVector<Type> params, results;
    for (pmlir::rt::abi::Kind kind : entry.params)
      params.push_back(abiType(b, kind, element));
    if (entry.result != pmlir::rt::abi::VOID)
      results.push_back(abiType(b, entry.result, element));
    assert(TypeRange(params) == args.getTypes() && "arguments disagree with RuntimeAbi.def");
    declare(b, loc, name, b.getFunctionType(params, results), entry.cInterface);
    return func::CallOp::create(b, loc, name, results, args);
  }

  /// The tag of a point-to-point message: shard.send and shard.recv carry
  /// none, so their messages match in program order under tag 0, unless
  /// pmlir-pipeline-lower gave them one (`pipe.tag`, a transfer's number).
  static Value messageTag(OpBuilder &b, Operation *op) {
    auto tag = op->getAttrOfType<IntegerAttr>(pmlir::sharding::kMessageTagAttr);
    return arith::ConstantOp::create(b, op->getLoc(), b.getI64IntegerAttr(tag ? tag.getInt() : 0));
  }

  /// Permutes `tensor`'s dimensions so that result dim i is input dim perm[i].
  static Value permute(OpBuilder &b, Location loc, Value tensor, ArrayRef<int64_t> perm) {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<int64_t> shape;
    for (int64_t p : perm)
      shape.push_back(type.getShape()[p]);
    Value init = tensor::EmptyOp::create(b, loc, shape, type.getElementType());
    return linalg::TransposeOp::create(b, loc, tensor, init, perm).getResult()[0];
  }

  /// Number of processes in a group over `axes` of the op's grid, or an
  /// error on the op.
  FailureOr<int64_t> groupSize(Operation *op, FlatSymbolRefAttr gridName,
                               ArrayRef<shard::GridAxis> axes) {
    auto grid = symbols.lookup<shard::GridOp>(gridName.getValue());
    if (!grid || ShapedType::isDynamicShape(grid.getShape()))
      return op->emitOpError("needs a grid of static shape");
    int64_t n = 1;
    for (shard::GridAxis a : axes)
      n *= grid.getShape()[a];
    return n;
  }

  /// A collective's operand and result types and its runtime type suffix.
  struct Typed {
    RankedTensorType in, out;
    std::string suffix;
  };

  /// The types of `input` -> `result`, or an error on the op when the
  /// runtime has no entry for them.
  FailureOr<Typed> typedFor(Operation *op, Value input, Value result) {
    auto in = dyn_cast<RankedTensorType>(input.getType());
    auto out = dyn_cast<RankedTensorType>(result.getType());
    if (!in || !out || !in.hasStaticShape() || !out.hasStaticShape())
      return op->emitOpError("is lowered for tensors of static shape only");
    std::string suffix = typeSuffix(in.getElementType());
    if (suffix.empty() || out.getElementType() != in.getElementType())
      return op->emitOpError("is lowered for f32, f64, i32, i64, bf16 and f16 with the same "
                             "input and result element type, got ")
             << in << " -> " << out;
    return Typed{in, out, suffix};
  }

  FailureOr<int> reductionFor(Operation *op, shard::ReductionKind kind) {
    int reduction = runtimeReduction(kind);
    if (reduction < 0)
      return op->emitOpError("reduction '") << shard::stringifyReductionKind(kind)
                                            << "' is not lowered (sum, max, min and product are)";
    return reduction;
  }

  /// Calls reducing runtime entry `name` on the flat buffer `input` and
  /// replaces `op` with the `out`-typed tensor it writes.
  void replaceWithReduction(Operation *op, PatternRewriter &b, EntryId id, Value input,
                            RankedTensorType out, FlatSymbolRefAttr grid,
                            ArrayRef<shard::GridAxis> axes, int reduction) {
    Location loc = op->getLoc();
    Value buffer = resultBuffer(b, loc, out);
    Value code = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(reduction));
    call(b, loc, id, {input, dynamicView(b, loc, buffer), axesMemRef(b, loc, grid, axes), code},
         out.getElementType());
    b.replaceOp(op, tensorOf(b, loc, buffer, out));
  }

  /// Reassociation of rank `rank` dims into rank - 1 where dims k and k+1
  /// are one: to merge them (collapse) or to split one (expand).
  static SmallVector<ReassociationIndices> pairAt(int64_t rank, int64_t k) {
    SmallVector<ReassociationIndices> groups;
    for (int64_t d = 0; d + 1 < rank; ++d)
      groups.push_back(d < k    ? ReassociationIndices{d}
                       : d == k ? ReassociationIndices{d, d + 1}
                                : ReassociationIndices{d + 1});
    return groups;
  }

  LogicalResult lower(shard::AllReduceOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    FailureOr<int> reduction = reductionFor(op, op.getReduction());
    if (failed(t) || failed(reduction))
      return failure();
    replaceWithReduction(op, b, EntryId::all_reduce, flatBuffer(b, op.getLoc(), op.getInput()),
                         t->out, op.getGridAttr(), op.getGridAxes(), *reduction);
    return success();
  }

  /// [n, d0, ..] -> `out`: the leading group dimension moves next to dim k
  /// and merges with it (block i of the group becomes block i of dim k).
  static Value mergeBlocksInto(OpBuilder &b, Location loc, Value stacked, int64_t k,
                               RankedTensorType out) {
    int64_t rank = cast<RankedTensorType>(stacked.getType()).getRank();
    if (k != 0) {
      // [n, d0, .., dk, ..] -> [d0, .., n, dk, ..]
      SmallVector<int64_t> perm;
      for (int64_t d = 1; d <= k; ++d)
        perm.push_back(d);
      perm.push_back(0);
      for (int64_t d = k + 1; d < rank; ++d)
        perm.push_back(d);
      stacked = permute(b, loc, stacked, perm);
    }
    return tensor::CollapseShapeOp::create(b, loc, out, stacked, pairAt(rank, k));
  }

  /// `tensor` with dim k split into n blocks, the blocks in front
  /// ([n, d0, .., dk / n, ..]) so that each is contiguous.
  static Value blocksToFront(OpBuilder &b, Location loc, Value tensor, int64_t k, int64_t n) {
    auto type = cast<RankedTensorType>(tensor.getType());
    SmallVector<int64_t> split(type.getShape());
    split[k] = type.getShape()[k] / n;
    split.insert(split.begin() + k, n);
    tensor =
        tensor::ExpandShapeOp::create(b, loc, RankedTensorType::get(split, type.getElementType()),
                                      tensor, pairAt(type.getRank() + 1, k));
    if (k == 0)
      return tensor;
    // [d0, .., n, b, ..] -> [n, d0, .., b, ..]
    SmallVector<int64_t> perm = {k};
    for (int64_t d = 0; d <= type.getRank(); ++d)
      if (d != k)
        perm.push_back(d);
    return permute(b, loc, tensor, perm);
  }

  /// The type of n stacked blocks of `block`: [n, block...].
  static RankedTensorType stackedType(RankedTensorType block, int64_t n) {
    SmallVector<int64_t> shape = {n};
    llvm::append_range(shape, block.getShape());
    return RankedTensorType::get(shape, block.getElementType());
  }

  /// `axis` of `op` is a dimension of its input whose size the group of n
  /// divides, or an error on the op.
  static LogicalResult splittable(Operation *op, RankedTensorType in, APInt axisAttr, int64_t n,
                                  StringRef what) {
    int64_t axis = axisAttr.getSExtValue();
    if (axis < 0 || axis >= in.getRank())
      return op->emitOpError() << what << " " << axis << " is not a dimension of " << in;
    if (in.getShape()[axis] % n != 0)
      return op->emitOpError() << what << " " << axis << " of " << in
                               << " does not split into the group's " << n << " blocks";
    return success();
  }

  /// Gathers the group's blocks as [n, input...], then merges the group
  /// dimension into `gather_axis`.
  LogicalResult lower(shard::AllGatherOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    if (failed(t))
      return failure();
    FailureOr<int64_t> n = groupSize(op, op.getGridAttr(), op.getGridAxes());
    if (failed(n))
      return failure();
    Location loc = op.getLoc();
    RankedTensorType stacked = stackedType(t->in, *n);
    Value input = flatBuffer(b, loc, op.getInput());
    Value buffer = resultBuffer(b, loc, stacked);
    call(b, loc, EntryId::all_gather,
         {input, dynamicView(b, loc, buffer),
          axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes())},
         t->in.getElementType());
    b.replaceOp(op, mergeBlocksInto(b, loc, tensorOf(b, loc, buffer, stacked),
                                    op.getGatherAxis().getSExtValue(), t->out));
    return success();
  }

  /// Reduce-scatters the blocks of `scatter_axis`, brought to the front.
  LogicalResult lower(shard::ReduceScatterOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    FailureOr<int> reduction = reductionFor(op, op.getReduction());
    if (failed(t) || failed(reduction))
      return failure();
    FailureOr<int64_t> n = groupSize(op, op.getGridAttr(), op.getGridAxes());
    if (failed(n) || failed(splittable(op, t->in, op.getScatterAxis(), *n, "scatter_axis")))
      return failure();
    Location loc = op.getLoc();
    Value input = blocksToFront(b, loc, op.getInput(), op.getScatterAxis().getSExtValue(), *n);
    replaceWithReduction(op, b, EntryId::reduce_scatter, flatBuffer(b, loc, input), t->out,
                         op.getGridAttr(), op.getGridAxes(), *reduction);
    return success();
  }

  /// Block j of `split_axis` goes to member j; the blocks received, stacked
  /// by sender, merge into `concat_axis`.
  LogicalResult lower(shard::AllToAllOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    if (failed(t))
      return failure();
    FailureOr<int64_t> n = groupSize(op, op.getGridAttr(), op.getGridAxes());
    if (failed(n) || failed(splittable(op, t->in, op.getSplitAxis(), *n, "split_axis")))
      return failure();
    Location loc = op.getLoc();
    Value blocks = blocksToFront(b, loc, op.getInput(), op.getSplitAxis().getSExtValue(), *n);
    // Each member receives blocks of the shape it sends.
    auto stacked = cast<RankedTensorType>(blocks.getType());
    Value buffer = resultBuffer(b, loc, stacked);
    call(b, loc, EntryId::all_to_all,
         {flatBuffer(b, loc, blocks), dynamicView(b, loc, buffer),
          axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes())},
         t->in.getElementType());
    b.replaceOp(op, mergeBlocksInto(b, loc, tensorOf(b, loc, buffer, stacked),
                                    op.getConcatAxis().getSExtValue(), t->out));
    return success();
  }

  /// The rows go as the counts say; the runtime exchanges the counts first.
  LogicalResult lower(pmlir::tfm::MoeAllToAllOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getRows(), op.getResult());
    if (failed(t))
      return failure();
    Location loc = op.getLoc();
    auto countsType = cast<RankedTensorType>(op.getExpertCounts().getType());
    Value rows = resultBuffer(b, loc, t->out), counts = resultBuffer(b, loc, countsType);
    call(b, loc, EntryId::moe_all_to_all,
         {flatBuffer(b, loc, op.getRows()), dynamicView(b, loc, rows),
          flatBuffer(b, loc, op.getCounts()), dynamicView(b, loc, counts),
          axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes())},
         t->in.getElementType());
    b.replaceOp(op,
                ValueRange{tensorOf(b, loc, rows, t->out), tensorOf(b, loc, counts, countsType)});
    return success();
  }

  LogicalResult lower(pmlir::tfm::MoeAllToAllBackOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getRows(), op.getResult());
    if (failed(t))
      return failure();
    Location loc = op.getLoc();
    Value rows = resultBuffer(b, loc, t->out);
    call(b, loc, EntryId::moe_all_to_all_back,
         {flatBuffer(b, loc, op.getRows()), dynamicView(b, loc, rows),
          flatBuffer(b, loc, op.getCounts()),
          axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes())},
         t->in.getElementType());
    b.replaceOp(op, tensorOf(b, loc, rows, t->out));
    return success();
  }

  /// This member's block of `slice_axis`; no communication.
  LogicalResult lower(shard::AllSliceOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    if (failed(t))
      return failure();
    FailureOr<int64_t> n = groupSize(op, op.getGridAttr(), op.getGridAxes());
    if (failed(n) || failed(splittable(op, t->in, op.getSliceAxis(), *n, "slice_axis")))
      return failure();
    Location loc = op.getLoc();
    int64_t k = op.getSliceAxis().getSExtValue();
    func::CallOp index64 = call(b, loc, EntryId::index_in_group,
                                {axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes())});
    Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), index64.getResult(0));
    int64_t block = t->in.getShape()[k] / *n;
    SmallVector<OpFoldResult> offsets(t->in.getRank(), b.getIndexAttr(0));
    SmallVector<OpFoldResult> sizes, strides(t->in.getRank(), b.getIndexAttr(1));
    for (int64_t d = 0; d < t->in.getRank(); ++d)
      sizes.push_back(b.getIndexAttr(d == k ? block : t->in.getShape()[d]));
    offsets[k] = arith::MulIOp::create(b, loc, index, arith::ConstantIndexOp::create(b, loc, block))
                     .getResult();
    b.replaceOp(
        op, tensor::ExtractSliceOp::create(b, loc, t->out, op.getInput(), offsets, sizes, strides)
                .getResult());
    return success();
  }

  /// The group member at in-group multi-index `statics` (kDynamic entries
  /// taken from `dynamics` in order) as its linear index in the group (the
  /// last axis fastest), an i64: a constant unless a coordinate is dynamic.
  FailureOr<Value> memberIndex(Operation *op, OpBuilder &b, FlatSymbolRefAttr gridName,
                               ArrayRef<shard::GridAxis> axes, ArrayRef<int64_t> statics,
                               ValueRange dynamics) {
    Location loc = op->getLoc();
    auto grid = symbols.lookup<shard::GridOp>(gridName.getValue());
    if (!grid || ShapedType::isDynamicShape(grid.getShape()))
      return op->emitOpError("needs a grid of static shape");
    // The verifier has checked the static coordinates against the grid.
    int64_t constant = 0, stride = 1;
    Value dynamic;
    size_t next = dynamics.size(); // taken from the back, as the axes
    for (int64_t i = int64_t(axes.size()) - 1; i >= 0; --i) {
      if (ShapedType::isDynamic(statics[i])) {
        Value term = arith::MulIOp::create(b, loc, dynamics[--next],
                                           arith::ConstantIndexOp::create(b, loc, stride));
        dynamic = dynamic ? arith::AddIOp::create(b, loc, dynamic, term).getResult() : term;
      } else {
        constant += statics[i] * stride;
      }
      stride *= grid.getShape()[axes[i]];
    }
    if (!dynamic)
      return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(constant)).getResult();
    Value linear =
        arith::AddIOp::create(b, loc, dynamic, arith::ConstantIndexOp::create(b, loc, constant));
    return arith::IndexCastOp::create(b, loc, b.getI64Type(), linear).getResult();
  }

  /// The root's input, copied into every member's result.
  LogicalResult lower(shard::BroadcastOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    if (failed(t))
      return failure();
    FailureOr<Value> root =
        memberIndex(op, b, op.getGridAttr(), op.getGridAxes(), op.getRoot(), op.getRootDynamic());
    if (failed(root))
      return failure();
    Location loc = op.getLoc();
    Value buffer = resultBuffer(b, loc, t->out);
    call(b, loc, EntryId::broadcast,
         {flatBuffer(b, loc, op.getInput()), dynamicView(b, loc, buffer),
          axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes()), *root},
         t->in.getElementType());
    b.replaceOp(op, tensorOf(b, loc, buffer, t->out));
    return success();
  }

  /// Sends the input to `destination`; the result is the input.
  LogicalResult lower(shard::SendOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    if (failed(t))
      return failure();
    FailureOr<Value> peer = memberIndex(op, b, op.getGridAttr(), op.getGridAxes(),
                                        op.getDestination(), op.getDestinationDynamic());
    if (failed(peer))
      return failure();
    Location loc = op.getLoc();
    call(b, loc, EntryId::send,
         {flatBuffer(b, loc, op.getInput()), axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes()),
          *peer, messageTag(b, op)},
         t->in.getElementType());
    b.replaceOp(op, op.getInput());
    return success();
  }

  /// The tensor `source` sends (the input only gives the shape).
  LogicalResult lower(shard::RecvOp op, PatternRewriter &b) {
    FailureOr<Typed> t = typedFor(op, op.getInput(), op.getResult());
    if (failed(t))
      return failure();
    if (!op.getSource())
      return op.emitOpError("needs a source: receiving from any member is not lowered");
    FailureOr<Value> peer = memberIndex(op, b, op.getGridAttr(), op.getGridAxes(), *op.getSource(),
                                        op.getSourceDynamic());
    if (failed(peer))
      return failure();
    Location loc = op.getLoc();
    Value buffer = resultBuffer(b, loc, t->out);
    call(b, loc, EntryId::recv,
         {dynamicView(b, loc, buffer), axesMemRef(b, loc, op.getGridAttr(), op.getGridAxes()),
          *peer, messageTag(b, op)},
         t->out.getElementType());
    b.replaceOp(op, tensorOf(b, loc, buffer, t->out));
    return success();
  }

  /// The grid's sizes: pmlir-run runs a program only on a mesh of its
  /// grid's shape.
  LogicalResult lower(shard::GridShapeOp op, PatternRewriter &b) {
    auto grid = symbols.lookup<shard::GridOp>(op.getGrid());
    if (!grid || ShapedType::isDynamicShape(grid.getShape()))
      return op.emitOpError("needs a grid of static shape");
    SmallVector<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
    if (axes.empty())
      for (int64_t a = 0; a < grid.getRank(); ++a)
        axes.push_back(a);
    SmallVector<Value> sizes;
    for (int64_t a : axes)
      sizes.push_back(arith::ConstantIndexOp::create(b, op.getLoc(), grid.getShape()[a]));
    b.replaceOp(op, sizes);
    return success();
  }

  /// The linear index over all grid axes (row-major, the last fastest).
  LogicalResult lower(shard::ProcessLinearIndexOp op, PatternRewriter &b) {
    auto grid = symbols.lookup<shard::GridOp>(op.getGrid());
    if (!grid)
      return op.emitOpError("names no grid");
    Location loc = op.getLoc();
    SmallVector<shard::GridAxis> all;
    for (int64_t a = 0; a < grid.getRank(); ++a)
      all.push_back(a);
    func::CallOp index64 =
        call(b, loc, EntryId::index_in_group, {axesMemRef(b, loc, op.getGridAttr(), all)});
    Value index = arith::IndexCastOp::create(b, loc, b.getIndexType(), index64.getResult(0));
    b.replaceOp(op, index);
    return success();
  }

  /// A pipeline fragment's start or end, for the trace: the runtime call
  /// with the work's code, the stage and the microbatch.
  template <typename MarkOp>
  LogicalResult lowerWorkMark(MarkOp op, EntryId id, PatternRewriter &b) {
    std::optional<int> work =
        pmlir::rt::abi::workCode(pmlir::pipe::stringifyActionKind(op.getKind()));
    if (!work)
      return op.emitOpError() << "marks work of kind \""
                              << pmlir::pipe::stringifyActionKind(op.getKind())
                              << "\", which the runtime does not trace";
    Location loc = op.getLoc();
    SmallVector<Value> args;
    for (int64_t v : {int64_t(*work), int64_t(op.getStage()), int64_t(op.getMicrobatch())})
      args.push_back(arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v)));
    call(b, loc, id, args);
    b.eraseOp(op);
    return success();
  }
  LogicalResult lower(pmlir::pipe::WorkBeginOp op, PatternRewriter &b) {
    return lowerWorkMark(op, EntryId::trace_begin, b);
  }
  LogicalResult lower(pmlir::pipe::WorkEndOp op, PatternRewriter &b) {
    return lowerWorkMark(op, EntryId::trace_end, b);
  }

  /// The runtime adds the value to the step's metric of its kind and index.
  LogicalResult lower(pmlir::tfm::StepMetricOp op, PatternRewriter &b) {
    llvm::StringRef name = pmlir::tfm::stringifyStepMetricKind(op.getKind());
    std::optional<int> kind = pmlir::rt::abi::stepMetricCode(name);
    if (!kind)
      return op.emitOpError() << "measures \"" << name << "\", which the runtime does not report";
    Location loc = op.getLoc();
    call(b, loc, EntryId::step_metric,
         {arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(*kind)),
          arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(op.getIndex())),
          flatBuffer(b, loc, op.getValue())});
    b.eraseOp(op);
    return success();
  }

  /// One coordinate per listed axis (all axes when none are listed).
  LogicalResult lower(shard::ProcessMultiIndexOp op, PatternRewriter &b) {
    auto grid = symbols.lookup<shard::GridOp>(op.getGrid());
    if (!grid)
      return op.emitOpError("names no grid");
    Location loc = op.getLoc();
    SmallVector<int64_t> axes(op.getAxes().begin(), op.getAxes().end());
    if (axes.empty())
      for (int64_t a = 0; a < grid.getRank(); ++a)
        axes.push_back(a);
    SmallVector<Value> coords;
    SmallVector<shard::GridAxis> gridAxes(axes.begin(), axes.end());
    for (int64_t code : codesOf(op.getGridAttr(), gridAxes)) {
      Value axis = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(code));
      func::CallOp c = call(b, loc, EntryId::coordinate, {axis});
      coords.push_back(arith::IndexCastOp::create(b, loc, b.getIndexType(), c.getResult(0)));
    }
    b.replaceOp(op, coords);
    return success();
  }
};

/// One op lowered by its `RuntimeCalls::lower`; a failure (after its
/// diagnostic) is recorded for the pass.
template <typename OpT> struct LowerToRuntime : public OpRewritePattern<OpT> {
  LowerToRuntime(MLIRContext *context, RuntimeCalls &calls)
      : OpRewritePattern<OpT>(context), calls(calls) {}

  LogicalResult matchAndRewrite(OpT op, PatternRewriter &rewriter) const override {
    LLVM_DEBUG(llvm::dbgs() << "lowering " << op->getName() << " at " << op->getLoc() << "\n");
    rewriter.setInsertionPoint(op);
    if (succeeded(calls.lower(op, rewriter)))
      return success();
    calls.anyFailed = true;
    return failure();
  }

  RuntimeCalls &calls;
};

/// Whether the lowering has a pattern for `op`; the other shard ops that
/// compute are refused by name.
bool isLowered(Operation *op) {
  return isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp, shard::AllToAllOp,
             shard::AllSliceOp, shard::BroadcastOp, shard::SendOp, shard::RecvOp,
             shard::ProcessLinearIndexOp, shard::ProcessMultiIndexOp, shard::GridShapeOp,
             pmlir::pipe::WorkBeginOp, pmlir::pipe::WorkEndOp>(op);
}

template <typename... OpTs> void addLowerings(RewritePatternSet &patterns, RuntimeCalls &calls) {
  (patterns.add<LowerToRuntime<OpTs>>(patterns.getContext(), calls), ...);
}

struct LowerShardToRuntimePass
    : public pmlir::impl::LowerShardToRuntimeBase<LowerShardToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    WalkResult refused = module.walk([&](Operation *op) {
      if (!isa<shard::ShardDialect>(op->getDialect()) ||
          isa<shard::GridOp, shard::ShardingOp, shard::ShardOp>(op) || isLowered(op))
        return WalkResult::advance();
      op->emitOpError("is not lowered to the runtime (all_reduce, all_gather, reduce_scatter, "
                      "all_to_all, all_slice, broadcast, send, recv, process_linear_index, "
                      "process_multi_index and grid_shape are)");
      return WalkResult::interrupt();
    });
    if (refused.wasInterrupted())
      return signalPassFailure();
    RuntimeCalls calls(module);
    if (failed(calls.readGrids()))
      return signalPassFailure();
    RewritePatternSet patterns(&getContext());
    addLowerings<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp, shard::AllToAllOp,
                 shard::AllSliceOp, shard::BroadcastOp, shard::SendOp, shard::RecvOp,
                 shard::ProcessLinearIndexOp, shard::ProcessMultiIndexOp, shard::GridShapeOp,
                 pmlir::pipe::WorkBeginOp, pmlir::pipe::WorkEndOp, pmlir::tfm::MoeAllToAllOp,
                 pmlir::tfm::MoeAllToAllBackOp, pmlir::tfm::StepMetricOp>(patterns, calls);
    walkAndApplyPatterns(module, std::move(patterns));
    if (calls.anyFailed)
      return signalPassFailure();
    // The grids have served: collectives name their axes by index now.
    for (auto grid : llvm::make_early_inc_range(module.getOps<shard::GridOp>()))
      if (SymbolTable::symbolKnownUseEmpty(grid, module))
        grid.erase();
  }
};

} // namespace
