//===- GpuKernelLoops.cpp - Every memory access of the host in a kernel ---===//
//
// Part of pmlir.
//
// Row reductions, with the elementwise work before and after them over the
// same rows, become one block a row; another reduction of many elements
// into each value one block a value, or, where that leaves the GPU idle (a
// whole tensor to one value), a block a slice of each value's elements and
// a second kernel over the slices' partials; a scatter into rows one thread a
// column and group of rows. Every other linalg op on
// buffers becomes a parallel loop over its parallel dimensions (outermost)
// with its reductions sequential inside. A host function still reads and
// writes memory in places: copies, scalar reads before a loop (AdamW's step
// and gradient norm), sequential work on a scalar. On a GPU every buffer is
// device memory, so those become parallel loops too, and each top-level
// parallel loop is tiled and mapped: its outer dimensions collapsed into one
// on block_x, its innermost in tiles of `block-size` threads (thread_x) on
// block_y; a parallel loop nested in sequential work runs in the one thread
// of that work. convert-parallel-loops-to-gpu then makes each a kernel.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Debug.h"

#include <numeric>

#define DEBUG_TYPE "pmlir-gpu-kernel-loops"

namespace pmlir {
#define GEN_PASS_DEF_GPUKERNELLOOPS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The buffer a view (subview, cast, reshape) looks into.
Value baseOf(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto view = dyn_cast<ViewLikeOpInterface>(def)) {
      v = view.getViewSource();
      continue;
    }
    break;
  }
  return v;
}

bool inParallelLoop(Operation *op) { return op->getParentOfType<scf::ParallelOp>() != nullptr; }

/// Whether `op` (or anything nested in it) may write the buffer `base`.
bool mayWrite(Operation *op, Value base) {
  bool writes = false;
  op->walk([&](Operation *nested) {
    if (writes)
      return WalkResult::interrupt();
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects) {
      // Unknown effects (a call): any memref it is handed may be written.
      writes = llvm::any_of(nested->getOperands(), [&](Value operand) {
        return isa<MemRefType>(operand.getType()) && baseOf(operand) == base;
      });
      return WalkResult::advance();
    }
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances)
      if (isa<MemoryEffects::Write>(e.getEffect()) &&
          (!e.getValue() || baseOf(e.getValue()) == base))
        writes = true;
    return WalkResult::advance();
  });
  return writes;
}

/// Whether `op` reads or writes memory (allocation and freeing aside, which
/// the host does).
bool touchesMemory(Operation *op) {
  bool touches = false;
  op->walk([&](Operation *nested) {
    auto effects = dyn_cast<MemoryEffectOpInterface>(nested);
    if (!effects)
      return WalkResult::advance();
    SmallVector<MemoryEffects::EffectInstance> instances;
    effects.getEffects(instances);
    for (const MemoryEffects::EffectInstance &e : instances)
      if (isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()))
        touches = true;
    return touches ? WalkResult::interrupt() : WalkResult::advance();
  });
  return touches;
}

/// Whether `op` (or anything nested) must stay on the host: a call (the
/// runtime's GEMMs and collectives).
bool hostOnly(Operation *op) {
  return op
      ->walk([](Operation *nested) {
        return isa<CallOpInterface>(nested) ? WalkResult::interrupt() : WalkResult::advance();
      })
      .wasInterrupted();
}

/// A loop dimension mapped to `processor`, as gpu-map-parallel-loops maps
/// it (identity map and bound).
gpu::ParallelLoopDimMappingAttr onProcessor(MLIRContext *ctx, gpu::Processor processor) {
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, ctx);
  return gpu::ParallelLoopDimMappingAttr::get(ctx, processor, identity, identity);
}

/// The dimensions of a loop over blocks: the innermost on block_x, the next
/// two on block_y and block_z (the grid's), any further ones looped.
SmallVector<gpu::ParallelLoopDimMappingAttr> onBlocks(MLIRContext *ctx, unsigned rank) {
  const gpu::Processor blocks[] = {gpu::Processor::BlockX, gpu::Processor::BlockY,
                                   gpu::Processor::BlockZ};
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (unsigned d = 0; d < rank; ++d) {
    unsigned fromInnermost = rank - 1 - d;
    mapping.push_back(
        onProcessor(ctx, fromInnermost < 3 ? blocks[fromInnermost] : gpu::Processor::Sequential));
  }
  return mapping;
}

struct GpuKernelLoopsPass : public pmlir::impl::GpuKernelLoopsBase<GpuKernelLoopsPass> {
  using GpuKernelLoopsBase::GpuKernelLoopsBase;

  void runOnOperation() override {
    for (auto func : getOperation().getOps<func::FuncOp>()) {
      if (func.isExternal())
        continue;
      fuseRows(func);
      if (failed(toParallelLoops(func)))
        return signalPassFailure();
      lowerCopies(func);
      scatterByColumns(func);
      sinkScalarReads(func);
      if (failed(wrapSequentialWork(func.getBody())))
        return signalPassFailure();
      if (failed(tileAndMap(func)))
        return signalPassFailure();
    }
  }

