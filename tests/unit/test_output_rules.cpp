// The whole-output rules (protocol/output_rules.hpp) on recorded figures, without a GPU: a constant
// or zero output fails whatever the tolerance, an output under atol is judged norm-wise, and a
// candidate nearer a forbidden precision's error than the reference's fails the precision rule,
// while honest fp32 summation orders pass.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "kagent/protocol/output_rules.hpp"
#include "kagent/protocol/runner_messages.hpp"

using namespace kagent;

namespace {

// An output of n elements whose reference spans [lo, hi], the candidate and the reference at the
// relative L2 errors `cand` and `ref` against fp64 (sums of squares for a reference of unit RMS).
WholeOutput output(double lo, double hi, double cand, double ref, uint64_t n = 1 << 20) {
  WholeOutput w;
  w.tensor = "out";
  w.numel = n;
  w.ref_min = w.out_min = lo;
  w.ref_max = w.out_max = hi;
  w.ref_max_abs = w.out_max_abs = std::max(std::abs(lo), std::abs(hi));
  const double sq = static_cast<double>(n);  // unit RMS
  w.sq_ref = w.sq_ref64 = sq;
  w.has_fp64 = true;
  w.sq_err64 = cand * cand * sq;
  w.sq_referr64 = ref * ref * sq;
  w.sq_err = w.sq_err64;
  return w;
}

OutputPrecision figures(double tf32, double bf16, double fp16) {
  return {"out", {{"tf32", tf32, 0}, {"bf16", bf16, 0}, {"fp16", fp16, 0}}, ""};
}

const Tolerance kFp32{1e-4, 1e-4};

}  // namespace

TEST(TrivialOutput, AConstantFailsWhereTheReferenceVaries) {
  WholeOutput w = output(-3, 3, 0, 0);
  w.out_min = w.out_max = 0.25;
  w.out_max_abs = 0.25;
  auto why = trivial_output(w, kFp32);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("constant 0.25"), std::string::npos) << *why;
  // Whatever the tolerance: a tolerance of 10 passes every element, not the constant.
  EXPECT_TRUE(trivial_output(w, Tolerance{10, 10}));
}

TEST(TrivialOutput, ZerosFailWhereTheReferenceIsNotNearZero) {
  WholeOutput w = output(-3, 3, 0, 0);
  w.out_min = -5e-5, w.out_max = 5e-5, w.out_max_abs = 5e-5;  // noise within atol, not a constant
  auto why = trivial_output(w, kFp32);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("within atol"), std::string::npos) << *why;
}

TEST(TrivialOutput, AReferenceConstantBeyondRoundingLetsAConstantPass) {
  // A softmax over one column (all ones), or a mean subtracted from itself with rounding noise:
  // the constant is the right answer. The noise is the reference's error against fp64 (exactly 1).
  WholeOutput ones = output(1 - 3e-7, 1 + 3e-7, 0, 2e-7);
  ones.out_min = ones.out_max = ones.out_max_abs = 1;
  EXPECT_FALSE(trivial_output(ones, kFp32));
  WholeOutput tiny = output(-4e-7, 4e-7, 0, 0);  // all (near) zero: the degenerate flag's case
  tiny.out_min = tiny.out_max = tiny.out_max_abs = 0;
  EXPECT_FALSE(trivial_output(tiny, kFp32));
}

// KernelBench level2/42 (H200): 16 outputs from 55.1796 to 55.1806, a spread of 1.8e-5 of the scale,
// under rounding's share (2^-10) and within the tolerance of one constant element by element; the
// reference is about 1e-6 from fp64, so the spread is the operator's and a constant fails. Without
// the fp64 reference the share alone decides.
TEST(TrivialOutput, ASpreadFarAboveTheReferencesOwnErrorIsTheOperators) {
  WholeOutput w = output(55.1796, 55.1806, 0, 1e-6, 16);  // RMS error 1e-6
  w.out_min = w.out_max = w.out_max_abs = 55.1801;
  auto why = trivial_output(w, kFp32);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("the constant 55.1801 on all 16 elements"), std::string::npos) << *why;
  EXPECT_TRUE(trivial_output(w, Tolerance{1e-2, 1e-2}));
  WholeOutput no64 = w;
  no64.has_fp64 = false;
  EXPECT_FALSE(trivial_output(no64, kFp32));
  // A spread only a few times the reference's own error is rounding's: the constant is right.
  WholeOutput noise = output(55.18 - 2e-6, 55.18 + 2e-6, 0, 1e-6, 16);
  noise.out_min = noise.out_max = noise.out_max_abs = 55.18;
  EXPECT_FALSE(trivial_output(noise, kFp32));
}

