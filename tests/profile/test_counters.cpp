// The counters kagent reads per kernel: what each value becomes, and that CUPTI's profiler host API
// (no GPU needed) knows every metric name on the chips kagent runs on, so that a renamed or
// misspelt metric fails here rather than in a user's profile.
#include <gtest/gtest.h>

#include <stdexcept>

#include "kagent/profile/counters.hpp"
#include "kagent/profile/cupti_library.hpp"

using namespace kagent;
using namespace kagent::profile;

TEST(Counters, ValuesBecomeKernelMetrics) {
  const auto& names = counter_metrics();
  std::vector<double> v(names.size(), 0);
  auto set = [&](const std::string& name, double x) {
    auto it = std::find(names.begin(), names.end(), name);
    ASSERT_NE(it, names.end()) << name;
    v[static_cast<size_t>(it - names.begin())] = x;
  };
  set("gpu__time_duration.sum", 250000);  // nanoseconds
  set("dram__throughput.avg.pct_of_peak_sustained_elapsed", 91);
  set("sm__throughput.avg.pct_of_peak_sustained_elapsed", 12);
  set("dram__bytes.sum", 2e8);
  set("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", 1000);
  set("sm__sass_thread_inst_executed_op_fadd_pred_on.sum", 30);
  set("sm__sass_thread_inst_executed_op_fmul_pred_on.sum", 7);
  set("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", 40);
  KernelMetrics m = kernel_metrics("k", v);
  EXPECT_EQ(m.kernel, "k");
  EXPECT_DOUBLE_EQ(m.duration_ms, 0.25);
  EXPECT_EQ(m.dram_pct, 91);
  EXPECT_EQ(m.sm_pct, 12);
  EXPECT_EQ(m.dram_bytes, 2e8);
  EXPECT_EQ(m.fp32_flops, 2 * 1000 + 30 + 7);  // an FMA is two FLOPs
  EXPECT_EQ(m.tensor_pct, 40);
  EXPECT_THROW(kernel_metrics("k", {1, 2}), std::invalid_argument);
}

TEST(Counters, EveryMetricIsKnownOnTheSupportedChips) {
  if (const char* no = counters_unavailable_in_this_build()) GTEST_SKIP() << no << "; the plain build checks this";
  std::string why;
  if (!open_cupti(&why)) GTEST_SKIP() << "no libcupti here: " << why;
  // Ampere, Ada, Hopper, Blackwell (data center and RTX).
  for (const char* chip : {"GA100", "GA102", "AD102", "GH100", "GB100", "GB202"})
    EXPECT_EQ(check_counters_on_chip(chip, counter_metrics()), "") << chip;
}

TEST(Counters, AnUnknownMetricIsRefusedByName) {
  if (const char* no = counters_unavailable_in_this_build()) GTEST_SKIP() << no << "; the plain build checks this";
  std::string why;
  if (!open_cupti(&why)) GTEST_SKIP() << "no libcupti here: " << why;
  std::string r = check_counters_on_chip("GH100", {"dram__bytes.sum", "dram__no_such_counter.sum"});
  EXPECT_NE(r.find("GH100: dram__no_such_counter.sum: "), std::string::npos) << r;
  EXPECT_NE(check_counters_on_chip("NOT_A_CHIP", counter_metrics()), "");
}
