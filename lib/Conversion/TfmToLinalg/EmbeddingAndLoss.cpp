//===- EmbeddingAndLoss.cpp - tfm to linalg: embeddings, cross entropy -----===//
//
// Part of pmlir.
//
// The lowerings of token embeddings and the cross-entropy loss (whole or in
// vocabulary parts), forward and gradient.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm_to_linalg;

namespace {

struct EmbeddingLowering : TfmPattern<tfm::EmbeddingOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::EmbeddingOp op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    unsigned rank = type.getRank();
    Value table = op.getTable();
    Value offset = op.getRowOffset();
    int64_t rows = tensorType(table).getShape()[0];
    // Ids are checked against the vocabulary before the program runs; a
    // vocab shard (rows_from) gives zeros for the ids other shards hold.
    return elementwise(b, op.getLoc(), type, {op.getIds()}, {rowMap(b, rank)},
                       [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                         Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
                         Value col = linalg::IndexOp::create(nb, l, rank - 1);
                         if (!offset)
                           return tensor::ExtractOp::create(nb, l, table, ValueRange{row, col});
                         Value local = arith::SubIOp::create(nb, l, row, offset);
                         // Unsigned: a negative local row is a huge one.
                         Value inBlock =
                             arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, local,
                                                   arith::ConstantIndexOp::create(nb, l, rows));
                         Value safe = arith::SelectOp::create(
                             nb, l, inBlock, local, arith::ConstantIndexOp::create(nb, l, 0));
                         Value v = tensor::ExtractOp::create(nb, l, table, ValueRange{safe, col});
                         return arith::SelectOp::create(
                             nb, l, inBlock, v, floatConst(nb, l, type.getElementType(), 0.0));
                       });
  }
};

/// Per token of `logits` [..., Vb], columns [from, from + Vb) of a
/// vocabulary of `vocab`: [sum of exp(logit - max) over the columns below
/// `vocab`, logit[label] - max if the label is in the block, else 0]
/// (tfm.cross_entropy_parts). `from` is null for the whole vocabulary.
Value crossEntropyParts(OpBuilder &b, Location loc, Value logits, Value labels, Value max,
                        Value from, int64_t vocab) {
  RankedTensorType type = tensorType(logits);
  Type t = type.getElementType();
  unsigned rank = type.getRank();
  int64_t columns = type.getShape().back();
  Value sum = reduceRows(
      b, loc, logits, {max}, 0.0,
      [&](OpBuilder &nb, Location l, Value v, ValueRange row) -> Value {
        Value e = math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, v, row[0]));
        // Padding columns (past the vocabulary) count for nothing.
        return from ? maskPadding(nb, l, e, from, vocab, rank, 0.0) : e;
      },
      addF);
  unsigned tokenRank = rank - 1;
  auto tokensType = RankedTensorType::get(type.getShape().drop_back(), t);
  Value picked = elementwise(
      b, loc, tokensType, {labels, max},
      {b.getMultiDimIdentityMap(tokenRank), b.getMultiDimIdentityMap(tokenRank)},
      [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value column = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[0]);
        if (from)
          column = arith::SubIOp::create(nb, l, column, from);
        // Unsigned: a label before the block is a huge column. Labels
        // outside the block (ignored ones among them) read column 0.
        Value inBlock = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, column,
                                              arith::ConstantIndexOp::create(nb, l, columns));
        Value safe = arith::SelectOp::create(nb, l, inBlock, column,
                                             arith::ConstantIndexOp::create(nb, l, 0));
        SmallVector<Value> idx;
        for (unsigned i = 0; i < tokenRank; ++i)
          idx.push_back(linalg::IndexOp::create(nb, l, i));
        idx.push_back(safe);
        Value logit = tensor::ExtractOp::create(nb, l, logits, idx);
        return arith::SelectOp::create(nb, l, inBlock, arith::SubFOp::create(nb, l, logit, a[1]),
                                       floatConst(nb, l, t, 0.0));
      });
  SmallVector<int64_t> partsShape(type.getShape().drop_back());
  partsShape.push_back(2);
  auto partsType = RankedTensorType::get(partsShape, t);
  return elementwise(b, loc, partsType, {sum, picked}, {rowMap(b, rank), rowMap(b, rank)},
                     [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
                       Value first =
                           arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                                 linalg::IndexOp::create(nb, l, rank - 1),
                                                 arith::ConstantIndexOp::create(nb, l, 0));
                       return arith::SelectOp::create(nb, l, first, a[0], a[1]);
                     });
}

