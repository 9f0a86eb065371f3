//===- Elementwise.cpp - tfm to linalg: elementwise ops, fills, concat, split ===//
//
// Part of pmlir.
//
// The lowerings of elementwise arithmetic and activations, their gradients,
// fills, and the concatenation and split of tensors.
//
//===----------------------------------------------------------------------===//

#include "Common.h"

using namespace mlir;
using namespace pmlir;
using namespace pmlir::tfm_to_linalg;

namespace {

template <typename Op, typename ArithOp> struct BinaryLowering : TfmPattern<Op> {
  using TfmPattern<Op>::TfmPattern;
  Value lower(Op op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    unsigned rank = type.getRank();
    unsigned rhsRank = tensorType(op.getRhs()).getRank();
    return elementwise(b, op.getLoc(), type, {op.getLhs(), op.getRhs()},
                       {b.getMultiDimIdentityMap(rank), trailingMap(b, rank, rhsRank)},
                       [](OpBuilder &nb, Location loc, ValueRange args) -> Value {
                         return ArithOp::create(nb, loc, args[0], args[1]);
                       });
  }
};

/// Elementwise ops of one operand whose body is a function of the element.
template <typename Op> struct UnaryLowering : TfmPattern<Op> {
  using TfmPattern<Op>::TfmPattern;
  virtual Value body(Op op, OpBuilder &b, Location loc, Value x) const = 0;
  Value lower(Op op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    return elementwise(
        b, op.getLoc(), type, {op->getOperand(0)}, {b.getMultiDimIdentityMap(type.getRank())},
        [&](OpBuilder &nb, Location loc, ValueRange args) { return body(op, nb, loc, args[0]); });
  }
};

struct ScaleLowering : UnaryLowering<tfm::ScaleOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::ScaleOp op, OpBuilder &b, Location loc, Value x) const override {
    Value c = floatConst(b, loc, x.getType(), op.getFactor().convertToDouble());
    return arith::MulFOp::create(b, loc, x, c);
  }
};

struct GeluLowering : UnaryLowering<tfm::GeluOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::GeluOp op, OpBuilder &b, Location loc, Value x) const override {
    Type t = x.getType();
    Value half = floatConst(b, loc, t, 0.5);
    Value one = floatConst(b, loc, t, 1.0);
    Value inner;
    if (op.getApproximation() == tfm::GeluApproximation::tanh) {
      // tanh(sqrt(2/pi) * (x + 0.044715 x^3))
      Value x3 = arith::MulFOp::create(b, loc, x, arith::MulFOp::create(b, loc, x, x));
      Value poly = arith::AddFOp::create(
          b, loc, x, arith::MulFOp::create(b, loc, floatConst(b, loc, t, 0.044715), x3));
      inner = math::TanhOp::create(
          b, loc,
          arith::MulFOp::create(b, loc, floatConst(b, loc, t, std::sqrt(2.0 / M_PI)), poly));
    } else {
      inner = math::ErfOp::create(
          b, loc, arith::MulFOp::create(b, loc, x, floatConst(b, loc, t, M_SQRT1_2)));
    }
    return arith::MulFOp::create(b, loc, arith::MulFOp::create(b, loc, half, x),
                                 arith::AddFOp::create(b, loc, one, inner));
  }
};

struct SiluLowering : UnaryLowering<tfm::SiluOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::SiluOp, OpBuilder &b, Location loc, Value x) const override {
    Value one = floatConst(b, loc, x.getType(), 1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    return arith::DivFOp::create(b, loc, x, arith::AddFOp::create(b, loc, one, e));
  }
};

struct SplitLowering : OpRewritePattern<tfm::SplitOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(tfm::SplitOp op, PatternRewriter &b) const override {
    RankedTensorType in = tensorType(op.getInput());
    if (!in.hasStaticShape())
      return b.notifyMatchFailure(op, "dynamic shapes are not lowered");
    unsigned rank = in.getRank();
    int64_t dim = op.getDim();
    SmallVector<Value> parts;
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      RankedTensorType type = tensorType(result);
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      offsets[dim] = static_cast<int64_t>(i) * type.getShape()[dim];
      parts.push_back(tensor::ExtractSliceOp::create(
          b, op.getLoc(), type, op.getInput(), ValueRange{}, ValueRange{}, ValueRange{},
          b.getDenseI64ArrayAttr(offsets), b.getDenseI64ArrayAttr(type.getShape()),
          b.getDenseI64ArrayAttr(strides)));
    }
    b.replaceOp(op, parts);
    return success();
  }
};

struct FillLowering : TfmPattern<tfm::FillOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::FillOp op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    if (!type.hasStaticShape())
      return Value();
    return filled(b, op.getLoc(), type.getShape(), type.getElementType(),
                  op.getValue().convertToDouble());
  }
};

