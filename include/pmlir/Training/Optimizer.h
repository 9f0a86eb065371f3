//===- Optimizer.h - A training step from a gradient function --*- C++ -*-===//
//
// Part of pmlir.
//
// Builds, from a function that returns the loss and the gradient of each
// parameter (pmlir-autodiff's), one training step at global shapes:
// gradient accumulation over microbatches, the global gradient norm and
// optional clipping, and AdamW with torch.optim.AdamW's semantics. The
// optimizer state is arguments of role optimizer_state; the new parameters
// and state are results that update their arguments (tfm.updates), so a
// runtime runs step after step on the same buffers.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRAINING_OPTIMIZER_H
#define PMLIR_TRAINING_OPTIMIZER_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <optional>
#include <string>

namespace pmlir::training {

/// torch.optim.AdamW's defaults.
struct AdamWOptions {
  double lr = 1e-3;
  double beta1 = 0.9, beta2 = 0.999;
  double eps = 1e-8;
  double weightDecay = 0.01;
};

struct OptimizerOptions {
  /// The gradient function and the name of the step built.
  std::string entry = "grad";
  std::string name = "train_step";
  AdamWOptions adamw;
  /// Clip the gradients to this global L2 norm (0: no clipping).
  double maxGradNorm = 0;
  /// Microbatches per step: inputs and labels gain a leading dimension of
  /// this size, and the gradients (and the loss) are their mean.
  int64_t gradAccum = 1;
};

/// The first value of `options` the update cannot use, as a message that
/// names it by `nameOf` (given "lr", "beta1", "beta2", "eps",
/// "weight-decay" or "max-grad-norm": the caller's flag for it); nullopt
/// where every value is usable. eps must be finite and above 0, lr, the
/// weight decay and the clipping norm finite and 0 or more, the betas in
/// [0, 1).
std::optional<std::string>
unusableOptimizerValue(const OptimizerOptions &options,
                       llvm::function_ref<std::string(llvm::StringRef)> nameOf);

/// The kinds of AdamW's state a parameter has, in the order of the training
/// step's arguments: its first and second moments.
inline constexpr llvm::StringLiteral kOptimizerStateKinds[] = {"exp_avg", "exp_avg_sq"};
/// The name of the optimizer state argument `kind` (one of
/// kOptimizerStateKinds) of the parameter named `param`.
std::string optimizerStateName(llvm::StringRef param, llvm::StringRef kind);
/// The name of the training step a job builds and runs.
inline constexpr llvm::StringLiteral kTrainStepName = "train_step";
/// The name of the step counter argument and result.
inline constexpr llvm::StringLiteral kStepName = "step";

/// Builds `options.name` beside `grad`. Its arguments: those of `grad`
/// (inputs and labels with a leading microbatch dimension when
/// options.gradAccum > 1), then each parameter's exp_avg and exp_avg_sq
/// (tfm.role optimizer_state, tfm.sharded_like the parameter), then the
/// step (a f32 scalar, the number of steps taken). Its results: the mean
/// loss ("loss"), the global gradient norm before clipping ("grad_norm"),
/// each parameter's gradient norm ("<name>.grad_norm"), then the new
/// parameters, exp_avg, exp_avg_sq and step, each with tfm.updates (and
/// tfm.sharded_like) its argument. Fails with a diagnostic
/// on a function that is no gradient function.
mlir::FailureOr<mlir::func::FuncOp> buildTrainStep(mlir::func::FuncOp grad,
                                                   const OptimizerOptions &options);

} // namespace pmlir::training

#endif // PMLIR_TRAINING_OPTIMIZER_H