TEST(TrivialOutput, AnOutputThatVariesIsNotTrivial) {
  EXPECT_FALSE(trivial_output(output(-3, 3, 1e-7, 1e-7), kFp32));
  // A softmax over 16384 columns of similar logits, every output about 6.1e-5: computed, it varies.
  WholeOutput w = output(5.9e-5, 6.3e-5, 1e-7, 1e-8);
  EXPECT_FALSE(trivial_output(w, kFp32));
}

TEST(TrivialOutput, HalfPrecisionReferencesMustVaryBeyondTheirRounding) {
  WholeOutput w = output(1 - 0.004, 1 + 0.004, 0, 0.002);  // a few bf16 ulps of a constant, its rounding
  w.dtype = DType::bf16;
  w.out_min = w.out_max = w.out_max_abs = 1;
  EXPECT_FALSE(trivial_output(w, kFp32));
  w.ref_min = 0.5, w.ref_max = 1.5, w.ref_max_abs = 1.5;
  EXPECT_TRUE(trivial_output(w, kFp32));
}

TEST(NormwiseRule, AnOutputUnderAtolIsJudgedAsAWhole) {
  // A softmax whose outputs are all about 6.1e-5, at atol 1e-4: every element passes whatever it holds.
  WholeOutput noise = output(5.9e-5, 6.3e-5, 0.3, 3.3e-9 / 6.1e-5);
  ASSERT_TRUE(scale_within_atol(noise, kFp32));
  auto why = normwise_failure(noise, kFp32);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("judged as a whole"), std::string::npos) << *why;
  WholeOutput honest = output(5.9e-5, 6.3e-5, 2e-7, 5e-8);
  EXPECT_FALSE(normwise_failure(honest, kFp32));
  // An output above atol is the element rule's.
  EXPECT_FALSE(scale_within_atol(output(-3, 3, 0.3, 1e-7), kFp32));
  EXPECT_FALSE(normwise_failure(output(-3, 3, 0.3, 1e-7), kFp32));
}

TEST(NormwiseRule, WithoutAnFp64ReferenceTheReferenceStandsIn) {
  WholeOutput w = output(5.9e-5, 6.3e-5, 0, 0);
  w.has_fp64 = false;
  w.sq_err = 0.04 * w.sq_ref;  // 20% off the reference
  EXPECT_NEAR(judged_rel_l2(w), 0.2, 1e-12);
  EXPECT_TRUE(normwise_failure(w, kFp32));
}

TEST(PrecisionRule, TheLimitIsTheGeometricMeanOfTheReferenceAndTheNearestForbiddenPrecision) {
  // A GEMM's figures: fp32 reference 1e-7, TF32 1e-4, BF16 2.5e-3, FP16 3e-4.
  const OutputPrecision f = figures(1e-4, 2.5e-3, 3.1e-4);
  PrecisionJudgement j = judge_precision(output(0, 700, 1e-7, 1e-7), f, "fp32");
  ASSERT_TRUE(j.judged);
  EXPECT_EQ(j.nearest, "tf32");
  EXPECT_NEAR(j.limit, std::sqrt(1e-7 * 1e-4), 1e-12);
  EXPECT_FALSE(j.fails());
  // Honest fp32 with other summation orders (split-K, a sequential sum): 20x the reference's error.
  EXPECT_FALSE(judge_precision(output(0, 700, 2e-6, 1e-7), f, "fp32").fails());
  // TF32 tensor cores, 3xTF32 without its correction products: the TF32 reference's error.
  PrecisionJudgement tf32 = judge_precision(output(0, 700, 1e-4, 1e-7), f, "fp32");
  EXPECT_TRUE(tf32.fails());
  const std::string text = precision_failure_text(output(0, 700, 1e-4, 1e-7), tf32);
  EXPECT_NE(text.find("lower precision than fp32"), std::string::npos) << text;
  EXPECT_NE(text.find("tf32"), std::string::npos) << text;
  // A candidate more accurate than TF32 by 4x is still nearer it than fp32.
  EXPECT_TRUE(judge_precision(output(0, 700, 2.5e-5, 1e-7), f, "fp32").fails());
}