/// The mean over tokens whose label is not `ignore` of log(parts[..., 0]) -
/// parts[..., 1] (tfm.cross_entropy_combine).
Value crossEntropyCombine(OpBuilder &b, Location loc, Value parts, Value labels, int64_t ignore) {
  RankedTensorType type = tensorType(parts);
  Type t = type.getElementType();
  unsigned tokenRank = type.getRank() - 1;
  auto scalar = RankedTensorType::get({}, t);
  Type labelType = tensorType(labels).getElementType();
  // Sum over tokens of the loss and the count of counted tokens; the token
  // loops are reductions, the parts' last dimension is read by index.
  AffineMap tokens = b.getMultiDimIdentityMap(tokenRank);
  AffineMap toScalar = AffineMap::get(tokenRank, 0, {}, b.getContext());
  SmallVector<IteratorType> iters(tokenRank, IteratorType::reduction);
  auto totals = linalg::GenericOp::create(
      b, loc, TypeRange{scalar, scalar}, ValueRange{labels},
      ValueRange{filled(b, loc, {}, t, 0.0), filled(b, loc, {}, t, 0.0)},
      SmallVector<AffineMap>{tokens, toScalar, toScalar}, iters,
      [&](OpBuilder &nb, Location l, ValueRange a) {
        Value counted = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::ne, a[0],
            arith::ConstantOp::create(nb, l, nb.getIntegerAttr(labelType, ignore)));
        SmallVector<Value> idx;
        for (unsigned i = 0; i < tokenRank; ++i)
          idx.push_back(linalg::IndexOp::create(nb, l, i));
        idx.push_back(arith::ConstantIndexOp::create(nb, l, 0));
        Value sum = tensor::ExtractOp::create(nb, l, parts, idx);
        idx.back() = arith::ConstantIndexOp::create(nb, l, 1);
        Value picked = tensor::ExtractOp::create(nb, l, parts, idx);
        Value loss = arith::SubFOp::create(nb, l, math::LogOp::create(nb, l, sum), picked);
        Value zeroF = floatConst(nb, l, t, 0.0);
        Value oneF = floatConst(nb, l, t, 1.0);
        Value lossSum = arith::AddFOp::create(nb, l, a[1],
                                              arith::SelectOp::create(nb, l, counted, loss, zeroF));
        Value count = arith::AddFOp::create(nb, l, a[2],
                                            arith::SelectOp::create(nb, l, counted, oneF, zeroF));
        linalg::YieldOp::create(nb, l, ValueRange{lossSum, count});
      });
  return generic(b, loc, scalar, {totals.getResult(0), totals.getResult(1)},
                 SmallVector<AffineMap>(3, AffineMap::get(0, 0, b.getContext())), {},
                 [](OpBuilder &nb, Location l, ValueRange a) -> Value {
                   return arith::DivFOp::create(nb, l, a[0], a[1]);
                 });
}

struct RowMaxLowering : TfmPattern<tfm::RowMaxOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::RowMaxOp op, PatternRewriter &b) const override {
    return rowMax(b, op.getLoc(), op.getInput(), op.getVocabFrom(), op.getVocab().value_or(0));
  }
};

struct CrossEntropyPartsLowering : TfmPattern<tfm::CrossEntropyPartsOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyPartsOp op, PatternRewriter &b) const override {
    return crossEntropyParts(b, op.getLoc(), op.getLogits(), op.getLabels(), op.getMax(),
                             op.getVocabFrom(), op.getVocab());
  }
};

