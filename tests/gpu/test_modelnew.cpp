// ModelNew solutions (KernelBench's format: a .py defining ModelNew, CUDA through load_inline or
// Triton) evaluated end to end: a correct load_inline and a correct Triton solution get their
// tiers; every hack in tests/gpu/modelnew (cached outputs, result reuse, written inputs, a side
// stream, a patched timer, PyTorch ops, lower precision, a fallback) is rejected or flagged; a
// crash, a hang and a build error are contained and the next evaluation works. Needs a GPU and
// python3 with torch (Triton for the Triton solutions); skips with the reason otherwise.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "gpu_test.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// Small versions of KernelBench's level1/19_ReLU and level1/1 (the fixtures' problems): the same
// forward, inputs a few MB so the suite stays fast.
constexpr const char* kRelu = R"~(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(2048, 4096)]
def get_init_inputs():
    return []
)~";

// level1/19_ReLU's own distribution: torch.rand, all non-negative, so ReLU changes no value.
constexpr const char* kReluRand = R"~(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.rand(2048, 4096)]
def get_init_inputs():
    return []
)~";

constexpr const char* kMatmul = R"~(import torch
class Model(torch.nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
N = 1024
def get_inputs():
    return [torch.rand(N, N), torch.rand(N, N)]
def get_init_inputs():
    return []
)~";

const fs::path kFixtures = fs::path(KAGENT_SOURCE_DIR_DEFAULT) / "tests" / "gpu" / "modelnew";

class ModelNewEval : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    std::string why;
    if (!test::torch_with_gpu(&why)) GTEST_SKIP() << why;
    opts.runner_path = (test::binary_dir() / "kagent-runner").string();
    opts.timeout = 300s;
    opts.stop_rule.max_wall_s = 3;
    cache = std::make_shared<CompileCache>(cache_dir.path());
    write(dir.path() / "relu.py", kRelu);
    write(dir.path() / "matmul.py", kMatmul);
    write(dir.path() / "relu_rand.py", kReluRand);
  }
  static void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }
  Evaluator& evaluator() {
    if (!ev) ev = std::make_unique<Evaluator>(opts, cache);
    return *ev;
  }
  EvalReport eval(const std::string& fixture, const std::string& problem = "relu.py") {
    Op op = load_op(dir.path() / problem);
    return evaluator().evaluate(op, load_candidate(kFixtures / fixture));
  }
  static bool has_flag(const EvalReport& r, FlagKind k) {
    for (const auto& f : r.outcome.flags)
      if (f.kind == k) return true;
    return false;
  }
  static std::string describe(const EvalReport& r) { return render_report(r); }

  test::TempDir dir, cache_dir;
  std::shared_ptr<CompileCache> cache;
  EvalOptions opts;
  std::unique_ptr<Evaluator> ev;
};

TEST_F(ModelNewEval, CorrectLoadInlineSolutionGetsItsTier) {
  EvalReport r = eval("relu_load_inline.py");
  ASSERT_TRUE(r.compile.ok) << r.compile.log;
  EXPECT_TRUE(r.outcome.correct) << describe(r);
  EXPECT_GE(r.reward.tier, 1) << describe(r);
  ASSERT_TRUE(r.outcome.candidate_time.has_value());
  EXPECT_GT(r.outcome.candidate_time->median_ms, 0);
  EXPECT_EQ(r.outcome.rechecks, 2);
  ASSERT_TRUE(r.outcome.cupti.has_value());
  EXPECT_TRUE(r.outcome.cupti->ran) << r.outcome.cupti->not_run;
  EXPECT_GT(r.outcome.cupti->launches_seen, 0);
  EXPECT_FALSE(has_flag(r, FlagKind::timing_untrusted)) << describe(r);
  EXPECT_FALSE(has_flag(r, FlagKind::torch_ops)) << describe(r);
  // A second evaluation finds the build in the cache.
  EvalReport again = eval("relu_load_inline.py");
  EXPECT_TRUE(again.compile.cache_hit);
  EXPECT_TRUE(again.outcome.correct) << describe(again);
}

