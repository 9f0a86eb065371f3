//===- Common.h - What the tfm-to-linalg lowerings share --------------*- C++ -*-===//
//
// Part of pmlir.
//
// The builders every family of tfm-to-linalg lowerings uses: linalg.generic
// ops over static shapes, row reductions (max, sums, softmax and its
// gradient), contractions, and the pattern base that lowers an op of
// static shapes to one value. Internal to lib/Conversion/TfmToLinalg.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_CONVERSION_TFMTOLINALG_COMMON_H
#define PMLIR_CONVERSION_TFMTOLINALG_COMMON_H

#include "pmlir/Dialect/Tfm/IR/Tfm.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"

#include <cmath>
#include <utility>

namespace pmlir::tfm_to_linalg {

// Internal to the lowerings' files, which all speak MLIR.
using namespace mlir;
using utils::IteratorType;
using BodyBuilder = function_ref<Value(OpBuilder &, Location, ValueRange)>;

inline RankedTensorType tensorType(Value v) { return cast<RankedTensorType>(v.getType()); }

Value floatConst(OpBuilder &b, Location loc, Type type, double value);

Value emptyLike(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType);

Value filled(OpBuilder &b, Location loc, ArrayRef<int64_t> shape, Type elementType, double value);

/// A linalg.generic with one tensor result of `resultType` (initialized from
/// `init`, or empty), reading `inputs` through `maps` (the last map is the
/// result's). The body receives the input elements and the result element.
Value generic(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
              ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators, BodyBuilder body,
              Value init = {});

/// An all-parallel elementwise generic over `resultType`'s shape; each input
/// is read through the map in `maps` at its position.
Value elementwise(OpBuilder &b, Location loc, RankedTensorType resultType, ValueRange inputs,
                  ArrayRef<AffineMap> inputMaps, BodyBuilder body);

/// The map (d0, ..., d{rank-1}) -> (the last `n` dims).
AffineMap trailingMap(OpBuilder &b, unsigned rank, unsigned n);

/// The map (d0, ..., d{rank-1}) -> (d0, ..., d{rank-2}): a row of the last
/// dimension.
AffineMap rowMap(OpBuilder &b, unsigned rank);

/// Reduces the last dimension of `input` with `combine` starting from
/// `initial`, after mapping each element through `map` (which also sees the
/// row's previously reduced values in `rowInputs`).
Value reduceRows(OpBuilder &b, Location loc, Value input, ValueRange rowInputs, double initial,
                 function_ref<Value(OpBuilder &, Location, Value, ValueRange)> map,
                 function_ref<Value(OpBuilder &, Location, Value, Value)> combine);

/// sum over the reduction loops of lhs * rhs, into a zero-filled result.
Value contraction(OpBuilder &b, Location loc, RankedTensorType type, Value lhs, Value rhs,
                  ArrayRef<AffineMap> maps, ArrayRef<IteratorType> iterators);

/// The combining add of a row reduction. Reassociation lets LLVM keep
/// several partial sums in vector lanes; without it a sum is one serial
/// chain of scalar adds.
Value addF(OpBuilder &b, Location loc, Value x, Value y);

Value maxF(OpBuilder &b, Location loc, Value x, Value y);

/// The map of a row reduction that takes each element as it is.
inline Value identity(OpBuilder &, Location, Value x, ValueRange) { return x; }

/// Fails the match of `op` unless its operands have static shapes: the
/// lowerings compute on static shapes.
LogicalResult staticOperands(Operation *op, PatternRewriter &rewriter);

/// `v` at column (the last loop) `from + j` of a vocabulary of `vocab`, or
/// `fill` past it (in the padding).
Value maskPadding(OpBuilder &b, Location l, Value v, Value from, int64_t vocab, unsigned rank,
                  double fill);

/// The max over the last dimension; with `from`, over the columns below
/// `vocab` of a block starting at column `from`.
Value rowMax(OpBuilder &b, Location loc, Value x, Value from = {}, int64_t vocab = 0);

/// Per row of the last dimension: the max and the sum of exp(x - max), the
/// numerically safe parts of softmax and logsumexp.
std::pair<Value, Value> rowMaxAndExpSum(OpBuilder &b, Location loc, Value x);

/// Softmax over the last dimension: max, sum of exp(x - max), divide.
Value softmaxRows(OpBuilder &b, Location loc, Value x);

/// Per row of the last dimension of the tensors `full` (and the per-row
/// values `rows`), the sum of `term` over the row.
Value rowSum(OpBuilder &b, Location loc, ValueRange full, ValueRange rows,
             function_ref<Value(OpBuilder &, Location, ValueRange, ValueRange)> term);

/// The gradient of softmax over the last dimension from its output `y`:
/// factor * y * (dy - sum(y * dy)).
Value softmaxGradRows(OpBuilder &b, Location loc, Value y, Value dy, double factor = 1.0);

/// lhs @ rhs over the trailing two dims (batched when lhs has more; a rank-2
/// rhs is shared by every batch element), with optional transposes.
Value matmul(OpBuilder &b, Location loc, Value lhs, Value rhs, bool transposeLhs,
             bool transposeRhs);

/// Collapses the leading dimensions of `x` into one: [a, b, ..., w] ->
/// [a*b*..., w] (a view).
Value collapseLeading(OpBuilder &b, Location loc, Value x);

/// The lowering of an op of static shapes to the one value `lower` builds
/// (a null value: no match).
template <typename Op> struct TfmPattern : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;

  LogicalResult matchAndRewrite(Op op, PatternRewriter &rewriter) const final {
    if (failed(staticOperands(op, rewriter)))
      return failure();
    Value result = lower(op, rewriter);
    if (!result)
      return failure();
    rewriter.replaceOp(op, result);
    return success();
  }
  virtual Value lower(Op op, PatternRewriter &b) const = 0;
};

/// Each family adds its lowerings (TfmToLinalg.cpp adds them all).
void populateElementwisePatterns(RewritePatternSet &patterns);
void populateNormalizationPatterns(RewritePatternSet &patterns);
void populateMatmulPatterns(RewritePatternSet &patterns);
void populateAttentionPatterns(RewritePatternSet &patterns);
void populateEmbeddingAndLossPatterns(RewritePatternSet &patterns);
void populateOptimizerPatterns(RewritePatternSet &patterns);
void populateExpertPatterns(RewritePatternSet &patterns);

} // namespace pmlir::tfm_to_linalg

#endif // PMLIR_CONVERSION_TFMTOLINALG_COMMON_H