TEST(PrecisionRule, APrecisionCountsAtMostTheErrorOfStoringTheOutputAtIt) {
  // A cumsum: fp32 reference 9.7e-7, summed in FP16 0.127 (BF16 0.65); TF32 changes nothing. A
  // kernel summing in fp32 and storing FP16 is about 1.8e-4 from fp64: far under sqrt(9.7e-7 x
  // 0.127) = 3.5e-4, the limit were FP16's reference its error.
  const OutputPrecision f = figures(9.7e-7, 0.65, 0.127);
  PrecisionJudgement j = judge_precision(output(-50, 50, 1e-6, 9.7e-7), f, "fp32");
  ASSERT_TRUE(j.judged);
  EXPECT_EQ(j.nearest, "fp16");
  EXPECT_DOUBLE_EQ(j.nearest_error, 0.375 * 0x1p-11);
  EXPECT_NEAR(j.limit, std::sqrt(9.7e-7 * 0.375 * 0x1p-11), 1e-12);
  EXPECT_FALSE(j.fails());  // honest fp32, a blocked scan's order
  EXPECT_FALSE(judge_precision(output(-50, 50, 1.3e-7, 9.7e-7), f, "fp32").fails());
  EXPECT_TRUE(judge_precision(output(-50, 50, 1.8e-4, 9.7e-7), f, "fp32").fails());  // stored in FP16
  const std::string text = precision_failure_text(output(-50, 50, 1.8e-4, 9.7e-7),
                                                  judge_precision(output(-50, 50, 1.8e-4, 9.7e-7), f, "fp32"));
  EXPECT_NE(text.find("fp16's 0.000183"), std::string::npos) << text;
  // Never under 8 times the reference's own: a precision told apart stays told apart. Under tf32
  // (reference 3e-4), BF16's reference at 2.5e-3 counts as 2.4e-3, not its storage error 1.46e-3.
  PrecisionJudgement t =
      judge_precision(output(0, 700, 3e-4, 3e-4), OutputPrecision{"out", {{"bf16", 2.5e-3, 0}}, ""}, "tf32");
  ASSERT_TRUE(t.judged);
  EXPECT_DOUBLE_EQ(t.nearest_error, 8 * 3e-4);
}

// Under tf32 the reference of SDPA (level1/97, H200) runs fused fp32 kernels that skip TF32: its own
// error is 4.77e-7, where a candidate computing the attention's products in TF32 has 1.51e-5. The
// allowed figure (the problem at TF32 throughout) anchors the rule, so that candidate passes and
// FP16's and BF16's do not; the re-check's lower bound takes the same anchor.
TEST(PrecisionRule, TheAllowedPrecisionComputedThroughoutAnchorsTheRule) {
  OutputPrecision f{"out", {{"bf16", 1.79e-3, 0}, {"fp16", 2.23e-4, 0}}, ""};
  EXPECT_TRUE(judge_precision(output(-3, 3, 1.51e-5, 4.77e-7), f, "tf32").fails()) << "without the allowed figure";
  f.allowed = {{"tf32", 1.51e-5, 0}};
  EXPECT_DOUBLE_EQ(allowed_error(f), 1.51e-5);
  PrecisionJudgement j = judge_precision(output(-3, 3, 1.51e-5, 4.77e-7), f, "tf32");
  ASSERT_TRUE(j.judged);
  EXPECT_DOUBLE_EQ(j.allowed, 1.51e-5);
  EXPECT_EQ(j.nearest, "fp16");
  EXPECT_NEAR(j.limit, std::sqrt(1.51e-5 * 0.375 * 0x1p-11), 1e-12);
  EXPECT_FALSE(j.fails());
  EXPECT_TRUE(judge_precision(output(-3, 3, 2.23e-4, 4.77e-7), f, "tf32").fails());
  EXPECT_TRUE(judge_precision(output(-3, 3, 1.79e-3, 4.77e-7), f, "tf32").fails());
  const std::string text = precision_failure_text(output(-3, 3, 2.23e-4, 4.77e-7),
                                                  judge_precision(output(-3, 3, 2.23e-4, 4.77e-7), f, "tf32"));
  EXPECT_NE(text.find("the tf32 reference's own 4.77e-07 (1.51e-05 with every operator at tf32)"), std::string::npos)
      << text;
  // An allowed figure under the reference's own changes nothing; one that overflowed is no figure.
  f.allowed = {{"tf32", 1e-7, 0}, {"tf32", std::numeric_limits<double>::infinity(), 0}};
  EXPECT_EQ(judge_precision(output(-3, 3, 1e-6, 4.77e-7), f, "tf32").allowed, 0);
  // The JSON carries it only where there is one.
  nlohmann::json with = OutputPrecision{"out", {}, "", {{"tf32", 1.5e-5, 0.01}}};
  EXPECT_EQ(with["allowed"][0]["precision"], "tf32");
  EXPECT_FALSE(nlohmann::json(OutputPrecision{"out", {}, ""}).contains("allowed"));
  EXPECT_EQ(with.get<OutputPrecision>().allowed.at(0).rel_l2, 1.5e-5);
}