TEST_F(ModelNewEval, CorrectTritonSolutionGetsItsTier) {
  auto t = run_capture({"python3", "-c", "import triton"}, 60s);
  if (t.exit_code != 0) GTEST_SKIP() << "no Triton: " << t.output;
  EvalReport r = eval("relu_triton.py");
  ASSERT_TRUE(r.compile.ok) << r.compile.log;
  EXPECT_TRUE(r.outcome.correct) << describe(r);
  EXPECT_GE(r.reward.tier, 1);
  EXPECT_FALSE(has_flag(r, FlagKind::timing_untrusted)) << describe(r);
  EXPECT_FALSE(has_flag(r, FlagKind::torch_ops)) << describe(r);
}

TEST_F(ModelNewEval, CachedOutputsFailOnFreshInputs) {
  EvalReport r = eval("cached_output.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(ModelNewEval, UninitializedOutputsFail) {
  EvalReport r = eval("result_reuse.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(ModelNewEval, ZeroedInputsAreCaughtAsWrittenInputs) {
  EvalReport r = eval("zero_inputs.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::inputs) << describe(r);
}

TEST_F(ModelNewEval, WritingAnInputFailsEvenWithRightOutputs) {
  EvalReport r = eval("writes_input.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::inputs) << describe(r);
}

// Inputs where the result equals the input: the write changes no value, the output is the input.
TEST_F(ModelNewEval, ReturningTheInputAsTheOutputFailsWhereValuesCannotTell) {
  for (const char* fixture : {"writes_input_same_values.py", "writes_input.py"}) {
    EvalReport r = eval(fixture, "relu_rand.py");
    EXPECT_FALSE(r.outcome.correct) << fixture << "\n" << describe(r);
    EXPECT_EQ(r.outcome.failure_stage, FailureStage::inputs) << fixture << "\n" << describe(r);
  }
}

TEST_F(ModelNewEval, ReplacingTheTimerAtImportIsTampering) {
  EvalReport r = eval("patch_event.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::tamper) << describe(r);
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(ModelNewEval, ReplacingTheTimerDuringACallIsTampering) {
  EvalReport r = eval("patch_at_call.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::tamper) << describe(r);
}

TEST_F(ModelNewEval, PyTorchOpsAreFlaggedUnlessAllowed) {
  EvalReport r = eval("torch_ops.py");
  EXPECT_TRUE(r.outcome.correct) << describe(r);
  EXPECT_TRUE(has_flag(r, FlagKind::torch_ops)) << describe(r);
  EXPECT_EQ(r.reward.tier, 1) << describe(r);
  opts.torch_ops = TorchOps::allow;
  ev.reset();
  EvalReport allowed = eval("torch_ops.py");
  EXPECT_TRUE(allowed.outcome.correct) << describe(allowed);
  EXPECT_FALSE(has_flag(allowed, FlagKind::torch_ops)) << describe(allowed);
  opts.torch_ops = TorchOps::fail;
  ev.reset();
  EvalReport failed = eval("torch_ops.py");
  EXPECT_FALSE(failed.outcome.correct) << describe(failed);
  EXPECT_EQ(failed.outcome.failure_stage, FailureStage::torch_ops) << describe(failed);
  EXPECT_EQ(failed.reward.tier, -1);
  EXPECT_NE(failed.outcome.message.find("aten::relu"), std::string::npos) << describe(failed);
}

TEST_F(ModelNewEval, UnderTorchOpsFailOnlyTheSolutionsOwnKernelsMayCompute) {
  opts.torch_ops = TorchOps::fail;
  ev.reset();
  // Its own kernel after a torch multiply: a small part of the work in PyTorch fails.
  EvalReport partial = eval("partial_torch.py");
  EXPECT_FALSE(partial.outcome.correct) << describe(partial);
  EXPECT_EQ(partial.outcome.failure_stage, FailureStage::torch_ops) << describe(partial);
  EXPECT_NE(partial.outcome.message.find("aten::mul"), std::string::npos) << describe(partial);
  // Its own kernel alone (torch::empty_like for the output): correct.
  EvalReport own = eval("relu_load_inline.py");
  EXPECT_TRUE(own.outcome.correct) << describe(own);
  EXPECT_FALSE(has_flag(own, FlagKind::torch_ops)) << describe(own);
  // Under cap the same partial solution is correct, PyTorch's share noted.
  opts.torch_ops = TorchOps::cap;
  ev.reset();
  EvalReport capped = eval("partial_torch.py");
  EXPECT_TRUE(capped.outcome.correct) << describe(capped);
  EXPECT_FALSE(has_flag(capped, FlagKind::torch_ops)) << describe(capped);
}

TEST_F(ModelNewEval, AFallbackToPyTorchIsFlagged) {
  EvalReport r = eval("fallback.py");
  EXPECT_TRUE(has_flag(r, FlagKind::torch_ops)) << describe(r);
  EXPECT_LE(r.reward.tier, 1);
}

TEST_F(ModelNewEval, LowerPrecisionFailsTheFp32Tolerance) {
  EvalReport r = eval("lower_precision.py", "matmul.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(ModelNewEval, Tf32FailsThePrecisionRuleWhereItsElementsPassAndPassesUnderTf32) {
  opts.timing = false;
  Op loose = load_op(dir.path() / "matmul.py");
  loose.tolerance = Tolerance{1e-2, 1e-2};
  EvalReport r = evaluator().evaluate(loose, load_candidate(kFixtures / "tf32_matmul.py"));
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::precision) << describe(r);
  EXPECT_EQ(r.reward.tier, -1);
  EvalReport allowed = evaluator().evaluate(with_precision(load_op(dir.path() / "matmul.py"), Precision::tf32),
                                            load_candidate(kFixtures / "tf32_matmul.py"));
  EXPECT_TRUE(allowed.outcome.correct) << describe(allowed);
}

TEST_F(ModelNewEval, WorkOnAnUnjoinedStreamIsNotTrusted) {
  EvalReport r = eval("side_stream.py", "matmul.py");
  EXPECT_TRUE(has_flag(r, FlagKind::timing_untrusted)) << describe(r);
  EXPECT_LE(r.reward.tier, 1) << describe(r);
}

TEST_F(ModelNewEval, BuildErrorIsACompileFailureWithTheCompilersMessage) {
  EvalReport r = eval("build_error.py");
  EXPECT_FALSE(r.compile.ok);
  EXPECT_EQ(r.reward.tier, -1);
  EXPECT_NE(r.compile.log.find("error"), std::string::npos) << r.compile.log;
}

TEST_F(ModelNewEval, CrashIsContainedAndTheNextEvaluationWorks) {
  EvalReport r = eval("crash.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_TRUE(r.outcome.failure_stage == FailureStage::crash || r.outcome.failure_stage == FailureStage::launch)
      << describe(r);
  EvalReport next = eval("relu_load_inline.py");
  EXPECT_TRUE(next.outcome.correct) << describe(next);
}

// The hacks again, as a session runs them (kagent eval A.py B.py ..., bench --samples, serve): each
// solution's worker started and warmed ahead (Evaluator::expect) while the one before it is
// measured, taken by its evaluation. Every verdict as when each is evaluated on its own.
TEST_F(ModelNewEval, EveryHackFailsThroughWorkersStartedAhead) {
  struct Case {
    const char* fixture;
    const char* problem;
    std::function<void(const EvalReport&)> expect;
  };
  auto correct = [](int tier) {
    return [tier](const EvalReport& r) {
      EXPECT_TRUE(r.outcome.correct) << describe(r);
      EXPECT_GE(r.reward.tier, tier) << describe(r);
      EXPECT_FALSE(has_flag(r, FlagKind::timing_untrusted)) << describe(r);
    };
  };
  auto stage = [](FailureStage s) {
    return [s](const EvalReport& r) {
      EXPECT_FALSE(r.outcome.correct) << describe(r);
      EXPECT_EQ(r.outcome.failure_stage, s) << describe(r);
      EXPECT_EQ(r.reward.tier, -1) << describe(r);
    };
  };
  auto flagged = [](FlagKind k) {
    return [k](const EvalReport& r) {
      EXPECT_TRUE(has_flag(r, k)) << describe(r);
      EXPECT_LE(r.reward.tier, 1) << describe(r);
    };
  };
  const std::vector<Case> cases = {
      {"relu_load_inline.py", "relu.py", correct(1)},
      {"cached_output.py", "relu.py", [](const EvalReport& r) { EXPECT_EQ(r.reward.tier, -1) << describe(r); }},
      {"result_reuse.py", "relu.py", [](const EvalReport& r) { EXPECT_FALSE(r.outcome.correct) << describe(r); }},
      {"zero_inputs.py", "relu.py", stage(FailureStage::inputs)},
      {"writes_input.py", "relu.py", stage(FailureStage::inputs)},
      {"writes_input_same_values.py", "relu_rand.py", stage(FailureStage::inputs)},
      {"patch_event.py", "relu.py", stage(FailureStage::tamper)},
      {"patch_at_call.py", "relu.py", stage(FailureStage::tamper)},
      {"torch_ops.py", "relu.py", flagged(FlagKind::torch_ops)},
      {"fallback.py", "relu.py", flagged(FlagKind::torch_ops)},
      {"lower_precision.py", "matmul.py", [](const EvalReport& r) { EXPECT_EQ(r.reward.tier, -1) << describe(r); }},
      {"side_stream.py", "matmul.py", flagged(FlagKind::timing_untrusted)},
      {"crash.py", "relu.py",
       [](const EvalReport& r) {
         EXPECT_FALSE(r.outcome.correct) << describe(r);
         EXPECT_TRUE(r.outcome.failure_stage == FailureStage::crash || r.outcome.failure_stage == FailureStage::launch)
             << describe(r);
       }},
      {"relu_load_inline.py", "relu.py", correct(1)},
  };
  auto op_of = [&](const Case& c) { return load_op(dir.path() / c.problem); };
  {
    // Their load_inline builds first, all at once on the CPU, as the front ends do (prebuild.hpp).
    judge::Prebuilder pre(cache, evaluator().arch(), 0);
    std::vector<judge::CandidateRequest> builds;
    for (const Case& c : cases) {
      judge::CandidateRequest r;
      r.file = kFixtures / c.fixture;
      r.problem = dir.path() / c.problem;
      builds.push_back(r);
    }
    for (const auto& r : builds) pre.submit(r);
    for (const auto& r : builds) pre.wait_for(r);
  }
  evaluator().expect(op_of(cases[0]), load_candidate(kFixtures / cases[0].fixture));
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].fixture);
    if (i + 1 < cases.size()) evaluator().expect(op_of(cases[i + 1]), load_candidate(kFixtures / cases[i + 1].fixture));
    cases[i].expect(evaluator().evaluate(op_of(cases[i]), load_candidate(kFixtures / cases[i].fixture)));
  }
}

TEST_F(ModelNewEval, HangTimesOutAndTheNextEvaluationWorks) {
  opts.timeout = 20s;
  EvalReport r = eval("hang.py");
  EXPECT_FALSE(r.outcome.correct) << describe(r);
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::timeout) << describe(r);
  EvalReport next = eval("relu_load_inline.py");
  EXPECT_TRUE(next.outcome.correct) << describe(next);
}

}  // namespace
