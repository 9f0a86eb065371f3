//===- StepCheck.cpp - One training step against the unsharded step -------===//
//
// Part of pmlir.
//
// The bounds below follow tfm.adamw's lowering (TfmToLinalg/Optimizer.cpp):
// its scalars (1 - lr wd, 1 - beta1, beta2, 1 - beta2, lr / (1 - beta1^t),
// sqrt(1 - beta2^t), eps) are computed in f64 and rounded once to f32, and
// each element takes, in f32,
//
//   m  = m0 + (1 - beta1) * (g - m0)
//   v  = beta2 * v0 + (1 - beta2) * (g * g)
//   p  = p0 * (1 - lr wd) - step_size * (m / (sqrt(v) / sqrt_c2 + eps))
//
// With u = 2^-24 the unit roundoff, each operation and each rounded constant
// adds at most u times its magnitude (to first order; a fused multiply-add
// only removes roundings). So, with g recovered from the stored m:
//
//   |m - exact m| <= u |m| + 3 u (1 - beta1) |g - m0|
//   |v - exact v| <= 2 u beta2 |v0| + 3 u (1 - beta2) g^2 + u |v|
//   |p - exact p| <= 2 u |p0 (1 - lr wd)| + 7 u |update| + u |p|
//
// and the recovered g itself is off by at most the first bound over
// (1 - beta1), which enters v's through 2 |g| (1 - beta2). Subnormal results
// add an absolute 2^-149 an operation.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/StepCheck.h"

#include <cmath>

using namespace pmlir::exec;

namespace {

constexpr double kUnitRoundoff = 0x1p-24;
constexpr double kSubnormal = 0x1p-149;
/// Room for the second-order terms the first-order bounds leave out.
constexpr double kSlack = 1.01;

/// A run's gradient of one element as tfm.adamw saw it, from its first
/// moment, and the bound on its error from the rounding of that moment.
struct Recovered {
  double g, error;
};

Recovered recoverGradient(double m0, double m, double beta1) {
  double c1 = 1.0 - beta1;
  double g = m0 + (m - m0) / c1;
  double mError = kUnitRoundoff * (std::abs(m) + 3 * c1 * std::abs(g - m0)) + 4 * kSubnormal;
  return {g, kSlack * mError / c1};
}

/// A parameter's scalars of step t, as the lowering computes them once.
struct StepScalars {
  double stepSize, sqrtC2, decay;
  StepScalars(const AdamWConstants &c, int64_t t)
      : stepSize(c.lr / (1.0 - std::pow(c.beta1, static_cast<double>(t)))),
        sqrtC2(std::sqrt(1.0 - std::pow(c.beta2, static_cast<double>(t)))),
        decay(1.0 - c.lr * c.weightDecay) {}
};

/// The deviation of a run's second moment from its gradient and of its
/// parameter from AdamW's update, each over its bound.
std::pair<double, double> adamwDeviation(const ParameterStep &p, const StepScalars &scalars,
                                         const AdamWTensors &after, int64_t k) {
  const AdamWConstants &c = p.adamw;
  double u = kUnitRoundoff;
  double m0 = p.before.expAvg[k], v0 = p.before.expAvgSq[k], p0 = p.before.param[k];
  double m = after.expAvg[k], v = after.expAvgSq[k], param = after.param[k];
  Recovered g = recoverGradient(m0, m, c.beta1);
  double c2 = 1.0 - c.beta2;
  double vExact = c.beta2 * v0 + c2 * g.g * g.g;
  double vBound = kSlack * (u * (2 * c.beta2 * std::abs(v0) + 3 * c2 * g.g * g.g + std::abs(v)) +
                            c2 * (2 * std::abs(g.g) * g.error + g.error * g.error)) +
                  4 * kSubnormal;
  double update = scalars.stepSize * m / (std::sqrt(std::max(v, 0.0)) / scalars.sqrtC2 + c.eps);
  double decayed = p0 * scalars.decay;
  double pBound = kSlack * u * (2 * std::abs(decayed) + 7 * std::abs(update) + std::abs(param)) +
                  8 * kSubnormal;
  double vRatio = std::abs(v - vExact) / vBound;
  double pRatio = std::abs(param - (decayed - update)) / pBound;
  // A NaN anywhere is a failure, never a pass.
  if (std::isnan(vRatio))
    vRatio = INFINITY;
  if (std::isnan(pRatio))
    pRatio = INFINITY;
  return {vRatio, pRatio};
}

} // namespace

StepComparison pmlir::exec::compareStep(llvm::ArrayRef<ParameterStep> parameters, int64_t t) {
  StepComparison out;
  for (const ParameterStep &p : parameters) {
    StepScalars scalars(p.adamw, t);
    double diff = 0, norm = 0, rounding = 0;
    double worstV = 0, worstP = 0;
    for (int64_t k = 0; k < p.size; ++k) {
      double m0 = p.before.expAvg[k];
      Recovered reference = recoverGradient(m0, p.reference.expAvg[k], p.adamw.beta1);
      Recovered checked = recoverGradient(m0, p.checked.expAvg[k], p.adamw.beta1);
      diff += (checked.g - reference.g) * (checked.g - reference.g);
      norm += reference.g * reference.g;
      rounding += (reference.error + checked.error) * (reference.error + checked.error);
      for (const AdamWTensors *run : {&p.reference, &p.checked}) {
        auto [vRatio, pRatio] = adamwDeviation(p, scalars, *run, k);
        if (run == &p.reference && (vRatio > 1 || pRatio > 1))
          out.referenceFailed = true;
        worstV = std::max(worstV, vRatio);
        worstP = std::max(worstP, pRatio);
      }
    }
    // The part of the gradients' difference their moments' rounding does
    // not explain (the triangle inequality over the elements' bounds).
    double scale = norm > 0 ? std::sqrt(norm) : 1.0;
    double error = std::sqrt(diff) / scale, floor = std::sqrt(rounding) / scale;
    double beyond = std::isnan(error) ? INFINITY : std::max(0.0, error - floor);
    if (out.gradient.name.empty() || beyond > out.gradient.value) {
      out.gradientError = error;
      out.gradientRounding = floor;
    }
    out.gradient.take(beyond, p.name);
    out.secondMoment.take(worstV, p.name);
    out.update.take(worstP, p.name);
  }
  return out;
}

void StepComparison::merge(const StepComparison &step) {
  if (gradient.name.empty() || step.gradient.value > gradient.value) {
    gradientError = step.gradientError;
    gradientRounding = step.gradientRounding;
  }
  gradient.take(step.gradient.value, step.gradient.name);
  secondMoment.take(step.secondMoment.value, step.secondMoment.name);
  update.take(step.update.value, step.update.name);
  referenceFailed |= step.referenceFailed;
}
