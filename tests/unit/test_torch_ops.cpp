// The torch-operators policy (protocol/torch_ops.hpp) on recorded traces of ModelNew solutions (the
// shape tools/kagent_modelnew/trace.py reports), without a GPU: fail fails what PyTorch computes,
// cap keeps today's tier-1 flag over the line, allow only notes; allocation and fills are not work.
#include <gtest/gtest.h>

#include "kagent/eval/reward.hpp"
#include "kagent/eval/torch_ops_rule.hpp"
#include "kagent/protocol/measure_preset.hpp"
#include "kagent/protocol/torch_ops.hpp"

using namespace kagent;

namespace {

// Five profiled samples: `custom` launches of the solution's own kernels and PyTorch's operators'
// kernel time per operator, 100 us of kernel time in all.
nlohmann::json trace(int custom, nlohmann::json torch_ops) {
  double torch_us = 0;
  for (auto& [op, us] : torch_ops.items()) torch_us += us.get<double>();
  return {{"samples", 5},
          {"kernels", nlohmann::json::array({{{"name", "k"}, {"calls", custom + 5}}})},
          {"torch_ops", torch_ops},
          {"torch_us", torch_us},
          {"kernel_us", 100.0},
          {"torch_share", torch_us / 100.0},
          {"custom_kernels", custom}};
}

CuptiCheck check_of(const nlohmann::json& t) {
  CuptiCheck c;
  c.ran = true;
  c.launches_seen = t["kernels"][0]["calls"].get<int>();
  c.kernel_ms = t["kernel_us"].get<double>() / 1e3;
  return c;
}

struct Judged {
  std::string failure;
  EvalOutcome o;
};

Judged judge(const nlohmann::json& t, TorchOps policy) {
  Judged j;
  j.failure = judge_torch_ops(t, check_of(t), policy, j.o);
  return j;
}

bool has(const EvalOutcome& o, FlagKind k) {
  for (const Flag& f : o.flags)
    if (f.kind == k) return true;
  return false;
}

}  // namespace

TEST(TorchOps, NamesReadBack) {
  for (TorchOps p : {TorchOps::fail, TorchOps::cap, TorchOps::allow}) EXPECT_EQ(parse_torch_ops(torch_ops_name(p)), p);
  EXPECT_FALSE(parse_torch_ops("strict").has_value());
  EXPECT_EQ(find_measure_preset("training")->torch_ops, TorchOps::fail);
  EXPECT_FALSE(find_measure_preset("default")->torch_ops.has_value());
}

TEST(TorchOps, AllocatingAndFillingAreNotWork) {
  for (const char* op : {"aten::empty", "aten::empty_like", "aten::zeros", "aten::zeros_like", "aten::fill_",
                         "aten::zero_", "aten::full", "aten::new_empty"})
    EXPECT_TRUE(torch_op_only_allocates(op)) << op;
  for (const char* op :
       {"aten::relu", "aten::matmul", "aten::linear", "aten::copy_", "aten::contiguous", "aten::clone", "aten::cat",
        "aten::mul", "aten::dropout", "aten::softmax", "aten::add_", "aten::zeros_likeX", "myext::relu"})
    EXPECT_FALSE(torch_op_only_allocates(op)) << op;
}

TEST(TorchOps, AllTorchFailsUnderFailIsCappedUnderCapAndNotedUnderAllow) {
  // forward is torch.relu: no kernel of its own (tests/gpu/modelnew/torch_ops.py).
  const auto t = trace(0, {{"aten::relu", 100.0}});
  auto fail = judge(t, TorchOps::fail);
  EXPECT_NE(fail.failure.find("aten::relu 100.0%"), std::string::npos) << fail.failure;
  EXPECT_TRUE(has(fail.o, FlagKind::torch_ops));
  auto cap = judge(t, TorchOps::cap);
  EXPECT_EQ(cap.failure, "");
  EXPECT_TRUE(has(cap.o, FlagKind::torch_ops));
  auto allow = judge(t, TorchOps::allow);
  EXPECT_EQ(allow.failure, "");
  EXPECT_FALSE(has(allow.o, FlagKind::torch_ops));
  ASSERT_EQ(allow.o.flags.size(), 1u);
  EXPECT_NE(allow.o.flags[0].detail.find("aten::relu"), std::string::npos);
}

TEST(TorchOps, APartOfTheWorkInTorchFailsUnderFailOnlyCapKeepsItsLine) {
  // Its own kernel carries 90% of the time; torch.matmul the rest (a GEMM left to PyTorch).
  const auto t = trace(5, {{"aten::matmul", 10.0}});
  auto fail = judge(t, TorchOps::fail);
  EXPECT_NE(fail.failure.find("computed part of the work (10.0% of the kernel time: aten::matmul 10.0%)"),
            std::string::npos)
      << fail.failure;
  auto cap = judge(t, TorchOps::cap);
  EXPECT_EQ(cap.failure, "");
  EXPECT_FALSE(has(cap.o, FlagKind::torch_ops));  // under the 50% line: a note
  EXPECT_EQ(cap.o.flags.size(), 1u);
}

TEST(TorchOps, AllocationAroundItsOwnKernelsPassesEveryPolicy) {
  // torch.empty_like for the output and a zeros fill of a scratch buffer, then its own kernels.
  const auto t = trace(5, {{"aten::zeros", 3.0}, {"aten::empty_like", 0.0}});
  for (TorchOps p : {TorchOps::fail, TorchOps::cap, TorchOps::allow}) {
    auto j = judge(t, p);
    EXPECT_EQ(j.failure, "") << torch_ops_name(p);
    EXPECT_FALSE(has(j.o, FlagKind::torch_ops)) << torch_ops_name(p);
  }
  // Its own kernels only: nothing to say.
  EXPECT_TRUE(judge(trace(5, nlohmann::json::object()), TorchOps::fail).o.flags.empty());
}

TEST(TorchOps, NoKernelOfItsOwnFailsEvenWhenTorchOnlyFilled) {
  // Every kernel a fill: the output is a constant PyTorch wrote.
  const auto t = trace(0, {{"aten::full", 100.0}});
  auto fail = judge(t, TorchOps::fail);
  EXPECT_NE(fail.failure.find("no kernel of the solution's own ran"), std::string::npos) << fail.failure;
  EXPECT_TRUE(has(judge(t, TorchOps::cap).o, FlagKind::torch_ops));
}

TEST(TorchOps, TheCapFlagWithholdsTheSpeedTiers) {
  auto cap = judge(trace(1, {{"aten::matmul", 80.0}}), TorchOps::cap);
  Baselines b;
  b.eager_ms = 10;
  b.compile_ms = 10;
  const Reward r = compute_reward(true, true, 1.0, b, cap.o.flags);
  EXPECT_EQ(r.tier, 1) << r.reason;
}