struct ConcatLowering : TfmPattern<tfm::ConcatOp> {
  using TfmPattern::TfmPattern;
  Value lower(tfm::ConcatOp op, PatternRewriter &b) const override {
    Location loc = op.getLoc();
    RankedTensorType out = tensorType(op.getResult());
    unsigned rank = out.getRank();
    int64_t dim = op.getDim();
    Value result = emptyLike(b, loc, out.getShape(), out.getElementType());
    for (auto [i, input] : llvm::enumerate(op.getInputs())) {
      ArrayRef<int64_t> shape = tensorType(input).getShape();
      SmallVector<int64_t> offsets(rank, 0), strides(rank, 1);
      offsets[dim] = static_cast<int64_t>(i) * shape[dim];
      result = tensor::InsertSliceOp::create(b, loc, input, result, ValueRange{}, ValueRange{},
                                             ValueRange{}, b.getDenseI64ArrayAttr(offsets),
                                             b.getDenseI64ArrayAttr(shape),
                                             b.getDenseI64ArrayAttr(strides));
    }
    return result;
  }
};

/// Elementwise gradients of activations: dx = f'(x) * dy.
template <typename Op> struct ActivationGradLowering : TfmPattern<Op> {
  using TfmPattern<Op>::TfmPattern;
  virtual Value derivative(Op op, OpBuilder &b, Location loc, Value x) const = 0;
  Value lower(Op op, PatternRewriter &b) const override {
    RankedTensorType type = tensorType(op.getResult());
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    return elementwise(b, op.getLoc(), type, {op.getInput(), op.getGrad()}, {id, id},
                       [&](OpBuilder &nb, Location loc, ValueRange a) -> Value {
                         return arith::MulFOp::create(nb, loc, derivative(op, nb, loc, a[0]), a[1]);
                       });
  }
};

struct GeluGradLowering : ActivationGradLowering<tfm::GeluGradOp> {
  using ActivationGradLowering::ActivationGradLowering;
  Value derivative(tfm::GeluGradOp op, OpBuilder &b, Location loc, Value x) const override {
    Type t = x.getType();
    auto c = [&](double v) { return floatConst(b, loc, t, v); };
    auto mul = [&](Value u, Value v) { return arith::MulFOp::create(b, loc, u, v).getResult(); };
    auto add = [&](Value u, Value v) { return arith::AddFOp::create(b, loc, u, v).getResult(); };
    Value x2 = mul(x, x);
    if (op.getApproximation() == tfm::GeluApproximation::tanh) {
      // d/dx 0.5 x (1 + tanh(u)), u = k (x + a x^3):
      // 0.5 (1 + tanh(u)) + 0.5 x (1 - tanh(u)^2) k (1 + 3 a x^2).
      double k = std::sqrt(2.0 / M_PI), a = 0.044715;
      Value u = mul(c(k), add(x, mul(c(a), mul(x2, x))));
      Value th = math::TanhOp::create(b, loc, u);
      Value left = mul(c(0.5), add(c(1.0), th));
      Value sech2 = arith::SubFOp::create(b, loc, c(1.0), mul(th, th));
      Value du = mul(c(k), add(c(1.0), mul(c(3 * a), x2)));
      return add(left, mul(mul(c(0.5), x), mul(sech2, du)));
    }
    // 0.5 (1 + erf(x / sqrt 2)) + x exp(-x^2 / 2) / sqrt(2 pi)
    Value cdf =
        mul(c(0.5), add(c(1.0), math::ErfOp::create(b, loc, mul(x, c(M_SQRT1_2))).getResult()));
    Value pdf = mul(math::ExpOp::create(b, loc, mul(x2, c(-0.5))).getResult(),
                    c(1.0 / std::sqrt(2.0 * M_PI)));
    return add(cdf, mul(x, pdf));
  }
};

struct SiluGradLowering : ActivationGradLowering<tfm::SiluGradOp> {
  using ActivationGradLowering::ActivationGradLowering;
  Value derivative(tfm::SiluGradOp, OpBuilder &b, Location loc, Value x) const override {
    // sigmoid(x) (1 + x (1 - sigmoid(x)))
    Value one = floatConst(b, loc, x.getType(), 1.0);
    Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
    Value sig = arith::DivFOp::create(b, loc, one, arith::AddFOp::create(b, loc, one, e));
    Value inner = arith::AddFOp::create(
        b, loc, one, arith::MulFOp::create(b, loc, x, arith::SubFOp::create(b, loc, one, sig)));
    return arith::MulFOp::create(b, loc, sig, inner);
  }
};

struct SqrtLowering : UnaryLowering<tfm::SqrtOp> {
  using UnaryLowering::UnaryLowering;
  Value body(tfm::SqrtOp, OpBuilder &b, Location loc, Value x) const override {
    return math::SqrtOp::create(b, loc, x);
  }
};

} // namespace

void pmlir::tfm_to_linalg::populateElementwisePatterns(RewritePatternSet &patterns) {
  patterns.add<BinaryLowering<tfm::AddOp, arith::AddFOp>, BinaryLowering<tfm::SubOp, arith::SubFOp>,
               BinaryLowering<tfm::MulOp, arith::MulFOp>, ScaleLowering, GeluLowering, SiluLowering,
               GeluGradLowering, SiluGradLowering, SqrtLowering, FillLowering, ConcatLowering,
               SplitLowering>(patterns.getContext());
}