struct CrossEntropyCombineLowering : TfmPattern<tfm::CrossEntropyCombineOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyCombineOp op, PatternRewriter &b) const override {
    return crossEntropyCombine(b, op.getLoc(), op.getParts(), op.getLabels(), op.getIgnoreIndex());
  }
};

/// The exp sums of tfm.cross_entropy_parts' `parts` ([..., 2]): the first
/// entry of each token's.
Value expSums(OpBuilder &b, Location loc, Value parts) {
  RankedTensorType type = tensorType(parts);
  unsigned rank = type.getRank();
  SmallVector<int64_t> tokens(type.getShape().drop_back());
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  for (int64_t d : tokens)
    sizes.push_back(b.getIndexAttr(d));
  sizes.push_back(b.getIndexAttr(1));
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(tokens, type.getElementType()), parts, offsets, sizes, strides);
}

/// (softmax(logits) - onehot(label)) * grad / count per counted token of
/// tfm.cross_entropy_grad `op`, from each token's `max` and `sum` of
/// exp(logit - max), over the whole vocabulary even where the logits are a
/// block of it; padding columns and ignored tokens get 0.
Value crossEntropyGradient(OpBuilder &b, tfm::CrossEntropyGradOp op, Value max, Value sum) {
  Location loc = op.getLoc();
  Value logits = op.getLogits();
  RankedTensorType type = tensorType(logits);
  unsigned rank = type.getRank();
  Type t = type.getElementType();
  Value from = op.getVocabFrom();
  int64_t vocab = op.getVocab() ? static_cast<int64_t>(*op.getVocab()) : type.getShape().back();
  AffineMap id = b.getMultiDimIdentityMap(rank), row = rowMap(b, rank);
  AffineMap scalar = AffineMap::get(rank, 0, {}, b.getContext());
  Type labelType = tensorType(op.getLabels()).getElementType();
  int64_t ignore = op.getIgnoreIndex();
  return elementwise(
      b, loc, type, {logits, max, sum, op.getLabels(), op.getGrad(), op.getCount()},
      {id, row, row, row, scalar, scalar}, [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
        Value p = arith::DivFOp::create(
            nb, l, math::ExpOp::create(nb, l, arith::SubFOp::create(nb, l, a[0], a[1])), a[2]);
        Value column = linalg::IndexOp::create(nb, l, rank - 1);
        if (from)
          column = arith::AddIOp::create(nb, l, column, from);
        Value label = arith::IndexCastOp::create(nb, l, nb.getIndexType(), a[3]);
        Value isLabel = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, column, label);
        Value d =
            arith::SubFOp::create(nb, l, p,
                                  arith::SelectOp::create(nb, l, isLabel, floatConst(nb, l, t, 1.0),
                                                          floatConst(nb, l, t, 0.0)));
        d = arith::MulFOp::create(nb, l, d, arith::DivFOp::create(nb, l, a[4], a[5]));
        Value counted = arith::CmpIOp::create(
            nb, l, arith::CmpIPredicate::ne, a[3],
            arith::ConstantOp::create(nb, l, nb.getIntegerAttr(labelType, ignore)));
        Value inVocab = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, column,
                                              arith::ConstantIndexOp::create(nb, l, vocab));
        Value keep = arith::AndIOp::create(nb, l, counted, inVocab);
        return arith::SelectOp::create(nb, l, keep, d, floatConst(nb, l, t, 0.0));
      });
}

