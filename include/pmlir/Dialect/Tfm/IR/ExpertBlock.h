//===- ExpertBlock.h - tfm.moe_experts as the ops it is made of -*- C++ -*-===//
//
// Part of pmlir.
//
// tfm.moe_experts and its gradient written out as tfm.moe_sort,
// tfm.moe_dispatch, grouped matmuls and tfm.moe_combine: the lowering
// computes them so on one device, and their partition so on each device
// of an expert-parallel group, with the exchanges of expert rows between
// the devices in the middle. The gradient is the reverse of that forward,
// op by op (each op's AutodiffOpInterface), so the two cannot drift.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_DIALECT_TFM_IR_EXPERTBLOCK_H
#define PMLIR_DIALECT_TFM_IR_EXPERTBLOCK_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace pmlir::tfm {

/// The operands of a tfm.moe_experts: tokens [..., H], the routing's
/// experts and weights [..., k], and w1, w3 [E, F, H], w2 [E, H, F] (on a
/// device of an expert-parallel group, its block of the experts).
struct ExpertOperands {
  mlir::Value input, experts, weights, w1, w3, w2;

  /// The operands of `op`, a tfm.moe_experts or its gradient.
  template <typename ExpertsOp> static ExpertOperands of(ExpertsOp op) {
    return {op.getInput(), op.getExperts(), op.getWeights(), op.getW1(), op.getW3(), op.getW2()};
  }
  /// The experts `w1` stacks.
  int64_t numExperts() const {
    return mlir::cast<mlir::RankedTensorType>(w1.getType()).getDimSize(0);
  }
};

/// The expert-parallel group whose `members` devices exchange the rows of
/// their tokens with one another: `gridAxes` of `grid`.
struct ExpertExchange {
  mlir::FlatSymbolRefAttr grid;
  mlir::DenseI16ArrayAttr gridAxes;
  int64_t members;
};

/// Builds the experts' result [..., H] of `in` for `numExperts` experts in
/// all (the routing's ids range over them), exchanging rows as `exchange`
/// says where given. `ops` gets the ops built, in order.
mlir::Value buildExperts(mlir::OpBuilder &b, mlir::Location loc, const ExpertOperands &in,
                         int64_t numExperts, const ExpertExchange *exchange,
                         llvm::SmallVectorImpl<mlir::Operation *> *ops = nullptr);

/// The gradients of the experts' result: of the tokens, the routing
/// weights, w1, w3 and w2, in that order, given the result's gradient
/// `resultGrad`. The forward is built again, then differentiated.
mlir::FailureOr<llvm::SmallVector<mlir::Value>>
buildExpertsGradients(mlir::OpBuilder &b, mlir::Location loc, const ExpertOperands &in,
                      mlir::Value resultGrad, int64_t numExperts, const ExpertExchange *exchange);

} // namespace pmlir::tfm

#endif // PMLIR_DIALECT_TFM_IR_EXPERTBLOCK_H
