// kagent check's regression gate on a real GPU: the alternating A/B comparison catches a kernel
// made 10% slower at a 3% margin, and lets an identical kernel through every time (20 of 20).
#include <gtest/gtest.h>

#include <algorithm>

#include "gpu/gpu_test.hpp"
#include "kagent/check/verdict.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

class CheckGpu : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    op = load_op(test::examples_dir() / "vector_add/op.json");
  }
  check::Verdict check(const std::string& kernel, const std::string& baseline, double margin_pct) {
    check::CheckEntry e;
    e.name = kernel;
    e.kernel = kernel;
    e.op = test::examples_dir() / "vector_add/op.json";
    e.t.baseline = baseline;
    e.t.max_regression = margin_pct;
    Candidate k = load_candidate(kernel), b = load_candidate(baseline);
    return check::judge(e, ev->evaluate(op, k, EvalMode::score, &b));
  }
  static std::string naive() { return (test::examples_dir() / "vector_add/cand_naive.cu").string(); }
  static std::string kernel(const std::string& name) {
    return (test::source_dir() / "tests/gpu/kernels" / name).string();
  }

  Op op;
};

}  // namespace

TEST_F(CheckGpu, TenPercentSlowerKernelIsCaughtAtThreePercent) {
  check::Verdict v = check(kernel("fma_chain_10pct_slower.cu"), kernel("fma_chain.cu"), 3.0);
  ASSERT_TRUE(v.ab.has_value());
  const auto& r = v.ab->ratio;
  std::printf("fma_chain 1100 vs 1000 FMAs: ratio %.4f (95%% CI %.4f to %.4f), %d pairs, %s\n", r.median, r.low, r.high,
              r.n, v.ab->stop_reason.c_str());
  EXPECT_TRUE(v.ab->baseline_correct);
  EXPECT_EQ(v.status, "fail") << v.reasons.front();
  EXPECT_GT(r.low, 1.03);
  EXPECT_GT(r.median, 1.05);
  EXPECT_LT(r.median, 1.15);
  EXPECT_NE(v.reasons.front().find("regression"), std::string::npos) << v.reasons.front();

  // The other way round it is faster, which is never a regression.
  check::Verdict back = check(kernel("fma_chain.cu"), kernel("fma_chain_10pct_slower.cu"), 3.0);
  EXPECT_EQ(back.status, "pass") << back.reasons.front();
  EXPECT_LT(back.ab->ratio.high, 1.0);
}

TEST_F(CheckGpu, IdenticalKernelPassesTwentyTimesOutOfTwentyAtThreePercent) {
  int passed = 0;
  double lo = 10, hi = 0, widest = 0;
  // A memory-bound kernel (noisier than a compute-bound one) against itself.
  for (int i = 0; i < 20; ++i) {
    check::Verdict v = check(naive(), naive(), 3.0);
    ASSERT_TRUE(v.ab.has_value()) << v.reasons.front();
    passed += v.passed();
    lo = std::min(lo, v.ab->ratio.median);
    hi = std::max(hi, v.ab->ratio.median);
    widest = std::max(widest, v.ab->ratio.high - v.ab->ratio.low);
  }
  std::printf("identical kernel, 20 checks: ratio medians %.4f to %.4f, widest 95%% CI %.4f\n", lo, hi, widest);
  EXPECT_EQ(passed, 20);
}
