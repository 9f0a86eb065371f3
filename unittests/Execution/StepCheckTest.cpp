//===- StepCheckTest.cpp - One training step against the unsharded step --===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/StepCheck.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace pmlir::exec;

namespace {

/// One AdamW step of `g` from (p0, m0, v0) in f32, operation by operation
/// as tfm.adamw's lowering computes it (scalars from f64, rounded once).
struct F32Step {
  std::vector<float> p, m, v;
};

F32Step adamwF32(const std::vector<float> &p0, const std::vector<float> &m0,
                 const std::vector<float> &v0, const std::vector<float> &g, const AdamWConstants &c,
                 int64_t t) {
  F32Step out;
  float stepSize = static_cast<float>(c.lr / (1.0 - std::pow(c.beta1, double(t))));
  float sqrtC2 = static_cast<float>(std::sqrt(1.0 - std::pow(c.beta2, double(t))));
  float decay = static_cast<float>(1.0 - c.lr * c.weightDecay);
  float c1 = static_cast<float>(1.0 - c.beta1), b2 = static_cast<float>(c.beta2);
  float c2 = static_cast<float>(1.0 - c.beta2), eps = static_cast<float>(c.eps);
  for (size_t k = 0; k < p0.size(); ++k) {
    float m = m0[k] + c1 * (g[k] - m0[k]);
    float v = b2 * v0[k] + c2 * (g[k] * g[k]);
    float p = p0[k] * decay - stepSize * (m / (std::sqrt(v) / sqrtC2 + eps));
    out.p.push_back(p);
    out.m.push_back(m);
    out.v.push_back(v);
  }
  return out;
}

/// A parameter of `n` elements a few steps into training, its gradient in
/// the reference run and the checked run's `noisy` copy of it.
class StepCheckTest : public ::testing::Test {
protected:
  static constexpr int64_t kSize = 4096;
  AdamWConstants adamw{1e-1, 0.9, 0.999, 1e-8, 0.01};
  int64_t t = 3;
  std::vector<float> p0, m0, v0, g;

  void SetUp() override {
    // Deterministic, varied magnitudes; every 16th gradient element is at
    // the level of rounding, as a key bias's is.
    for (int64_t k = 0; k < kSize; ++k) {
      double x = std::sin(0.37 * k + 1.0), y = std::cos(0.11 * k);
      p0.push_back(static_cast<float>(0.02 * x));
      g.push_back(static_cast<float>(k % 16 == 0 ? 1e-9 * y : 1e-2 * y * (1 + 0.5 * x)));
      // A noise element's history is noise too.
      bool noise = k % 16 == 0;
      m0.push_back(static_cast<float>(noise ? 0.1 * g.back() : 0.5 * g.back() + 1e-4 * x));
      v0.push_back(static_cast<float>(noise ? 0.01 * g.back() * g.back()
                                            : 0.8 * g.back() * g.back() + 1e-8 * x * x));
    }
  }

  StepComparison compare(const F32Step &reference, const F32Step &checked) {
    ParameterStep step;
    step.name = "w";
    step.adamw = adamw;
    step.size = kSize;
    step.before = {p0.data(), m0.data(), v0.data()};
    step.reference = {reference.p.data(), reference.m.data(), reference.v.data()};
    step.checked = {checked.p.data(), checked.m.data(), checked.v.data()};
    return compareStep({step}, t);
  }
};

} // namespace

/// A checked run whose gradient differs by rounding (a relative 1e-7, and
/// the noise elements' wholly) passes, however lr carries the noise
/// elements' steps apart.
TEST_F(StepCheckTest, RoundingPasses) {
  std::vector<float> noisy = g;
  for (int64_t k = 0; k < kSize; ++k)
    noisy[k] = k % 16 == 0 ? -g[k] : g[k] * (1.0f + 1e-7f * static_cast<float>(k % 3 - 1));
  F32Step reference = adamwF32(p0, m0, v0, g, adamw, t);
  F32Step checked = adamwF32(p0, m0, v0, noisy, adamw, t);
  StepComparison c = compare(reference, checked);
  EXPECT_LT(c.gradient.value, 1e-5);
  EXPECT_LE(c.secondMoment.value, 1.0);
  EXPECT_LE(c.update.value, 1.0);
  EXPECT_FALSE(c.referenceFailed);
  // The noise elements moved the parameters apart by a sizeable part of
  // lr: a comparison of parameters between the runs would call it a fault.
  double apart = 0;
  for (int64_t k = 0; k < kSize; ++k)
    apart = std::max(apart, std::abs(double(reference.p[k]) - checked.p[k]));
  EXPECT_GT(apart, 0.005); // a quarter of the parameters' scale
}

/// A gradient reduced over a wrong group (half of it) fails the gradients.
TEST_F(StepCheckTest, WrongGradientFails) {
  std::vector<float> half = g;
  for (float &x : half)
    x *= 0.5f;
  StepComparison c =
      compare(adamwF32(p0, m0, v0, g, adamw, t), adamwF32(p0, m0, v0, half, adamw, t));
  EXPECT_NEAR(c.gradientError, 0.5, 1e-3);
  EXPECT_GT(c.gradient.value, 0.4);
  EXPECT_EQ(c.gradient.name, "w");
}

/// A parameter one ulp-scale step off AdamW's update on its moments, and a
/// second moment updated with another gradient, fail in the checked run
/// only.
TEST_F(StepCheckTest, OptimizerFaultsFail) {
  F32Step reference = adamwF32(p0, m0, v0, g, adamw, t);
  F32Step update = reference, moment = reference;
  // A ZeRO shard updated from its neighbour's moments.
  update.p[100] = reference.p[101];
  StepComparison c = compare(reference, update);
  EXPECT_GT(c.update.value, 1.0);
  EXPECT_FALSE(c.referenceFailed);
  EXPECT_LE(c.secondMoment.value, 1.0);
  // The second moment of a gradient 1e-3 larger than the first moment's.
  moment.v[7] =
      static_cast<float>(adamw.beta2 * v0[7] + (1 - adamw.beta2) * (g[7] * 1.001) * (g[7] * 1.001));
  c = compare(reference, moment);
  EXPECT_GT(c.secondMoment.value, 1.0);
  EXPECT_FALSE(c.referenceFailed);
}

/// A NaN in the checked run fails every comparison it enters.
TEST_F(StepCheckTest, NaNFails) {
  F32Step reference = adamwF32(p0, m0, v0, g, adamw, t), checked = reference;
  checked.m[5] = NAN;
  StepComparison c = compare(reference, checked);
  EXPECT_GT(c.gradient.value, 1.0);
  EXPECT_GT(c.update.value, 1.0);
}

/// The worst of several steps is kept with its own error and rounding.
TEST(StepComparisonTest, MergeKeepsTheWorst) {
  StepComparison a, b;
  a.gradient.take(1e-6, "x");
  a.gradientError = 2e-6;
  a.gradientRounding = 1e-6;
  b.gradient.take(3e-6, "y");
  b.gradientError = 3.5e-6;
  b.gradientRounding = 0.5e-6;
  b.update.take(0.5, "z");
  a.merge(b);
  EXPECT_EQ(a.gradient.name, "y");
  EXPECT_DOUBLE_EQ(a.gradientError, 3.5e-6);
  EXPECT_EQ(a.update.name, "z");
}
