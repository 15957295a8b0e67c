// The element rule of the correctness check (kagent/protocol/compare_rule.hpp), on the host: the same
// inline function the compare kernel (src/runner/harness_kernels.cu) is compiled from, so these
// cases are what the GPU decides too. And the weak-reference verdict built on it.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kagent/protocol/compare_rule.hpp"
#include "kagent/protocol/reference_quality.hpp"

namespace kagent {
namespace {

constexpr double kAtol = 1e-4, kRtol = 1e-4;
const double kNan = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

int verdict(double c, double r, double r64, bool has64 = true) {
  return element_verdict(c, r, r64, has64, kAtol, kRtol);
}

TEST(CompareRule, WithinTheToleranceOfTheReferencePasses) {
  EXPECT_EQ(verdict(1.0 + 1.5e-4, 1.0, 1.0, false), kElementPasses);  // 1.5e-4 <= 1e-4 + 1e-4 * 1
  EXPECT_EQ(verdict(1.0 + 2.5e-4, 1.0, 1.0, false), kElementFails);
  EXPECT_EQ(verdict(0.0, 0.0, 0.0, false), kElementPasses);
}

// level2/18: a candidate accumulating in fp64 was 1.65e-4 off the fp32 reference, whose own error
// is of that size. Against the fp64 result it is right, so it passes.
TEST(CompareRule, CloserToFp64ThanTheToleranceAllowsPasses) {
  const double r64 = 0.5, r32 = 0.5 + 1.6e-4, c = 0.5 - 5e-6;  // |c - r32| = 1.65e-4 > 1.5e-4
  EXPECT_EQ(verdict(c, r32, r64, false), kElementFails) << "today's rule fails it";
  EXPECT_EQ(verdict(c, r32, r64), kElementPassesFp64);
}

// Outside the tolerance of fp64 too, but no farther from it than the reference itself: not failed
// for being as far from the truth as the reference is.
TEST(CompareRule, NoFartherFromFp64ThanTheReferencePasses) {
  const double r64 = 10.0, r32 = 10.0 + 5e-3, c = 10.0 - 4e-3;  // tolerance at 10 is 1.1e-3
  EXPECT_EQ(verdict(c, r32, r64), kElementPassesFp64);
  EXPECT_EQ(verdict(10.0 - 6e-3, r32, r64), kElementFails) << "farther than the reference: fails";
}

TEST(CompareRule, WrongAgainstBothFails) {
  EXPECT_EQ(verdict(1.01, 1.0, 1.0), kElementFails);
  EXPECT_EQ(verdict(1.01, 1.0, 1.0 + 2e-6), kElementFails);
}

TEST(CompareRule, NanAndInfMustMatchTheReference) {
  EXPECT_EQ(verdict(kNan, kNan, 0.0), kElementPasses);
  EXPECT_EQ(verdict(kInf, kInf, kInf), kElementPasses);
  EXPECT_EQ(verdict(-kInf, kInf, kInf), kElementNanMismatch);
  EXPECT_EQ(verdict(kNan, 1.0, 1.0), kElementNanMismatch) << "an unwritten (poisoned) element";
  EXPECT_EQ(verdict(1.0, kNan, 1.0), kElementNanMismatch);
  // The fp64 rule is for finite values: a finite candidate where the reference overflowed fails.
  EXPECT_EQ(verdict(3e38, kInf, 3e38), kElementNanMismatch);
  // A non-finite fp64 value gives the fp64 rule nothing to go by.
  EXPECT_EQ(verdict(1.01, 1.0, kNan), kElementFails);
}

TEST(CompareRule, WithoutFp64TheValueIsIgnored) {
  EXPECT_EQ(verdict(2.0, 1.0, 2.0, false), kElementFails);
  EXPECT_EQ(verdict(2.0, 1.0, 2.0, true), kElementPassesFp64);
}

TEST(CompareRule, SpreadWithinTheTolerance) {
  EXPECT_TRUE(spread_within_tolerance(1.0, 1.0002, 1.0, kAtol, kRtol));  // half-spread 1e-4 <= 2e-4
  EXPECT_FALSE(spread_within_tolerance(1.0, 1.001, 1.0, kAtol, kRtol));
  EXPECT_TRUE(spread_within_tolerance(-5e-5, 5e-5, 0.0, kAtol, kRtol));  // around 0: atol alone
  EXPECT_FALSE(spread_within_tolerance(-1.0, 1.0, 0.0, kAtol, kRtol));
  EXPECT_FALSE(spread_within_tolerance(kInf, kInf, kInf, kAtol, kRtol));
}

TEST(ReferenceQuality, MostlyZerosIsWeak) {
  const Tolerance tol{1e-4, 1e-4};
  auto why = weak_reference(1000, 730, -0.0, 5.0, 0.0, tol);  // level2/9: ReLU after subtracting 2.0
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("73.0% exact zeros"), std::string::npos) << *why;
  EXPECT_NE(why->find("27.0%"), std::string::npos) << *why;
  EXPECT_TRUE(weak_reference(1000, 500, 0.0, 5.0, 0.0, tol).has_value()) << "the threshold is inclusive";
  EXPECT_FALSE(weak_reference(1000, 499, 0.0, 5.0, 0.0, tol).has_value());
}

TEST(ReferenceQuality, SpreadWithinTheToleranceIsWeak) {
  auto why = weak_reference(4096, 0, 2.0, 2.0002, 2.0, Tolerance{1e-4, 1e-4});
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("the constant 2.0001 passes every element"), std::string::npos) << *why;
  EXPECT_FALSE(weak_reference(4096, 0, -3.0, 3.0, 1e-3, Tolerance{1e-4, 1e-4}).has_value());
  EXPECT_FALSE(weak_reference(0, 0, 0.0, 0.0, 0.0, Tolerance{}).has_value());
}

}  // namespace
}  // namespace kagent
