//===- StepCheck.h - One training step against the unsharded step --*- C++ -*-===//
//
// Part of pmlir.
//
// What `pmlir-run --train --check` holds a sharded run to, step by step.
// Both runs take each step from the same state (the sharded run's, whole),
// so nothing accumulates over steps and nothing depends on how far Adam
// carries rounding noise: a step's gradients are compared with the
// unsharded step's to a tolerance, and everything the optimizer computes
// from them is held to what f32 rounding allows, derived op by op from
// tfm.adamw's lowering.
//
// Each run's gradient is recovered from its first moment, m = m0 + (1 -
// beta1) (g - m0) (with the scale and clipping applied, as tfm.adamw sees
// it); its second moment must then be beta2 v0 + (1 - beta2) g^2 and its
// parameter p0 (1 - lr wd) - lr / (1 - beta1^t) m / (sqrt(v) / sqrt(1 -
// beta2^t) + eps), each to within the rounding of the f32 operations that
// compute it. These hold for a gradient element that is pure rounding noise
// as for any other, where a comparison of parameters between the runs
// cannot tell such an element (Adam's m / sqrt(v) turns it into a step of
// size lr) from a fault.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_STEPCHECK_H
#define PMLIR_EXECUTION_STEPCHECK_H

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <string>

namespace pmlir::exec {

/// The constants of one parameter's AdamW update (its tfm.adamw's).
struct AdamWConstants {
  double lr = 0, beta1 = 0, beta2 = 0, eps = 0, weightDecay = 0;
};

/// A parameter and its moments (exp_avg, exp_avg_sq), `size` elements each.
struct AdamWTensors {
  const float *param = nullptr, *expAvg = nullptr, *expAvgSq = nullptr;
};

/// One parameter around one step: before it (the same in both runs), and
/// after it in the unsharded run (`reference`) and the run checked.
struct ParameterStep {
  std::string name;
  AdamWConstants adamw;
  int64_t size = 0;
  AdamWTensors before, reference, checked;
};

/// The worst of one kind of comparison over a step's parameters.
struct Worst {
  double value = 0;
  std::string name; ///< the parameter, "" while none was compared
  void take(double v, const std::string &n) {
    if (name.empty() || v > value) {
      value = v;
      name = n;
    }
  }
};

/// What one step of the checked run shows against the unsharded step.
struct StepComparison {
  /// The largest relative L2 error of a parameter's gradient beyond what
  /// the rounding of the two first moments it is recovered from explains
  /// (absolute where the unsharded gradient is all zeros), and for that
  /// parameter the error and that rounding's part.
  Worst gradient;
  double gradientError = 0, gradientRounding = 0;
  /// The largest deviation of an element of either run's second moment
  /// from its gradient, and of its parameter from AdamW's update on its
  /// moments, each over the bound of f32 rounding: at most 1 in a correct
  /// run. `referenceFailed`: the unsharded run's own exceeded it (a fault
  /// of the lowering, not of the sharding).
  Worst secondMoment, update;
  bool referenceFailed = false;

  /// The worst of this and `step`'s.
  void merge(const StepComparison &step);
};

/// Compares step `t` (counted from 1, as tfm.adamw's) of the checked run
/// with the reference's.
StepComparison compareStep(llvm::ArrayRef<ParameterStep> parameters, int64_t t);

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_STEPCHECK_H