  /// Each linalg op on buffers -> a nest with its parallel dimensions
  /// outermost, as one scf.parallel (their threads), and its reduction
  /// dimensions inside, as scf.for loops (each thread's own sum): a
  /// reduction over the batch of a per-column sum (a norm's weight
  /// gradient) would otherwise put the parallel loop inside sequential
  /// ones.
  LogicalResult toParallelLoops(func::FuncOp func) {
    SmallVector<linalg::LinalgOp> ops;
    func.walk([&](linalg::LinalgOp op) {
      if (op.hasPureBufferSemantics())
        ops.push_back(op);
    });
    IRRewriter rewriter(func.getContext());
    for (linalg::LinalgOp op : ops) {
      rewriter.setInsertionPoint(op);
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation())) {
        SmallVector<unsigned> order;
        SmallVector<utils::IteratorType> iterators = generic.getIteratorTypesArray();
        for (auto [i, it] : llvm::enumerate(iterators))
          if (it == utils::IteratorType::parallel)
            order.push_back(i);
        for (auto [i, it] : llvm::enumerate(iterators))
          if (it != utils::IteratorType::parallel)
            order.push_back(i);
        if (!llvm::equal(order, llvm::seq<unsigned>(0, order.size()))) {
          FailureOr<linalg::GenericOp> interchanged =
              linalg::interchangeGenericOp(rewriter, generic, order);
          if (failed(interchanged))
            return generic.emitOpError() << "could not put its parallel loops outermost";
          op = *interchanged;
        }
      }
      if (failed(linalg::linalgOpToParallelLoops(rewriter, op)))
        return op->emitOpError() << "has no GPU lowering: it is no loop nest";
      rewriter.eraseOp(op);
    }
    return success();
  }

  /// The identity of a reduction's combiner, or null where it is none
  /// this pass knows.
  static Value identityOf(OpBuilder &b, Location loc, Operation *combiner, Type type) {
    auto floatType = dyn_cast<FloatType>(type);
    if (!floatType)
      return {};
    const llvm::fltSemantics &semantics = floatType.getFloatSemantics();
    std::optional<APFloat> value;
    if (isa<arith::AddFOp>(combiner))
      value = APFloat::getZero(semantics);
    else if (isa<arith::MaximumFOp, arith::MaxNumFOp>(combiner))
      value = APFloat::getInf(semantics, /*Negative=*/true);
    else if (isa<arith::MinimumFOp, arith::MinNumFOp>(combiner))
      value = APFloat::getInf(semantics, /*Negative=*/false);
    if (!value)
      return {};
    return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, *value));
  }

  /// The all-reduce of a reduction's combiner (add, max, min), or none.
  static std::optional<gpu::AllReduceOperation> allReduceOf(Operation *combiner) {
    if (isa<arith::AddFOp>(combiner))
      return gpu::AllReduceOperation::ADD;
    if (isa<arith::MaximumFOp>(combiner))
      return gpu::AllReduceOperation::MAXIMUMF;
    if (isa<arith::MaxNumFOp>(combiner))
      return gpu::AllReduceOperation::MAXNUMF;
    if (isa<arith::MinimumFOp>(combiner))
      return gpu::AllReduceOperation::MINIMUMF;
    if (isa<arith::MinNumFOp>(combiner))
      return gpu::AllReduceOperation::MINNUMF;
    return std::nullopt;
  }

  /// The map of one value a row for a generic of `loops` loops, the last
  /// along the row: (d0, ..., dn) -> (d0, ..., dn-1).
  static AffineMap rowMap(MLIRContext *ctx, unsigned loops) {
    return AffineMap::getMultiDimIdentityMap(loops, ctx).dropResult(loops - 1);
  }

  /// The combining op of a reduction along the innermost of its loops
  /// alone into one value a row (a row's sum or max: norms, softmax, a
  /// logsumexp), or null for any other generic: several reductions, an
  /// output indexed otherwise, a combiner other than add, max or min, an
  /// accumulator the body reads elsewhere.
  static Operation *rowCombiner(linalg::GenericOp op) {
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    unsigned loops = iterators.size();
    if (loops < 2 || op.getNumDpsInits() != 1 ||
        llvm::count(iterators, utils::IteratorType::reduction) != 1 ||
        iterators.back() != utils::IteratorType::reduction ||
        op.getIndexingMapsArray().back() != rowMap(op.getContext(), loops))
      return nullptr;
    return combinerOf(op);
  }

  /// The op of a reduction's body that combines the accumulator with the
  /// element (add, max or min), where the body reads the accumulator only
  /// there; else null.
  static Operation *combinerOf(linalg::GenericOp op) {
    Block &body = op.getRegion().front();
    BlockArgument acc = body.getArguments().back();
    Operation *combiner =
        cast<linalg::YieldOp>(body.getTerminator()).getValues()[0].getDefiningOp();
    if (!combiner || combiner->getNumOperands() != 2 || !acc.hasOneUse() ||
        acc.getUses().begin()->getOwner() != combiner || !allReduceOf(combiner))
      return nullptr;
    return combiner;
  }

  /// The combining op of a reduction that is no row reduction (its
  /// reduced dimensions not the innermost alone) into one value for each
  /// point of its parallel dimensions, in order (a bias's or a norm
  /// weight's gradient, summed over the tokens for each column; a loss's
  /// sum; a gradient's sum of squares), or null.
  static Operation *blockCombiner(linalg::GenericOp op) {
    if (op.getNumDpsInits() != 1 || op.getNumReductionLoops() == 0 || rowCombiner(op))
      return nullptr;
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    SmallVector<unsigned> parallel;
    for (auto [d, t] : llvm::enumerate(iterators))
      if (t == utils::IteratorType::parallel)
        parallel.push_back(d);
    AffineMap out = op.getIndexingMapsArray().back();
    if (out.getNumResults() != parallel.size())
      return nullptr;
    for (auto [expr, d] : llvm::zip(out.getResults(), parallel))
      if (expr != getAffineDimExpr(d, op.getContext()))
        return nullptr;
    return combinerOf(op);
  }

  /// The threads of a block over `extent` elements: `block-size`, fewer
  /// where the extent is a smaller constant.
  int64_t threadsFor(Value extent) const {
    std::optional<int64_t> n = getConstantIntValue(extent);
    return n ? std::max<int64_t>(1, std::min<int64_t>(blockSize, *n)) : blockSize;
  }

  /// In the threads of a block (`lanes`, `width` of them, this one
  /// `lane`), the reduction `op` of `count` elements into one value: each
  /// thread's partial over elements lane, lane + width, ... (their loop
  /// indices `indicesOf(builder, element)`, inputs in `rowValues` read
  /// from there), combined by gpu.all_reduce, which every thread gets
  /// back, and combined with `old`, which each thread read before (where
  /// `old` is null: the block's total itself).
  static Value reduceInBlock(OpBuilder &lb, linalg::GenericOp op, Operation *combiner, Value old,
                             Value lane, Value count, Value width,
                             function_ref<SmallVector<Value>(OpBuilder &, Value)> indicesOf,
                             const llvm::DenseMap<Value, Value> &rowValues) {
    Location loc = op.getLoc();
    BlockArgument acc = op.getRegion().front().getArguments().back();
    Value element =
        combiner->getOperand(0) == acc ? combiner->getOperand(1) : combiner->getOperand(0);
    Value identity = identityOf(lb, loc, combiner, acc.getType());
    auto partial =
        scf::ForOp::create(lb, loc, lane, count, width, ValueRange{identity},
                           [&](OpBuilder &fb, Location, Value k, ValueRange iter) {
                             IRMapping mapping;
                             cloneBodyAt(fb, op, indicesOf(fb, k), rowValues, combiner, mapping);
                             Operation *sum = fb.clone(*combiner, mapping);
                             sum->setOperand(0, iter[0]);
                             sum->setOperand(1, mapping.lookupOrDefault(element));
                             scf::YieldOp::create(fb, loc, sum->getResult(0));
                           });
    Value total = allReduceInBlock(lb, loc, partial.getResult(0), combiner);
    if (!old)
      return total;
    return combine(lb, combiner, old, total);
  }

  /// `combiner` (add, max or min) applied to `lhs` and `rhs`.
  static Value combine(OpBuilder &b, Operation *combiner, Value lhs, Value rhs) {
    Operation *combined = b.clone(*combiner);
    combined->setOperand(0, lhs);
    combined->setOperand(1, rhs);
    return combined->getResult(0);
  }

  /// The block's threads' `partial`s combined by `combiner`
  /// (gpu.all_reduce: shuffles and a barrier; every thread gets it back).
  static Value allReduceInBlock(OpBuilder &lb, Location loc, Value partial, Operation *combiner) {
    return gpu::AllReduceOp::create(
        lb, loc, partial, gpu::AllReduceOperationAttr::get(lb.getContext(), *allReduceOf(combiner)),
        lb.getUnitAttr());
  }

  /// A kernel's loops: a grid of blocks over `extents` (one block where
  /// there are none: a whole tensor to one value), `width` threads each,
  /// mapped (blocks by onBlocks, threads on thread_x). `body` builds each
  /// thread's work from its block's indices (none for the one block) and
  /// its lane.
  static void emitBlocks(OpBuilder &b, Location loc, ArrayRef<Value> extents, Value width,
                         function_ref<void(OpBuilder &, ValueRange, Value)> body) {
    MLIRContext *ctx = b.getContext();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> upper(extents);
    if (upper.empty())
      upper.push_back(one);
    SmallVector<Value> lower(upper.size(), zero), steps(upper.size(), one);
    auto blocks = scf::ParallelOp::create(b, loc, lower, upper, steps);
    OpBuilder bb = OpBuilder::atBlockBegin(blocks.getBody());
    auto lanes =
        scf::ParallelOp::create(bb, loc, ValueRange{zero}, ValueRange{width}, ValueRange{one});
    OpBuilder lb = OpBuilder::atBlockBegin(lanes.getBody());
    body(lb, extents.empty() ? ValueRange() : ValueRange(blocks.getInductionVars()),
         lanes.getInductionVars()[0]);
    (void)gpu::setMappingAttr(lanes, {onProcessor(ctx, gpu::Processor::ThreadX)});
    (void)gpu::setMappingAttr(blocks, onBlocks(ctx, upper.size()));
  }

  /// The slices each value's elements are cut into, one block a slice, for
  /// a reduction of `count` elements into each of `values` values (both
  /// static; 0 where one is not): enough blocks to fill `reduction-blocks`,
  /// at least 16 blocks' worth of threads' elements a slice; 1 for no cut.
  int64_t slicesFor(int64_t values, int64_t count, int64_t width) const {
    if (reductionBlocks <= 0 || values <= 0 || count <= 0 || values >= reductionBlocks)
      return 1;
    int64_t wanted = llvm::divideCeil(reductionBlocks, values);
    int64_t most = count / (16 * width);
    return std::max<int64_t>(1, std::min(wanted, most));
  }

  /// How many elements a reduction combines into each value: the product of
  /// its reduced dimensions' static extents (0 where one is dynamic).
  static int64_t reducedCount(linalg::GenericOp op) {
    int64_t count = 1;
    for (auto [extent, t] : llvm::zip(op.getStaticLoopRanges(), op.getIteratorTypesArray()))
      if (t == utils::IteratorType::reduction)
        count = ShapedType::isDynamic(extent) ? 0 : count * extent;
    return count;
  }

  /// Such a reduction of at least a block's worth of elements into each
  /// value -> one block for each output value, whose threads stride over
  /// the reduced elements (in row-major order of the reduced dimensions)
  /// with partials of their own, combined by gpu.all_reduce. A column's
  /// sum over 8192 tokens is then 256 threads' work in a block of its own,
  /// and the whole gradient's sum of squares one block's, instead of one
  /// thread's. (Fewer elements than a block stay one thread's sum each.)
  void reduceByBlocks(linalg::GenericOp op) {
    Operation *combiner = blockCombiner(op);
    Location loc = op.getLoc();
    OpBuilder b(op);
    SmallVector<Range> ranges = cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc);
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> outerUpper, reducedExtents;
    SmallVector<unsigned> outerDims, reducedDims;
    Value count = one;
    for (auto [d, t] : llvm::enumerate(iterators)) {
      Value extent = getValueOrCreateConstantIndexOp(b, loc, ranges[d].size);
      if (t == utils::IteratorType::parallel) {
        outerDims.push_back(d);
        outerUpper.push_back(extent);
        continue;
      }
      reducedDims.push_back(d);
      reducedExtents.push_back(extent);
      count = arith::MulIOp::create(b, loc, count, extent);
    }
    Value width = arith::ConstantIndexOp::create(b, loc, threadsFor(count));
    // The reduced element at `flat` (row-major over the reduced dimensions)
    // for the value at the block's `outerIvs`: the loop indices.
    auto indicesAt = [&](OpBuilder &fb, ValueRange outerIvs, Value flat) {
      SmallVector<Value> ivs(iterators.size());
      for (auto [d, iv] : llvm::zip(outerDims, outerIvs))
        ivs[d] = iv;
      // The reduced element's indices, the last varying fastest.
      Value rest = flat;
      for (size_t r = reducedDims.size(); r-- > 0;) {
        ivs[reducedDims[r]] = arith::RemUIOp::create(fb, loc, rest, reducedExtents[r]);
        rest = arith::DivUIOp::create(fb, loc, rest, reducedExtents[r]);
      }
      return ivs;
    };
    int64_t staticCount = reducedCount(op);
    int64_t values = 1;
    for (Value extent : outerUpper) {
      std::optional<int64_t> n = getConstantIntValue(extent);
      values = n && values > 0 ? values * *n : 0;
    }
    if (int64_t slices = slicesFor(values, staticCount, threadsFor(count)); slices > 1) {
      reduceBySlices(op, combiner, outerUpper, staticCount, slices, width, indicesAt);
      return;
    }
    // A block a value (one block for a whole tensor to one value).
    Value out = op.getDpsInits()[0];
    emitBlocks(b, loc, outerUpper, width, [&](OpBuilder &lb, ValueRange outIndices, Value lane) {
      // Every thread reads the old value before the all-reduce's barrier.
      Value old = memref::LoadOp::create(lb, loc, out, outIndices);
      Value value = reduceInBlock(
          lb, op, combiner, old, lane, count, width,
          [&](OpBuilder &fb, Value flat) { return indicesAt(fb, outIndices, flat); },
          llvm::DenseMap<Value, Value>());
      memref::StoreOp::create(lb, loc, value, out, outIndices);
    });
    op.erase();
  }

  /// The reduction `op` (its `combiner`; `count` elements into each value
  /// at indices below `outerUpper`), each value's elements cut into
  /// `slices` slices of consecutive elements -> two kernels and a buffer
  /// of partials between them: blocks over (value, slice) write each
  /// slice's partial (`width` threads striding over it, gpu.all_reduce),
  /// then a block a value combines its partials in slice order and the
  /// value the output held. The sum of a slice and the sum of the partials
  /// are each in a fixed order, so the result is the same from run to run.
  void reduceBySlices(linalg::GenericOp op, Operation *combiner, ArrayRef<Value> outerUpper,
                      int64_t count, int64_t slices, Value width,
                      function_ref<SmallVector<Value>(OpBuilder &, ValueRange, Value)> indicesAt) {
    Location loc = op.getLoc();
    OpBuilder b(op);
    Value out = op.getDpsInits()[0];
    Type accType = cast<MemRefType>(out.getType()).getElementType();
    SmallVector<int64_t> partialShape;
    for (Value extent : outerUpper)
      partialShape.push_back(*getConstantIntValue(extent));
    partialShape.push_back(slices);
    Value partials = memref::AllocOp::create(b, loc, MemRefType::get(partialShape, accType));
    int64_t chunk = llvm::divideCeil(count, slices);
    Value chunkValue = arith::ConstantIndexOp::create(b, loc, chunk);
    Value countValue = arith::ConstantIndexOp::create(b, loc, count);

    // Kernel 1: a block a slice of a value.
    SmallVector<Value> sliceExtents(outerUpper);
    sliceExtents.push_back(arith::ConstantIndexOp::create(b, loc, slices));
    emitBlocks(b, loc, sliceExtents, width, [&](OpBuilder &lb, ValueRange ivs, Value lane) {
      Value begin = arith::MulIOp::create(lb, loc, ivs.back(), chunkValue);
      Value end = arith::MinUIOp::create(lb, loc, arith::AddIOp::create(lb, loc, begin, chunkValue),
                                         countValue);
      Value first = arith::AddIOp::create(lb, loc, begin, lane);
      Value partial = reduceInBlock(
          lb, op, combiner, /*old=*/Value(), first, end, width,
          [&](OpBuilder &fb, Value flat) { return indicesAt(fb, ivs.drop_back(), flat); },
          llvm::DenseMap<Value, Value>());
      memref::StoreOp::create(lb, loc, partial, partials, ivs);
    });

    // Kernel 2: a block a value, its threads striding over the partials.
    Value partialWidth =
        arith::ConstantIndexOp::create(b, loc, std::min<int64_t>(blockSize, slices));
    emitBlocks(
        b, loc, outerUpper, partialWidth, [&](OpBuilder &lb, ValueRange outIndices, Value lane) {
          Value old = memref::LoadOp::create(lb, loc, out, outIndices);
          Value identity = identityOf(lb, loc, combiner, accType);
          auto partial = scf::ForOp::create(
              lb, loc, lane, sliceExtents.back(), partialWidth, ValueRange{identity},
              [&](OpBuilder &fb, Location, Value k, ValueRange iter) {
                SmallVector<Value> at(outIndices);
                at.push_back(k);
                Value p = memref::LoadOp::create(fb, loc, partials, at);
                scf::YieldOp::create(fb, loc, combine(fb, combiner, iter[0], p));
              });
          Value total = allReduceInBlock(lb, loc, partial.getResult(0), combiner);
          memref::StoreOp::create(lb, loc, combine(lb, combiner, old, total), out, outIndices);
        });
    memref::DeallocOp::create(b, loc, partials);
    op.erase();
  }

  /// One step of a row group: a row reduction (its combiner, and the value
  /// its buffer starts from where the fill before it is folded in, else
  /// null: loaded) or elementwise work over the rows' elements.
  struct RowStep {
    linalg::GenericOp op;
    Operation *combiner = nullptr;
    Value start;
  };

  /// Row groups: elementwise work over rows (a bias and residual add, a
  /// scaled and masked score), then a run of row reductions, each reading
  /// the rows and the values earlier ones reduced (the zero fill of each
  /// one's buffer folded in), and elementwise work over the same rows at
  /// the end (a norm's statistics and its normalization; a softmax's max,
  /// sum and quotient) -> one block a row. Its threads write their part of
  /// the row's elementwise work (a barrier after it), stride over the row
  /// for each reduction, combine their partials (gpu.all_reduce, which
  /// every thread gets back: shuffles and a barrier), and go on to the next
  /// step with the row's values in registers; each reduced value is stored
  /// as well. One kernel reads the row while it is in cache, instead of one
  /// kernel a step reading it from memory, and reads of a row are coalesced
  /// across the threads. A lone row reduction is a group of one.
  void fuseRows(func::FuncOp func) {
    for (Block &block : func.getBody()) {
      SmallVector<Operation *> ops = llvm::map_to_vector(block, [](Operation &op) { return &op; });
      for (size_t i = 0; i < ops.size();) {
        if (auto generic = dyn_cast<linalg::GenericOp>(ops[i]);
            generic && generic.hasPureBufferSemantics() && blockCombiner(generic) &&
            reducedCount(generic) >= blockSize) {
          reduceByBlocks(generic);
          ++i;
          continue;
        }
        SmallVector<RowStep> steps;
        SmallVector<Operation *> folded;
        size_t next = collectRowGroup(ops, i, steps, folded);
        if (!steps.empty())
          emitRowGroup(steps, folded, ArrayRef<Operation *>(ops).slice(i, next - i));
        i = std::max(next, i + 1);
      }
    }
  }

  /// The row group starting at ops[start] (its steps and the fills they
  /// fold; none where there is none) and the index after it. Between its
  /// steps there may be allocations, frees and pure ops only.
  size_t collectRowGroup(ArrayRef<Operation *> ops, size_t start, SmallVector<RowStep> &steps,
                         SmallVector<Operation *> &folded) {
    SmallVector<int64_t> extents;  // the rows' and the row's, from the first step
    llvm::DenseSet<Value> reduced; // the buffers of the steps' reductions
    llvm::DenseSet<Value> written; // those of their elementwise work
    llvm::DenseSet<Value> read;    // the buffers the steps read
    SmallVector<linalg::FillOp> fills;
    bool reduces = false;
    size_t end = start;
    for (size_t j = start; j < ops.size(); ++j) {
      Operation *op = ops[j];
      if (auto fill = dyn_cast<linalg::FillOp>(op);
          fill && fill.hasPureBufferSemantics() &&
          matchPattern(fill.getInputs()[0], m_Constant())) {
        fills.push_back(fill);
        continue;
      }
      if ((isa<memref::AllocOp>(op) && op->getNumOperands() == 0) || isa<memref::DeallocOp>(op) ||
          (isPure(op) && op->getNumRegions() == 0))
        continue;
      auto generic = dyn_cast<linalg::GenericOp>(op);
      if (!generic || !generic.hasPureBufferSemantics())
        break;
      Operation *combiner = rowCombiner(generic);
      SmallVector<int64_t> own = generic.getStaticLoopRanges();
      bool isStatic = llvm::none_of(own, ShapedType::isDynamic);
      bool elementwise =
          isStatic && (steps.empty() || own == extents) && generic.getNumLoops() >= 2 &&
          llvm::all_of(generic.getIteratorTypesArray(),
                       [](utils::IteratorType t) { return t == utils::IteratorType::parallel; }) &&
          generic.getNumDpsInits() == 1 && generic.getIndexingMapsArray().back().isIdentity();
      if (!combiner && !elementwise)
        break;
      // A group of several steps has static extents, compared.
      if (combiner && !steps.empty() && (!isStatic || own != extents))
        break;
      Value out = generic.getDpsInits()[0];
      // A reduced value is read one a row, an element written by earlier
      // work where it was written (by the thread that wrote it, or after
      // a barrier); no step writes what an earlier one read or wrote.
      MLIRContext *ctx = generic.getContext();
      unsigned loops = generic.getNumLoops();
      bool reads = llvm::all_of(generic.getDpsInputOperands(), [&](OpOperand *input) {
        Value base = baseOf(input->get());
        AffineMap map = generic.getMatchingIndexingMap(input);
        return (!reduced.contains(base) || map == rowMap(ctx, loops)) &&
               (!written.contains(base) || map.isIdentity());
      });
      Value outBase = baseOf(out);
      if (!reads || read.contains(outBase) || reduced.contains(outBase) ||
          written.contains(outBase))
        break;
      // A fill between steps must be of this reduction's buffer.
      if (llvm::any_of(fills,
                       [&](linalg::FillOp f) { return !combiner || f.getOutputs()[0] != out; }))
        break;
      RowStep step{generic, combiner, Value()};
      if (!fills.empty()) {
        step.start = fills.back().getInputs()[0];
        for (linalg::FillOp f : fills)
          folded.push_back(f);
        fills.clear();
      }
      if (steps.empty())
        extents = own;
      steps.push_back(step);
      end = j + 1;
      for (Value input : generic.getDpsInputs())
        read.insert(baseOf(input));
      if (combiner) {
        reduced.insert(outBase);
        reduces = true;
        continue;
      }
      written.insert(outBase);
      if (reduces)
        break; // elementwise work after the reductions ends a group
    }
    // Elementwise work alone is no row group; fills after the last step
    // stay where they are.
    if (!reduces) {
      steps.clear();
      folded.clear();
      return start + 1;
    }
    return end;
  }

  /// Loads `memref` at the loop indices `ivs` through `map`.
  static Value loadAt(OpBuilder &b, Location loc, Value memref, AffineMap map, ValueRange ivs) {
    SmallVector<Value> indices;
    for (AffineExpr expr : map.getResults())
      indices.push_back(
          affine::AffineApplyOp::create(b, loc, AffineMap::get(map.getNumDims(), 0, expr), ivs));
    return memref::LoadOp::create(b, loc, memref, indices);
  }

  /// The body of `op` at loop indices `ivs`, its inputs loaded (or taken
  /// from `rowValues`, the values earlier steps reduced for this row) and
  /// its ops cloned but `skip`; `mapping` maps the body's values.
  static void cloneBodyAt(OpBuilder &b, linalg::GenericOp op, ValueRange ivs,
                          const llvm::DenseMap<Value, Value> &rowValues, Operation *skip,
                          IRMapping &mapping) {
    Location loc = op.getLoc();
    Block &body = op.getRegion().front();
    for (OpOperand &operand : op->getOpOperands()) {
      BlockArgument arg = op.getMatchingBlockArgument(&operand);
      if (arg.use_empty() || (op.isDpsInit(&operand) && skip))
        continue;
      if (Value v = rowValues.lookup(baseOf(operand.get())); v && op.isDpsInput(&operand))
        mapping.map(arg, v);
      else
        mapping.map(arg, loadAt(b, loc, operand.get(), op.getMatchingIndexingMap(&operand), ivs));
    }
    for (Operation &inner : body.without_terminator()) {
      if (&inner == skip)
        continue;
      if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
        mapping.map(index.getResult(), ivs[index.getDim()]);
        continue;
      }
      b.clone(inner, mapping);
    }
  }

  /// One block a row for `steps` (collectRowGroup), where the last one
  /// was; `between` are the ops from the first step to the last, whose
  /// frees move after the group and whose folded fills go.
  void emitRowGroup(ArrayRef<RowStep> steps, ArrayRef<Operation *> folded,
                    ArrayRef<Operation *> between) {
    linalg::GenericOp first = steps.front().op, last = steps.back().op;
    MLIRContext *ctx = first.getContext();
    Location loc = first.getLoc();
    IRRewriter b(ctx);
    b.setInsertionPoint(last);
    unsigned loops = first.getNumLoops();
    SmallVector<Range> ranges =
        cast<linalg::LinalgOp>(first.getOperation()).createLoopRanges(b, loc);
    SmallVector<Value> lower, upper, stepsOf;
    for (unsigned d = 0; d + 1 < loops; ++d) {
      lower.push_back(getValueOrCreateConstantIndexOp(b, loc, ranges[d].offset));
      upper.push_back(getValueOrCreateConstantIndexOp(b, loc, ranges[d].size));
      stepsOf.push_back(getValueOrCreateConstantIndexOp(b, loc, ranges[d].stride));
    }
    Value extent = getValueOrCreateConstantIndexOp(b, loc, ranges.back().size);

    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value width = arith::ConstantIndexOp::create(b, loc, threadsFor(extent));
    auto rows = scf::ParallelOp::create(b, loc, lower, upper, stepsOf);
    OpBuilder rb = OpBuilder::atBlockBegin(rows.getBody());
    SmallVector<Value> rowIvs = rows.getInductionVars();
    auto lanes =
        scf::ParallelOp::create(rb, loc, ValueRange{zero}, ValueRange{width}, ValueRange{one});
    OpBuilder lb = OpBuilder::atBlockBegin(lanes.getBody());
    Value lane = lanes.getInductionVars()[0];
    llvm::DenseMap<Value, Value> rowValues;
    for (const RowStep &step : steps) {
      linalg::GenericOp op = step.op;
      Value out = op.getDpsInits()[0];
      auto ivsAt = [&](Value k) {
        SmallVector<Value> ivs(rowIvs.begin(), rowIvs.end());
        ivs.push_back(k);
        return ivs;
      };
      if (!step.combiner) {
        scf::ForOp::create(lb, loc, lane, extent, width, ValueRange{},
                           [&](OpBuilder &fb, Location, Value k, ValueRange) {
                             IRMapping mapping;
                             SmallVector<Value> ivs = ivsAt(k);
                             cloneBodyAt(fb, op, ivs, rowValues, nullptr, mapping);
                             auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
                             memref::StoreOp::create(
                                 fb, loc, mapping.lookupOrDefault(yield.getValues()[0]), out, ivs);
                             scf::YieldOp::create(fb, loc);
                           });
        continue;
      }
      Operation *combiner = step.combiner;
      // The row written by the elementwise work before, every thread's
      // part of it, is read whole by each thread from here.
      if (&step != &steps.front() && !(&step - 1)->combiner)
        gpu::BarrierOp::create(lb, loc);
      // Every thread reads the row's old value before the block's
      // all-reduce, whose barrier comes before any thread's store.
      Value old = step.start ? step.start : loadAt(lb, loc, out, rowMap(ctx, loops), ivsAt(zero));
      Value value = reduceInBlock(
          lb, op, combiner, old, lane, extent, width,
          [&](OpBuilder &, Value k) { return ivsAt(k); }, rowValues);
      memref::StoreOp::create(lb, loc, value, out, ValueRange(rowIvs));
      rowValues[baseOf(out)] = value;
    }
    (void)gpu::setMappingAttr(lanes, {onProcessor(ctx, gpu::Processor::ThreadX)});
    (void)gpu::setMappingAttr(rows, onBlocks(ctx, loops - 1));
    LLVM_DEBUG(llvm::dbgs() << "one block a row for " << steps.size() << " steps at " << loc
                            << "\n");
    // Frees between the steps come after the group; the steps and the
    // fills they fold go.
    for (Operation *op : between)
      if (isa<memref::DeallocOp>(op))
        op->moveAfter(rows);
    for (Operation *op : folded)
      op->erase();
    for (const RowStep &step : steps)
      step.op->erase();
  }
  /// memref.copy -> a parallel loop of loads and stores (a 0-d copy: one
  /// load and store, wrapped later).
  void lowerCopies(func::FuncOp func) {
    SmallVector<memref::CopyOp> copies;
    func.walk([&](memref::CopyOp op) {
      if (!inParallelLoop(op))
        copies.push_back(op);
    });
    for (memref::CopyOp op : copies) {
      OpBuilder b(op);
      Location loc = op.getLoc();
      Value from = op.getSource(), to = op.getTarget();
      auto type = cast<MemRefType>(from.getType());
      if (type.getRank() == 0) {
        Value v = memref::LoadOp::create(b, loc, from, ValueRange{});
        memref::StoreOp::create(b, loc, v, to, ValueRange{});
        op.erase();
        continue;
      }
      SmallVector<Value> lower, upper, steps;
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value one = arith::ConstantIndexOp::create(b, loc, 1);
      for (int64_t d = 0; d < type.getRank(); ++d) {
        lower.push_back(zero);
        steps.push_back(one);
        upper.push_back(
            type.isDynamicDim(d)
                ? memref::DimOp::create(b, loc, from, d).getResult()
                : arith::ConstantIndexOp::create(b, loc, type.getDimSize(d)).getResult());
      }
      scf::ParallelOp::create(b, loc, lower, upper, steps,
                              [&](OpBuilder &nb, Location l, ValueRange ivs) {
                                Value v = memref::LoadOp::create(nb, l, from, ivs);
                                memref::StoreOp::create(nb, l, v, to, ivs);
                              });
      op.erase();
    }
  }

  /// The column a store or load of `access` reaches in its buffer's rows,
  /// where every thread of `loop` (its last dimension the only one wider
  /// than 1) reaches a column of its own: the access is indexed last by the
  /// loop's last dimension, into the buffer or a view of whole rows of it.
  static bool ownColumn(Operation *access, scf::ParallelOp loop) {
    auto indices = isa<memref::LoadOp>(access) ? cast<memref::LoadOp>(access).getIndices()
                                               : cast<memref::StoreOp>(access).getIndices();
    Value memref = isa<memref::LoadOp>(access) ? cast<memref::LoadOp>(access).getMemRef()
                                               : cast<memref::StoreOp>(access).getMemRef();
    if (indices.empty())
      return false;
    // The last index, seen through an identity affine.apply (the loops
    // linalg ops become index through their maps).
    Value column = indices.back();
    if (auto apply = column.getDefiningOp<affine::AffineApplyOp>();
        apply && apply.getAffineMap().isIdentity() && apply.getMapOperands().size() == 1)
      column = apply.getMapOperands()[0];
    if (column != loop.getInductionVars().back())
      return false;
    auto subview = memref.getDefiningOp<memref::SubViewOp>();
    if (!subview)
      return memref == baseOf(memref);
    auto source = cast<MemRefType>(subview.getSource().getType());
    int64_t last = source.getRank() - 1;
    return subview.getType().getRank() == source.getRank() && !source.isDynamicDim(last) &&
           subview.getStaticOffsets().back() == 0 && subview.getStaticStrides().back() == 1 &&
           subview.getStaticSizes().back() == source.getDimSize(last) &&
           subview.getSource() == baseOf(memref);
  }

  /// A scatter into rows: a sequential loop (over tokens) whose only
  /// writes are one parallel loop over a row's columns (embedding_grad's
  /// row += gradient row), every access to the rows it writes in each
  /// thread's own column -> the parallel loop outside, the sequential one
  /// in each thread: one thread a column walks the tokens in order, as the
  /// sequential loop did, instead of one thread doing every column of
  /// every token. The sums are the same, in the same order.
  void scatterByColumns(func::FuncOp func) {
    SmallVector<scf::ForOp> loops;
    for (Operation &op : func.getBody().front())
      if (auto loop = dyn_cast<scf::ForOp>(op); loop && loop.getNumResults() == 0)
        loops.push_back(loop);
    for (scf::ForOp loop : loops) {
      SmallVector<scf::ParallelOp> inner;
      loop.getBody()->walk([&](scf::ParallelOp p) { inner.push_back(p); });
      if (inner.size() != 1 || inner[0]->getParentOfType<scf::ParallelOp>() ||
          inner[0].getNumResults() != 0)
        continue;
      scf::ParallelOp columns = inner[0];
      unsigned rank = columns.getNumLoops();
      // One dimension wider than 1, the last; bounds known outside.
      bool shaped = true;
      for (unsigned d = 0; d < rank; ++d) {
        std::optional<int64_t> lower = getConstantIntValue(columns.getLowerBound()[d]);
        std::optional<int64_t> upper = getConstantIntValue(columns.getUpperBound()[d]);
        std::optional<int64_t> step = getConstantIntValue(columns.getStep()[d]);
        if (!lower || !upper || !step || *step != 1 || (d + 1 < rank && *upper - *lower != 1))
          shaped = false;
      }
      if (!shaped)
        continue;
      // Writes: only stores in the parallel loop, each in its thread's
      // column, and every other access to those buffers too.
      llvm::DenseSet<Value> written;
      bool legal = true;
      loop.getBody()->walk([&](Operation *op) {
        if (isa<memref::StoreOp>(op)) {
          if (!columns->isAncestor(op) || !ownColumn(op, columns))
            legal = false;
          written.insert(baseOf(cast<memref::StoreOp>(op).getMemRef()));
        } else if (!isa<memref::LoadOp>(op) && !isPure(op) &&
                   !isa<scf::IfOp, scf::ParallelOp, scf::YieldOp, scf::ReduceOp>(op)) {
          legal = false;
        }
      });
      loop.getBody()->walk([&](memref::LoadOp load) {
        if (written.contains(baseOf(load.getMemRef())) &&
            (!columns->isAncestor(load) || !ownColumn(load, columns)))
          legal = false;
      });
      if (!legal || written.empty())
        continue;
      // The rows the tokens write, where every access to the written
      // buffers is in one row a token (a subview of one row, at the same
      // offsets): that row is its owner's, a group of rows by their index
      // modulo the groups, each group's threads skipping the other groups'
      // tokens. Each element is still summed by one thread in token order.
      int64_t rows = ShapedType::kDynamic;
      Value rowKey = sharedRowOffset(loop, columns, written, rows);
      int64_t groups = 1;
      if (rowKey && scatterRowGroups > 1)
        groups = ShapedType::isDynamic(rows) ? scatterRowGroups
                                             : std::min<int64_t>(scatterRowGroups, rows);
      OpBuilder b(loop);
      Location loc = loop.getLoc();
      SmallVector<Value> lower, upper, steps;
      if (groups > 1) {
        lower.push_back(arith::ConstantIndexOp::create(b, loc, 0));
        upper.push_back(arith::ConstantIndexOp::create(b, loc, groups));
        steps.push_back(arith::ConstantIndexOp::create(b, loc, 1));
      }
      for (unsigned d = 0; d < rank; ++d) {
        auto constant = [&](Value v) {
          return arith::ConstantIndexOp::create(b, loc, *getConstantIntValue(v)).getResult();
        };
        lower.push_back(constant(columns.getLowerBound()[d]));
        upper.push_back(constant(columns.getUpperBound()[d]));
        steps.push_back(constant(columns.getStep()[d]));
      }
      auto outer = scf::ParallelOp::create(b, loc, lower, upper, steps);
      OpBuilder ob = OpBuilder::atBlockBegin(outer.getBody());
      IRMapping mapping;
      auto copy = cast<scf::ForOp>(ob.clone(*loop, mapping));
      auto moved = cast<scf::ParallelOp>(mapping.lookup(columns.getOperation()));
      // The parallel loop's body in place of it, at the outer loop's
      // indices (after the group's, where the rows are grouped), under
      // "the token's row is the group's" where they are.
      SmallVector<Value> outerIvs = outer.getInductionVars();
      for (auto [iv, column] :
           llvm::zip(moved.getInductionVars(), ArrayRef(outerIvs).drop_front(groups > 1 ? 1 : 0)))
        iv.replaceAllUsesWith(column);
      Block *into = moved->getBlock();
      Block::iterator at(moved);
      if (groups > 1) {
        OpBuilder gb(moved);
        Location l = moved.getLoc();
        Value key = mapping.lookupOrDefault(rowKey);
        Value group =
            arith::RemUIOp::create(gb, l, key, arith::ConstantIndexOp::create(gb, l, groups));
        Value owned =
            arith::CmpIOp::create(gb, l, arith::CmpIPredicate::eq, group, outerIvs.front());
        auto ifOwned = scf::IfOp::create(gb, l, owned, /*withElseRegion=*/false);
        into = ifOwned.thenBlock();
        at = Block::iterator(into->getTerminator());
      }
      Block *body = moved.getBody();
      body->getTerminator()->erase();
      into->getOperations().splice(at, body->getOperations());
      moved.erase();
      (void)copy;
      loop.erase();
      LLVM_DEBUG(llvm::dbgs() << "a scatter into rows by columns at " << loc << ", its rows in "
                              << groups << " groups\n");
    }
  }

  /// The row offset every access to `written` in `loop` shares, where each
  /// is through a subview one row high (every dimension but the last of
  /// size 1) at the same offsets, one of them a value defined outside
  /// `columns`: the row a token writes, and in `rows` the extent of its
  /// dimension where it is static. Null where there is none.
  static Value sharedRowOffset(scf::ForOp loop, scf::ParallelOp columns,
                               const llvm::DenseSet<Value> &written, int64_t &rows) {
    std::optional<SmallVector<OpFoldResult>> offsets;
    MemRefType source;
    bool shared = true;
    auto see = [&](Value memref) {
      if (!written.contains(baseOf(memref)))
        return;
      auto subview = memref.getDefiningOp<memref::SubViewOp>();
      if (!subview || columns->isAncestor(subview)) {
        shared = false;
        return;
      }
      ArrayRef<int64_t> sizes = subview.getStaticSizes();
      if (llvm::any_of(sizes.drop_back(), [](int64_t size) { return size != 1; })) {
        shared = false;
        return;
      }
      SmallVector<OpFoldResult> leading = subview.getMixedOffsets();
      leading.pop_back();
      if (!offsets) {
        offsets = leading;
        source = subview.getSourceType();
      } else if (*offsets != leading) {
        shared = false;
      }
    };
    loop.getBody()->walk([&](Operation *op) {
      if (auto load = dyn_cast<memref::LoadOp>(op))
        see(load.getMemRef());
      else if (auto store = dyn_cast<memref::StoreOp>(op))
        see(store.getMemRef());
    });
    if (!shared || !offsets)
      return {};
    for (int64_t d = static_cast<int64_t>(offsets->size()) - 1; d >= 0; --d)
      if (auto value = dyn_cast<Value>((*offsets)[d])) {
        rows = source.getDimSize(d);
        return value;
      }
    return {};
  }

  /// A scalar read outside the parallel loops, with the pure scalar work on
  /// it, moves into each parallel loop that uses it, where nothing between
  /// the read and the loop may write what it reads.
  void sinkScalarReads(func::FuncOp func) {
    SmallVector<memref::LoadOp> loads;
    func.walk([&](memref::LoadOp op) {
      if (!inParallelLoop(op))
        loads.push_back(op);
    });
    for (memref::LoadOp load : loads) {
      Block *block = load->getBlock();
      // The read and the pure scalar ops that depend on it, in order.
      SetVector<Operation *> chain;
      chain.insert(load);
      SetVector<scf::ParallelOp> loops;
      bool movable = true;
      for (size_t i = 0; i < chain.size() && movable; ++i)
        for (Value result : chain[i]->getResults())
          for (Operation *user : result.getUsers()) {
            if (auto loop = user->getParentOfType<scf::ParallelOp>();
                loop && loop->getBlock() == block) {
              loops.insert(loop);
              continue;
            }
            while (user->getBlock() != block && user->getParentOp())
              user = user->getParentOp();
            if (user->getBlock() == block && isPure(user) && user->getNumRegions() == 0 &&
                llvm::none_of(user->getResultTypes(), [](Type t) { return isa<ShapedType>(t); })) {
              chain.insert(user);
              continue;
            }
            movable = false;
          }
      if (!movable || loops.empty())
        continue;
      Value base = baseOf(load.getMemRef());
      bool safe = true;
      for (scf::ParallelOp loop : loops)
        for (Operation *op = load->getNextNode(); op && op != loop.getOperation();
             op = op->getNextNode())
          if (!chain.contains(op) && mayWrite(op, base))
            safe = false;
      if (!safe)
        continue;
      SmallVector<Operation *> ordered(chain.begin(), chain.end());
      llvm::sort(ordered, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
      for (scf::ParallelOp loop : loops) {
        OpBuilder b = OpBuilder::atBlockBegin(loop.getBody());
        IRMapping mapping;
        for (Operation *op : ordered)
          b.clone(*op, mapping);
        for (Operation *op : ordered)
          for (auto [from, to] : llvm::zip(op->getResults(), mapping.lookup(op)->getResults()))
            from.replaceUsesWithIf(
                to, [&](OpOperand &use) { return loop->isProperAncestor(use.getOwner()); });
      }
      for (Operation *op : llvm::reverse(ordered))
        if (op->use_empty())
          op->erase();
    }
  }

  /// What still reads or writes memory outside the parallel loops becomes a
  /// one-iteration parallel loop: a run of such ops (with the pure ops
  /// between them) one loop.
  LogicalResult wrapSequentialWork(Region &region) {
    for (Block &block : region) {
      SmallVector<SmallVector<Operation *>> runs;
      SmallVector<Operation *> run, between;
      for (Operation &op : block) {
        bool candidate = !isa<scf::ParallelOp>(op) && !op.hasTrait<OpTrait::IsTerminator>() &&
                         touchesMemory(&op) && !hostOnly(&op) &&
                         !isa<memref::AllocOp, memref::DeallocOp>(op);
        if (candidate) {
          llvm::append_range(run, between);
          between.clear();
          run.push_back(&op);
          continue;
        }
        if (!run.empty() && isPure(&op) && op.getNumRegions() == 0) {
          between.push_back(&op);
          continue;
        }
        between.clear();
        if (!run.empty())
          runs.push_back(std::exchange(run, {}));
        if (op.getNumRegions() > 0 && !isa<scf::ParallelOp>(op))
          for (Region &nested : op.getRegions())
            if (failed(wrapSequentialWork(nested)))
              return failure();
      }
      if (!run.empty())
        runs.push_back(run);
      for (ArrayRef<Operation *> ops : runs)
        if (failed(wrap(ops)))
          return failure();
    }
    return success();
  }

  LogicalResult wrap(ArrayRef<Operation *> ops) {
    Operation *first = ops.front();
    OpBuilder b(first);
    Location loc = first->getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{zero}, ValueRange{one}, ValueRange{one});
    // A pure op of the run the host uses after it is computed before the
    // loop as well; a memory op's result cannot leave the kernel.
    IRMapping before;
    for (Operation *op : ops) {
      bool usedAfter = llvm::any_of(op->getUsers(), [&](Operation *user) {
        while (user->getBlock() != first->getBlock() && user->getParentOp())
          user = user->getParentOp();
        return !llvm::is_contained(ops, user);
      });
      if (!usedAfter)
        continue;
      if (!isPure(op) || llvm::any_of(op->getOperands(), [&](Value v) {
            return v.getDefiningOp() && llvm::is_contained(ops, v.getDefiningOp()) &&
                   !before.contains(v);
          })) {
        InFlightDiagnostic diag = op->emitOpError()
                                  << "has no GPU lowering: it reads device memory on the host, "
                                     "which uses its result";
        return diag;
      }
      Operation *copy = b.clone(*op, before);
      for (auto [from, to] : llvm::zip(op->getResults(), copy->getResults()))
        from.replaceUsesWithIf(to, [&](OpOperand &use) {
          Operation *user = use.getOwner();
          while (user->getBlock() != first->getBlock() && user->getParentOp())
            user = user->getParentOp();
          return !llvm::is_contained(ops, user);
        });
    }
    Operation *yield = loop.getBody()->getTerminator();
    for (Operation *op : ops)
      op->moveBefore(yield);
    return success();
  }

  /// A parallel loop without results -> a nest of sequential loops.
  static void sequentialize(scf::ParallelOp loop) {
    OpBuilder b(loop);
    Location loc = loop.getLoc();
    SmallVector<Value> ivs;
    Block *body = nullptr;
    for (auto [lower, upper, step] :
         llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      auto inner = scf::ForOp::create(b, loc, lower, upper, step);
      ivs.push_back(inner.getInductionVar());
      body = inner.getBody();
      b.setInsertionPointToStart(body);
    }
    Block *from = loop.getBody();
    from->getTerminator()->erase();
    body->getOperations().splice(Block::iterator(body->getTerminator()), from->getOperations());
    for (auto [old, iv] : llvm::zip(from->getArguments(), ivs))
      old.replaceAllUsesWith(iv);
    loop.erase();
  }

  /// Tiles each top-level parallel loop for blocks of threads and maps it.
  LogicalResult tileAndMap(func::FuncOp func) {
    SmallVector<scf::ParallelOp> loops;
    func.walk([&](scf::ParallelOp op) {
      if (!op->getParentOfType<scf::ParallelOp>())
        loops.push_back(op);
    });
    MLIRContext *ctx = func.getContext();
    for (scf::ParallelOp loop : loops) {
      // Mapped already: a row reduction's blocks and threads.
      if (loop->hasAttr(gpu::getMappingAttrName()))
        continue;
      // A parallel loop inside another (a row's update in a sequential loop
      // over tokens, as embedding_grad's scatter) runs in its thread.
      SmallVector<scf::ParallelOp> nestedLoops;
      loop.getBody()->walk([&](scf::ParallelOp nested) { nestedLoops.push_back(nested); });
      for (scf::ParallelOp nested : llvm::reverse(nestedLoops))
        sequentialize(nested);
      unsigned rank = loop.getNumLoops();
      // The innermost dimension's extent, where it is a constant.
      int64_t tile = blockSize;
      std::optional<int64_t> lower = getConstantIntValue(loop.getLowerBound()[rank - 1]);
      std::optional<int64_t> upper = getConstantIntValue(loop.getUpperBound()[rank - 1]);
      std::optional<int64_t> step = getConstantIntValue(loop.getStep()[rank - 1]);
      if (lower && upper && step && *step == 1)
        tile = std::max<int64_t>(1, std::min<int64_t>(blockSize, *upper - *lower));
      // The outer dimensions as one, the rows: a grid of rows x tiles of
      // the innermost dimension, every dimension on the grid whatever the
      // rank (the x axis takes 2^31 - 1 blocks, where y and z take 65535).
      if (rank > 2) {
        Operation *after = loop->getNextNode();
        IRRewriter rewriter(ctx);
        rewriter.setInsertionPoint(loop);
        std::vector<unsigned> rows(rank - 1);
        std::iota(rows.begin(), rows.end(), 0u);
        collapseParallelLoops(rewriter, loop, {rows, {rank - 1}});
        loop = cast<scf::ParallelOp>(after->getPrevNode());
        rank = 2;
      }
      SmallVector<int64_t> sizes(rank, 1);
      sizes.back() = tile;
      auto [outer, inner] = scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);
      // The tile's innermost dimension on the block's threads; its others
      // are of extent 1.
      SmallVector<gpu::ParallelLoopDimMappingAttr> innerMap(
          rank - 1, onProcessor(ctx, gpu::Processor::Sequential));
      innerMap.push_back(onProcessor(ctx, gpu::Processor::ThreadX));
      SmallVector<gpu::ParallelLoopDimMappingAttr> outerMap{
          onProcessor(ctx, gpu::Processor::BlockX)};
      if (rank == 2)
        outerMap.push_back(onProcessor(ctx, gpu::Processor::BlockY));
      if (failed(gpu::setMappingAttr(outer, outerMap)) ||
          failed(gpu::setMappingAttr(inner, innerMap)))
        return outer.emitOpError() << "could not be mapped to blocks and threads";
      LLVM_DEBUG(llvm::dbgs() << "mapped a loop of rank " << rank << " in tiles of " << tile
                              << " threads\n");
    }
    return success();
  }
};

} // namespace