/// The whole vocabulary is one block. Its gradients later in the block
/// (tfm.cross_entropy_grad of the same logits, labels and ignore index,
/// without a max of their own) are lowered here too, with this max and exp
/// sum: the backward does not read the logits twice more to find them.
struct CrossEntropyLowering : TfmPattern<tfm::CrossEntropyOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value logits = op.getLogits();
    Value max = rowMax(b, loc, logits);
    Value parts = crossEntropyParts(b, loc, logits, op.getLabels(), max, Value(),
                                    tensorType(logits).getShape().back());
    Value loss = crossEntropyCombine(b, loc, parts, op.getLabels(), op.getIgnoreIndex());
    SmallVector<tfm::CrossEntropyGradOp> gradients;
    for (Operation *user : logits.getUsers())
      if (auto grad = dyn_cast<tfm::CrossEntropyGradOp>(user))
        if (!grad.getMax() && !grad.getVocabFrom() && grad.getLabels() == op.getLabels() &&
            grad.getIgnoreIndex() == op.getIgnoreIndex() && grad->getBlock() == op->getBlock() &&
            op->isBeforeInBlock(grad))
          gradients.push_back(grad);
    OpBuilder::InsertionGuard guard(b);
    for (tfm::CrossEntropyGradOp grad : gradients) {
      b.setInsertionPoint(grad);
      b.replaceOp(grad, crossEntropyGradient(b, grad, max, expSums(b, grad.getLoc(), parts)));
    }
    return loss;
  }
};

/// The tfm.add that is the only use of `op` with an addend of the same
/// type: a tied table's gradient, the LM head's plus the embedding's.
tfm::AddOp soleSameTypeSum(tfm::EmbeddingGradOp op) {
  if (!op->hasOneUse())
    return {};
  auto add = dyn_cast<tfm::AddOp>(*op->user_begin());
  if (!add || add.getLhs().getType() != add.getRhs().getType() ||
      add.getType() != op.getResult().getType())
    return {};
  return add;
}

/// A scatter-add of the gradient's rows into a zeroed table, one token at a
/// time: each token's row is added to the table row of its id (ids outside
/// a vocab-parallel block add nothing). Bufferization makes the loop's
/// table one buffer updated in place. Where the gradient's only use adds
/// it to a table of the same type (a tied table: the LM head's dense
/// gradient), the rows are added into that one instead, at the add: a
/// table-sized fill and a table-sized sum fewer.
struct EmbeddingGradLowering : TfmPattern<tfm::EmbeddingGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::EmbeddingGradOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType tableType = tensorType(op.getResult());
    tfm::AddOp sum = soleSameTypeSum(op);
    if (sum)
      b.setInsertionPoint(sum);
    int64_t rows = tableType.getShape()[0], hidden = tableType.getShape()[1];
    Type t = tableType.getElementType();
    Value grad = collapseLeading(b, loc, op.getGrad());
    RankedTensorType idsType = tensorType(op.getIds());
    int64_t tokens = idsType.getNumElements();
    Value ids = op.getIds();
    if (idsType.getRank() != 1) {
      ReassociationIndices all;
      for (int64_t d = 0; d < idsType.getRank(); ++d)
        all.push_back(d);
      ids = tensor::CollapseShapeOp::create(
          b, loc, RankedTensorType::get({tokens}, idsType.getElementType()), ids,
          ArrayRef<ReassociationIndices>{all});
    }
    Value table;
    if (sum)
      table = sum.getLhs() == op.getResult() ? sum.getRhs() : sum.getLhs();
    else
      table = filled(b, loc, {rows, hidden}, t, 0.0);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    Value offset = op.getRowOffset();
    auto rowType = RankedTensorType::get({1, hidden}, t);
    auto loop = scf::ForOp::create(
        b, loc, zero, arith::ConstantIndexOp::create(b, loc, tokens), one, ValueRange{table},
        [&](OpBuilder &nb, Location l, Value token, ValueRange acc) {
          Value id = tensor::ExtractOp::create(nb, l, ids, ValueRange{token});
          Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), id);
          if (offset)
            row = arith::SubIOp::create(nb, l, row, offset);
          // Unsigned: a negative local row is a huge one.
          Value inBlock = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ult, row,
                                                arith::ConstantIndexOp::create(nb, l, rows));
          auto added = scf::IfOp::create(
              nb, l, inBlock,
              [&](OpBuilder &tb, Location tl) {
                SmallVector<OpFoldResult> at = {row, tb.getIndexAttr(0)};
                SmallVector<OpFoldResult> size = {tb.getIndexAttr(1), tb.getIndexAttr(hidden)};
                SmallVector<OpFoldResult> unit = {tb.getIndexAttr(1), tb.getIndexAttr(1)};
                SmallVector<OpFoldResult> from = {token, tb.getIndexAttr(0)};
                Value target =
                    tensor::ExtractSliceOp::create(tb, tl, rowType, acc[0], at, size, unit);
                Value source =
                    tensor::ExtractSliceOp::create(tb, tl, rowType, grad, from, size, unit);
                AffineMap id = tb.getMultiDimIdentityMap(2);
                auto sum = linalg::GenericOp::create(
                    tb, tl, TypeRange{rowType}, ValueRange{source}, ValueRange{target},
                    SmallVector<AffineMap>{id, id},
                    SmallVector<IteratorType>(2, IteratorType::parallel),
                    [](OpBuilder &gb, Location gl, ValueRange a) {
                      linalg::YieldOp::create(
                          gb, gl, arith::AddFOp::create(gb, gl, a[1], a[0]).getResult());
                    });
                Value updated =
                    tensor::InsertSliceOp::create(tb, tl, sum.getResult(0), acc[0], at, size, unit);
                scf::YieldOp::create(tb, tl, updated);
              },
              [&](OpBuilder &eb, Location el) { scf::YieldOp::create(eb, el, acc[0]); });
          scf::YieldOp::create(nb, l, added.getResult(0));
        });
    if (sum)
      b.replaceOp(sum, loop.getResult(0));
    return loop.getResult(0);
  }
};