TEST(PrecisionRule, AnExactReferenceLeavesTheTypesRounding) {
  // A ReLU: the fp32 reference equals fp64 rounded, TF32 changes nothing, BF16 rounds its inputs.
  const OutputPrecision f = figures(2e-8, 1.6e-3, 2e-4);
  PrecisionJudgement j = judge_precision(output(0, 4, 3e-8, 0), f, "fp32");
  ASSERT_TRUE(j.judged);
  EXPECT_EQ(j.nearest, "fp16");  // TF32 is not told apart from the reference; FP16 is the nearest left
  EXPECT_NE(j.note.find("tf32"), std::string::npos) << j.note;
  EXPECT_FALSE(j.fails());
  EXPECT_TRUE(judge_precision(output(0, 4, 2e-4, 0), f, "fp32").fails());
}

TEST(PrecisionRule, NotJudgedWithoutFiguresAnFp64ReferenceOrAToldApartPrecision) {
  EXPECT_FALSE(judge_precision(output(0, 4, 1e-3, 1e-7), OutputPrecision{"out", {}, ""}, "fp32").judged);
  WholeOutput no64 = output(0, 4, 1e-3, 1e-7);
  no64.has_fp64 = false;
  EXPECT_FALSE(judge_precision(no64, figures(3e-4, 2e-3, 3e-4), "fp32").judged);
  // An ill-conditioned reference (dropout, a long recurrence): its own error is as large as BF16's.
  PrecisionJudgement ill = judge_precision(output(0, 4, 3e-3, 1e-3), figures(1.1e-3, 4e-3, 1.2e-3), "fp32");
  EXPECT_FALSE(ill.judged);
  EXPECT_NE(ill.note.find("left out"), std::string::npos) << ill.note;
  // A precision that overflows has no figure.
  PrecisionJudgement over = judge_precision(output(0, 4, 1e-7, 1e-7), figures(3e-4, 2e-3, INFINITY), "fp32");
  EXPECT_NE(over.note.find("fp16 (overflows)"), std::string::npos) << over.note;
  EXPECT_EQ(over.nearest, "tf32");
  WholeOutput integers = output(0, 4, 1, 0);
  integers.dtype = DType::i64;
  EXPECT_FALSE(judge_precision(integers, figures(3e-4, 2e-3, 3e-4), "fp32").judged);
}

TEST(PrecisionRule, UnderTf32OnlyBf16IsForbidden) {
  // --precision tf32: the reference is TF32's (3e-4); FP16 is as close, BF16 is 8x farther.
  PrecisionJudgement j = judge_precision(
      output(0, 700, 3e-4, 3e-4), OutputPrecision{"out", {{"bf16", 2.5e-3, 0}, {"fp16", 3.1e-4, 0}}, ""}, "tf32");
  ASSERT_TRUE(j.judged);
  EXPECT_EQ(j.nearest, "bf16");
  EXPECT_FALSE(j.fails());
  EXPECT_TRUE(judge_precision(output(0, 700, 2.4e-3, 3e-4),
                              OutputPrecision{"out", {{"bf16", 2.5e-3, 0}, {"fp16", 3.1e-4, 0}}, ""}, "tf32")
                  .fails());
}

