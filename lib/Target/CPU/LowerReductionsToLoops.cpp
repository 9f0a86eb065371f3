//===- LowerReductionsToLoops.cpp - Row reductions with sums in registers -===//
//
// Part of pmlir.
//
// A linalg.generic on buffers whose innermost loops are its reductions
// becomes scf.for loops that load each output element once, carry its
// running value through the reduction loops (iter_args) and store it once.
// Upstream's convert-linalg-to-loops loads and stores the output in every
// iteration; LLVM then vectorizes the loop only if it can keep the value
// in a register, which it cannot where two outputs may alias (a layer
// norm's backward sums two things a row): such a loop stayed scalar. See
// Passes.td.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Target/CPU/Passes.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/ViewLikeInterface.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace pmlir {
#define GEN_PASS_DEF_LOWERREDUCTIONSTOLOOPS
#include "pmlir/Target/CPU/Passes.h.inc"
} // namespace pmlir

using namespace mlir;

namespace {

/// The buffer `value` is a view of (through subviews, reshapes and casts).
Value underlyingBuffer(Value value) {
  while (auto view = value.getDefiningOp<ViewLikeOpInterface>())
    value = view.getViewSource();
  return value;
}

/// The indices `map` gives for the loops' induction variables `ivs`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map, ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    AffineMap one = AffineMap::get(map.getNumDims(), map.getNumSymbols(), expr);
    OpFoldResult index = affine::makeComposedFoldedAffineApply(b, loc, one, getAsOpFoldResult(ivs));
    indices.push_back(getValueOrCreateConstantIndexOp(b, loc, index));
  }
  return indices;
}

/// The first reduction loop of `op` if every loop from it on is a reduction
/// and at least one is, and no output is indexed by a reduction loop.
std::optional<unsigned> innermostReductions(linalg::GenericOp op) {
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  auto first = llvm::find(iterators, utils::IteratorType::reduction);
  if (first == iterators.end() || !std::all_of(first, iterators.end(), [](utils::IteratorType t) {
        return t == utils::IteratorType::reduction;
      }))
    return std::nullopt;
  unsigned begin = first - iterators.begin();
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    for (unsigned d = begin; d < iterators.size(); ++d)
      if (map.isFunctionOfDim(d))
        return std::nullopt;
  }
  return begin;
}

struct LowerReduction : OpRewritePattern<linalg::GenericOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(linalg::GenericOp op, PatternRewriter &rewriter) const override {
    if (!op.hasPureBufferSemantics())
      return failure();
    std::optional<unsigned> reductions = innermostReductions(op);
    if (!reductions)
      return failure();
    // linalg.index is mapped to the loops' variables where the body uses it
    // directly; inside a nested region it is left to upstream's lowering.
    bool nestedIndex = false;
    op.getRegion().walk(
        [&](linalg::IndexOp index) { nestedIndex |= index->getParentOp() != op.getOperation(); });
    if (nestedIndex)
      return failure();
    // An input in an output's buffer would be read after the output's
    // element was written in memory, which the running values in registers
    // do not do (bufferization gives a reduction no such operands).
    for (OpOperand *input : op.getDpsInputOperands())
      for (OpOperand &init : op.getDpsInitsMutable())
        if (isa<MemRefType>(input->get().getType()) &&
            underlyingBuffer(input->get()) == underlyingBuffer(init.get()))
          return failure();

    Location loc = op.getLoc();
    SmallVector<Value> lbs, ubs, steps;
    for (const Range &range :
         cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(rewriter, loc)) {
      lbs.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, range.offset));
      ubs.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, range.size));
      steps.push_back(getValueOrCreateConstantIndexOp(rewriter, loc, range.stride));
    }
    unsigned split = *reductions;
    Block &body = op.getRegion().front();
    auto inits = op.getDpsInitsMutable();

    scf::buildLoopNest(
        rewriter, loc, ArrayRef(lbs).take_front(split), ArrayRef(ubs).take_front(split),
        ArrayRef(steps).take_front(split), [&](OpBuilder &b, Location loc, ValueRange outer) {
          // The output elements, indexed by the outer loops only: their
          // maps do not read the reduction loops' variables, zeros here.
          SmallVector<Value> ivs(outer);
          Value zero = arith::ConstantIndexOp::create(b, loc, 0);
          ivs.append(lbs.size() - split, zero);
          SmallVector<SmallVector<Value>> at;
          SmallVector<Value> running;
          for (OpOperand &init : inits) {
            at.push_back(indicesAt(b, loc, op.getMatchingIndexingMap(&init), ivs));
            running.push_back(memref::LoadOp::create(b, loc, init.get(), at.back()));
          }
          scf::LoopNest inner = scf::buildLoopNest(
              b, loc, ArrayRef(lbs).drop_front(split), ArrayRef(ubs).drop_front(split),
              ArrayRef(steps).drop_front(split), running,
              [&](OpBuilder &b, Location loc, ValueRange innerIvs, ValueRange values) {
                SmallVector<Value> all(outer);
                all.append(innerIvs.begin(), innerIvs.end());
                IRMapping map;
                for (OpOperand *input : op.getDpsInputOperands()) {
                  Value value = input->get();
                  if (isa<MemRefType>(value.getType()))
                    value = memref::LoadOp::create(
                        b, loc, value, indicesAt(b, loc, op.getMatchingIndexingMap(input), all));
                  map.map(op.getMatchingBlockArgument(input), value);
                }
                for (auto [init, value] : llvm::zip(inits, values))
                  map.map(op.getMatchingBlockArgument(&init), value);
                for (Operation &inner : body.without_terminator()) {
                  if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
                    map.map(index.getResult(), all[index.getDim()]);
                    continue;
                  }
                  b.clone(inner, map);
                }
                SmallVector<Value> yielded;
                for (Value value : body.getTerminator()->getOperands())
                  yielded.push_back(map.lookupOrDefault(value));
                return yielded;
              });
          for (auto [init, result, indices] : llvm::zip(inits, inner.results, at))
            memref::StoreOp::create(b, loc, result, init.get(), indices);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

struct LowerReductionsToLoopsPass
    : public pmlir::impl::LowerReductionsToLoopsBase<LowerReductionsToLoopsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<LowerReduction>(&getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
