//===- GpuKernelLoops.cpp - Every memory access of the host in a kernel ---===//
//
// Part of pmlir.
//
// Every linalg op on buffers becomes a parallel loop over its parallel
// dimensions (outermost) with its reductions sequential inside. A host
// function still reads and writes memory in places: copies, scalar reads
// before a loop (AdamW's step and gradient norm), sequential reductions to
// a scalar (a loss's mean). On a GPU every buffer is device memory, so
// those become parallel loops too, and each top-level parallel loop is
// tiled and mapped: its innermost
// dimension in blocks of `block-size` threads (thread_x, block_x), the next
// two outer dimensions on block_y and block_z, any further ones looped in
// each thread; a parallel loop nested in sequential work (embedding_grad's
// row updates inside its loop over tokens) runs in the one thread of that
// work. convert-parallel-loops-to-gpu then makes each a kernel.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/GPU/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "llvm/Support/Debug.h"

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
      if (failed(toParallelLoops(func)))
        return signalPassFailure();
      lowerCopies(func);
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
      if (auto generic = dyn_cast<linalg::GenericOp>(op.getOperation());
          generic && succeeded(rowReduction(rewriter, generic))) {
        rewriter.eraseOp(op);
        continue;
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

  /// A reduction along the innermost dimension (a row's sum or max: norms,
  /// softmax, a logsumexp) as one block a row: the block's threads stride
  /// over the row, each keeping its own partial, and combine them
  /// (gpu.all_reduce: warp shuffles and shared memory). Reads of a row are
  /// then coalesced across the threads, where one thread a row would read
  /// with the row's stride. Fails (for the general lowering) on any other
  /// generic: several reductions, an output indexed by the reduced
  /// dimension, a combiner other than add, max or min, an accumulator the
  /// body reads elsewhere.
  LogicalResult rowReduction(IRRewriter &b, linalg::GenericOp op) {
    SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
    unsigned loops = iterators.size();
    if (loops < 2 || op.getNumDpsInits() != 1 ||
        llvm::count(iterators, utils::IteratorType::reduction) != 1 ||
        iterators.back() != utils::IteratorType::reduction)
      return failure();
    SmallVector<AffineMap> maps = op.getIndexingMapsArray();
    if (maps.back().isFunctionOfDim(loops - 1) || !maps.back().isProjectedPermutation())
      return failure();
    Block &body = op.getRegion().front();
    auto yield = cast<linalg::YieldOp>(body.getTerminator());
    BlockArgument acc = body.getArguments().back();
    Operation *combiner = yield.getValues()[0].getDefiningOp();
    if (!combiner || combiner->getNumOperands() != 2 || !acc.hasOneUse() ||
        acc.getUses().begin()->getOwner() != combiner)
      return failure();
    Value element =
        combiner->getOperand(0) == acc ? combiner->getOperand(1) : combiner->getOperand(0);
    Location loc = op.getLoc();
    b.setInsertionPoint(op);
    Value identity = identityOf(b, loc, combiner, acc.getType());
    if (!identity)
      return failure();
    // The loop bounds: every dimension's extent.
    SmallVector<Range> loopRanges =
        cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc);
    SmallVector<Value> lower, upper, steps;
    for (unsigned d = 0; d + 1 < loops; ++d) {
      lower.push_back(getValueOrCreateConstantIndexOp(b, loc, loopRanges[d].offset));
      upper.push_back(getValueOrCreateConstantIndexOp(b, loc, loopRanges[d].size));
      steps.push_back(getValueOrCreateConstantIndexOp(b, loc, loopRanges[d].stride));
    }
    Value extent = getValueOrCreateConstantIndexOp(b, loc, loopRanges.back().size);
    int64_t threads = blockSize;
    if (std::optional<int64_t> k = getConstantIntValue(loopRanges.back().size))
      threads = std::max<int64_t>(1, std::min<int64_t>(blockSize, *k));
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value width = arith::ConstantIndexOp::create(b, loc, threads);
    MLIRContext *ctx = op.getContext();
    // Loads an operand at the loop indices `ivs` through its indexing map.
    auto load = [&](OpBuilder &nb, Value memref, AffineMap map, ValueRange ivs) {
      SmallVector<Value> indices;
      for (AffineExpr expr : map.getResults())
        indices.push_back(
            affine::AffineApplyOp::create(nb, loc, AffineMap::get(map.getNumDims(), 0, expr), ivs));
      return memref::LoadOp::create(nb, loc, memref, indices).getResult();
    };
    Value out = op.getDpsInits()[0];
    auto rows = scf::ParallelOp::create(b, loc, lower, upper, steps);
    {
      OpBuilder nb = OpBuilder::atBlockBegin(rows.getBody());
      SmallVector<Value> rowIvs = rows.getInductionVars();
      // Every thread reads the row's old value before the block's
      // reduction, whose barrier comes before any thread's store.
      SmallVector<Value> outIndices;
      for (AffineExpr expr : maps.back().getResults())
        outIndices.push_back(rowIvs[cast<AffineDimExpr>(expr).getPosition()]);
      Value old = memref::LoadOp::create(nb, loc, out, outIndices);
      auto lanes = scf::ParallelOp::create(
          nb, loc, ValueRange{zero}, ValueRange{width}, ValueRange{one}, ValueRange{identity},
          [&](OpBuilder &lb, Location, ValueRange laneIvs, ValueRange) {
            auto strided = scf::ForOp::create(
                lb, loc, laneIvs[0], extent, width, ValueRange{identity},
                [&](OpBuilder &fb, Location, Value k, ValueRange iter) {
                  SmallVector<Value> ivs(rowIvs.begin(), rowIvs.end());
                  ivs.push_back(k);
                  IRMapping mapping;
                  for (auto [arg, input, map] :
                       llvm::zip(body.getArguments().drop_back(), op.getDpsInputs(), maps))
                    mapping.map(arg, load(fb, input, map, ivs));
                  for (Operation &inner : body.without_terminator())
                    if (&inner != combiner)
                      fb.clone(inner, mapping);
                  Operation *sum = fb.clone(*combiner, mapping);
                  sum->setOperand(0, iter[0]);
                  sum->setOperand(1, mapping.lookupOrDefault(element));
                  scf::YieldOp::create(fb, loc, sum->getResult(0));
                });
            // The reduce's region comes with its block of two arguments.
            auto reduce = scf::ReduceOp::create(lb, loc, strided.getResult(0));
            Block &combine = reduce.getReductions()[0].front();
            OpBuilder cb = OpBuilder::atBlockBegin(&combine);
            Operation *pair = cb.clone(*combiner);
            pair->setOperand(0, combine.getArgument(0));
            pair->setOperand(1, combine.getArgument(1));
            scf::ReduceReturnOp::create(cb, loc, pair->getResult(0));
          });
      Operation *total = nb.clone(*combiner);
      total->setOperand(0, old);
      total->setOperand(1, lanes.getResult(0));
      memref::StoreOp::create(nb, loc, total->getResult(0), out, outIndices);
      (void)gpu::setMappingAttr(lanes, {onProcessor(ctx, gpu::Processor::ThreadX)});
    }
    (void)gpu::setMappingAttr(rows, onBlocks(ctx, loops - 1));
    return success();
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
      SmallVector<int64_t> sizes(rank, 1);
      sizes.back() = tile;
      auto [outer, inner] = scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);
      // The tile's innermost dimension on the block's threads; its others
      // are of extent 1.
      SmallVector<gpu::ParallelLoopDimMappingAttr> innerMap(
          rank - 1, onProcessor(ctx, gpu::Processor::Sequential));
      innerMap.push_back(onProcessor(ctx, gpu::Processor::ThreadX));
      if (failed(gpu::setMappingAttr(outer, onBlocks(ctx, rank))) ||
          failed(gpu::setMappingAttr(inner, innerMap)))
        return outer.emitOpError() << "could not be mapped to blocks and threads";
      LLVM_DEBUG(llvm::dbgs() << "mapped a loop of rank " << rank << " in tiles of " << tile
                              << " threads\n");
    }
    return success();
  }
};

} // namespace