// The reference's own error against fp64 travels with the figures; a NaN the fp64 result has not
// (an infinite tolerance needed) is null on the wire, as an overflow is.
TEST(PrecisionFiguresJson, TheReferencesOwnErrorRoundTrips) {
  OutputPrecision o{"y", {}, ""};
  o.own = ReferenceError{"fp32", 3.5e-6, 1.2e3, 12.0};
  OutputPrecision inf{"h", {}, ""};
  inf.own = ReferenceError{"fp32", 1e-7, 2e-7, INFINITY};
  PrecisionFigures f{"fp32", {o, inf}};
  nlohmann::json j = f;
  EXPECT_EQ(j["outputs"][0]["own"]["tolerance_needed"], 12.0);
  EXPECT_TRUE(j["outputs"][1]["own"]["tolerance_needed"].is_null());
  PrecisionFigures back = j.get<PrecisionFigures>();
  ASSERT_TRUE(back.find("y") && back.find("y")->own);
  EXPECT_EQ(back.find("y")->own->precision, "fp32");
  EXPECT_DOUBLE_EQ(back.find("y")->own->rel_l2, 3.5e-6);
  EXPECT_DOUBLE_EQ(back.find("y")->own->max_abs, 1.2e3);
  EXPECT_DOUBLE_EQ(back.find("y")->own->tolerance_needed, 12.0);
  EXPECT_TRUE(std::isinf(back.find("h")->own->tolerance_needed));
  // Figures of a server without it: no own error.
  nlohmann::json old = {{"precision", "fp32"}, {"outputs", {{{"tensor", "y"}, {"lower", nlohmann::json::array()}}}}};
  EXPECT_FALSE(old.get<PrecisionFigures>().find("y")->own);
}

TEST(PrecisionFiguresJson, RoundTripsWithOverflowAsNull) {
  PrecisionFigures f{"fp32", {figures(3e-4, 2e-3, INFINITY)}};
  f.outputs[0].note = "fp16: overflows or is all zero";
  nlohmann::json j = f;
  EXPECT_TRUE(j["outputs"][0]["lower"][2]["rel_l2"].is_null());
  PrecisionFigures back = j.get<PrecisionFigures>();
  EXPECT_EQ(back.precision, "fp32");
  ASSERT_NE(back.find("out"), nullptr);
  EXPECT_TRUE(std::isinf(back.find("out")->lower[2].rel_l2));
  EXPECT_EQ(back.find("out")->note, f.outputs[0].note);
  // Through the runner's trial answer.
  TrialAnswer a;
  a.precision_figures = f;
  TrialAnswer a2 = nlohmann::json(a).get<TrialAnswer>();
  ASSERT_TRUE(a2.precision_figures);
  EXPECT_EQ(a2.precision_figures->outputs.size(), 1u);
  TrialAnswer none = nlohmann::json(TrialAnswer{}).get<TrialAnswer>();
  EXPECT_FALSE(none.precision_figures);
}

TEST(NormwiseRule, AnIllConditionedReferenceLeavesTwiceItsOwnError) {
  // A reference 3e-4 off fp64 (cancellation): an honest candidate as far off passes, rtol or not.
  EXPECT_FALSE(normwise_failure(output(1e-6 * 2, 6e-5, 5e-4, 3e-4), kFp32));
  EXPECT_TRUE(normwise_failure(output(1e-6 * 2, 6e-5, 7e-4, 3e-4), kFp32));
}

TEST(PrecisionRule, ADegenerateReferenceIsNotJudged) {
  // level2/23's output: zero in exact arithmetic, about 7e-17 in fp64, fp32's error 5e8 times that.
  WholeOutput w = output(-7e-17, 7e-17, 5e8, 5.4e8);
  PrecisionJudgement j = judge_precision(w, figures(5.4e8, 1.9e13, 2.6e12), "fp32");
  EXPECT_FALSE(j.judged);
  EXPECT_NE(j.note.find("degenerate"), std::string::npos) << j.note;
}
