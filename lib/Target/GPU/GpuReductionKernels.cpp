//===- GpuReductionKernels.cpp - Reductions as blocks of threads ----------===//
//
// Part of pmlir.
//
// Row reductions, with the elementwise work before and after them over the
// same rows, become one block a row; another reduction of many elements
// into each value one block a value, or, where that leaves the GPU idle (a
// whole tensor to one value), a block a slice of each value's elements and
// a second kernel over the slices' partials. Their loops are mapped to
// blocks and threads here; pmlir-gpu-tile-and-map leaves them as they are.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "KernelLoops.h"

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

#define DEBUG_TYPE "pmlir-gpu-reduction-kernels"

namespace pmlir {
#define GEN_PASS_DEF_GPUREDUCTIONKERNELS
#include "pmlir/Target/GPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;
using namespace pmlir::kernel_loops;

namespace {

struct GpuReductionKernelsPass
    : public pmlir::impl::GpuReductionKernelsBase<GpuReductionKernelsPass> {
  using GpuReductionKernelsBase::GpuReductionKernelsBase;

  void runOnOperation() override {
    if (failed(checkBlockSize(getOperation(), blockSize, getArgument())))
      return signalPassFailure();
    if (std::optional<std::string> problem = reductionBlocksProblem(reductionBlocks)) {
      getOperation()->emitError() << getArgument() << ": " << *problem;
      return signalPassFailure();
    }
    for (auto func : getOperation().getOps<func::FuncOp>())
      if (!func.isExternal())
        fuseRows(func);
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
};

} // namespace