struct CountTokensLowering : TfmPattern<tfm::CountTokensOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CountTokensOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType labels = tensorType(op.getLabels());
    unsigned rank = labels.getRank();
    auto scalar = tensorType(op.getResult());
    Type t = scalar.getElementType();
    Type labelType = labels.getElementType();
    int64_t ignore = op.getIgnoreIndex();
    return generic(
        b, loc, scalar, {op.getLabels()},
        {b.getMultiDimIdentityMap(rank), AffineMap::get(rank, 0, {}, b.getContext())},
        SmallVector<IteratorType>(rank, IteratorType::reduction),
        [&](OpBuilder &nb, Location l, ValueRange a) -> Value {
          Value counted = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::ne, a[0],
              arith::ConstantOp::create(nb, l, nb.getIntegerAttr(labelType, ignore)));
          Value add = arith::SelectOp::create(nb, l, counted, floatConst(nb, l, t, 1.0),
                                              floatConst(nb, l, t, 0.0));
          return arith::AddFOp::create(nb, l, a[1], add);
        },
        filled(b, loc, {}, t, 0.0));
  }
};

/// tfm.cross_entropy_grad, with the max and exp sum the op has (a
/// vocabulary block's, made by the partition) or its own. A gradient whose
/// forward is in the same block was lowered with the forward's
/// (CrossEntropyLowering).
struct CrossEntropyGradLowering : TfmPattern<tfm::CrossEntropyGradOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::CrossEntropyGradOp op, PatternRewriter &b) const override {
    Value max = op.getMax(), sum;
    if (max)
      sum = expSums(b, op.getLoc(), op.getParts());
    else
      std::tie(max, sum) = rowMaxAndExpSum(b, op.getLoc(), op.getLogits());
    return crossEntropyGradient(b, op, max, sum);
  }
};

} // namespace

void pmlir::tfm_to_linalg::populateEmbeddingAndLossPatterns(RewritePatternSet &patterns) {
  patterns.add<EmbeddingLowering, EmbeddingGradLowering, RowMaxLowering, CrossEntropyPartsLowering,
               CrossEntropyCombineLowering, CrossEntropyLowering, CountTokensLowering,
               CrossEntropyGradLowering>(patterns.getContext());
}
