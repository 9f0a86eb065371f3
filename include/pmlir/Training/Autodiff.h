//===- Autodiff.h - Reverse-mode gradients of tfm programs ------*- C++ -*-===//
//
// Part of pmlir.
//
// Builds, from a function that returns a scalar loss, a function that
// returns the loss and the gradient of each parameter argument, still at
// global shapes, so that sharding treats the backward pass like the forward
// one. Each op's gradient comes from the op (AutodiffOpInterface); this
// engine orders them, sums the gradients of values with several uses and
// keeps the block structure: each forward tfm.layer gets a backward
// tfm.layer, and what a backward layer reads of its forward layer is
// yielded by the forward layer (the activations kept for the backward
// pass) or recomputed, as the recompute mode says.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_TRAINING_AUTODIFF_H
#define PMLIR_TRAINING_AUTODIFF_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/CommandLine.h"

#include <optional>
#include <string>

namespace pmlir::training {

/// What the backward pass recomputes instead of keeping.
enum class Recompute {
  /// Nothing: the forward keeps the attention probabilities too (a·s²
  /// values per sequence in each layer), which the backward reads.
  None,
  /// The attention core (its probabilities), inside tfm.attention_grad:
  /// Korthikanti et al.'s selective recomputation. Every other value the
  /// backward reads is kept.
  Selective,
  /// Each layer from its input: a forward layer keeps nothing but its
  /// output, its backward layer runs the block again.
  Full,
};

/// The name of a mode, as the options spell it.
inline llvm::StringRef stringifyRecompute(Recompute recompute) {
  switch (recompute) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "selective";
}

/// The mode a name spells, or nullopt.
inline std::optional<Recompute> parseRecompute(llvm::StringRef name) {
  for (Recompute r : {Recompute::None, Recompute::Selective, Recompute::Full})
    if (name == stringifyRecompute(r))
      return r;
  return std::nullopt;
}

/// The alternatives of a `recompute` option, with their names: every
/// option that takes one lists these.
inline llvm::cl::ValuesClass recomputeValues() {
  return llvm::cl::values(clEnumValN(Recompute::None, stringifyRecompute(Recompute::None),
                                     "nothing: the forward keeps the attention probabilities too"),
                          clEnumValN(Recompute::Selective, stringifyRecompute(Recompute::Selective),
                                     "the attention core (its probabilities)"),
                          clEnumValN(Recompute::Full, stringifyRecompute(Recompute::Full),
                                     "each layer from its input"));
}

/// The name pmlir-run, the compile pipeline and the planner give the
/// gradient function of `entry`.
inline std::string gradientName(llvm::StringRef entry) { return (entry + "_grad").str(); }

struct AutodiffOptions {
  /// The function to differentiate and the name of the one built.
  std::string entry = "forward";
  std::string name = "grad";
  Recompute recompute = Recompute::Selective;
};

/// Builds `options.name` beside `forward`: the same arguments, and as
/// results the loss (tfm.name "loss") and the gradient of each argument of
/// role param, in argument order (tfm.name of the parameter,
/// tfm.sharded_like its index). Fails with a diagnostic on a function that
/// does not return one scalar float, or on an op without a gradient.
mlir::FailureOr<mlir::func::FuncOp> buildGradientFunction(mlir::func::FuncOp forward,
                                                          const AutodiffOptions &options);

} // namespace pmlir::training

#endif // PMLIR_TRAINING_AUTODIFF_H
