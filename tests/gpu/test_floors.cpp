// What the model reads about compute, on a GPU: the tensor-core roofs kagent measures beside the
// copy bandwidth and the FP32 rate; the compute floor in the task prompt of two GEMM-bound KernelBench
// problems (their FLOPs counted by PyTorch's FlopCounterMode in the reference server); and the
// profile's hardware counters for plans replayed as a CUDA graph. Skips without a GPU (and, for the
// KernelBench part, without torch or the problem files), saying why.
#include <gtest/gtest.h>

#include <cstdio>

#include "gpu/gpu_test.hpp"
#include "kagent/agent/prompts.hpp"
#include "kagent/agent/task_text.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/profile_table.hpp"
#include "kagent/profile/compute_floor.hpp"
#include "kagent/profile/roofline.hpp"
#include "kagent/sandbox/process.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

class FloorsGpu : public test::GpuTest {
 protected:
  // The counters' pass, or a skip where performance counters cannot be read here.
  void skip_without_counters(const EvalReport& r) {
    const std::string& note = r.outcome.metrics_note;
    if (note.find("INSUFFICIENT_PRIVILEGES") != std::string::npos || note.find("administrators") != std::string::npos)
      GTEST_SKIP() << "performance counters are not readable here: " << note;
  }
};

}  // namespace

// The tensor-core roofs: each mma.sync kind measured from registers on every SM, plausible against
// the FP32 roof, cached with the others, and stated in the task's GPU section.
TEST_F(FloorsGpu, PeaksCarryTheTensorCoreRates) {
  std::string why;
  auto p = ev->device_peaks(&why);
  ASSERT_TRUE(p.has_value()) << why;
  std::printf("%s: FP32 %.0f GFLOP/s (%s); mma.sync TF32 %.0f, FP16 %.0f, BF16 %.0f GFLOP/s; 3xTF32 %.0f %s\n",
              p->gpu.c_str(), p->fp32_gflops, p->gemm_by.c_str(), p->tf32_mma_gflops, p->f16_mma_gflops,
              p->bf16_mma_gflops, p->tf32_mma_gflops / 3, p->mma_note.c_str());
  const GpuInfo g = query_gpus().gpus.at(0);  // a copy: the inventory is a temporary
  if (g.cc_major < 8) {
    EXPECT_EQ(p->tf32_mma_gflops, 0);
    EXPECT_NE(p->mma_note.find("compute capability 8.0"), std::string::npos) << p->mma_note;
    return;
  }
  // Tensor cores outrun the FP32 pipes at every kind; FP16 and BF16 run at one rate, about twice TF32's.
  EXPECT_GT(p->tf32_mma_gflops, p->fp32_gflops);
  EXPECT_GT(p->f16_mma_gflops, 1.5 * p->tf32_mma_gflops);
  EXPECT_NEAR(p->bf16_mma_gflops, p->f16_mma_gflops, 0.15 * p->f16_mma_gflops);
  EXPECT_LT(p->f16_mma_gflops, 40 * p->theoretical_gflops) << "not a rate any tensor core reaches";
  const std::string text = profile::measured_roofs_text(*p);
  EXPECT_NE(text.find("TF32 m16n8k8"), std::string::npos) << text;
  EXPECT_NE(text.find("3xTF32 (fp32-accurate) at most"), std::string::npos) << text;

  test::GpuTest::SetUp();  // a fresh evaluator on the same cache folder reads them back
  auto again = ev->device_peaks(&why);
  ASSERT_TRUE(again.has_value()) << why;
  EXPECT_TRUE(again->cached);
  EXPECT_EQ(again->tf32_mma_gflops, p->tf32_mma_gflops);
}

// A plan with "graph": true once profiled with "no counters (the range profiler reported 0 kernels
// for a plan of 3 launches)". Now each launch has its counters, and the profile says how they were
// taken; the timing stays the graph's.
TEST_F(FloorsGpu, GraphPlansHaveCountersOnePerLaunch) {
  struct Case {
    const char* kernel;
    const char* op;
    size_t launches;
  };
  for (const Case& k : {Case{"tests/gpu/kernels/graph_three_launches.cu", "examples/vector_add/op.json", 3},
                        Case{"tests/gpu/kernels/graph_gemm_then_relu.cu", "tests/gpu/ops/linear_relu/op.json", 2}}) {
    SCOPED_TRACE(k.kernel);
    if (std::string(k.kernel).find("gemm") != std::string::npos) KAGENT_SKIP_WITHOUT_CUBLASLT();
    Op op = load_op(test::source_dir() / k.op);
    Candidate cand = load_candidate(test::source_dir() / k.kernel);
    EvalReport r = ev->evaluate(op, cand, EvalMode::profile);
    ASSERT_TRUE(r.outcome.correct) << r.outcome.message;
    skip_without_counters(r);
    ASSERT_EQ(r.outcome.metrics_note, "");
    ASSERT_EQ(r.outcome.metrics.size(), k.launches);
    for (const KernelMetrics& m : r.outcome.metrics) EXPECT_GT(m.duration_ms, 0) << m.kernel;
    EXPECT_NE(r.outcome.metrics_replay.find("not as its CUDA graph"), std::string::npos) << r.outcome.metrics_replay;
    profile::ProfileOutput out = profile::render_profile(op, cand, r.compile, &r, "");
    std::printf("%s", out.compact.c_str());
    EXPECT_NE(out.compact.find("DRAM"), std::string::npos) << out.compact;
    EXPECT_EQ(out.compact.find("no counters"), std::string::npos) << out.compact;
    EXPECT_NE(out.compact.find("counters: this pass ran the plan's launches one by one"), std::string::npos)
        << out.compact;
  }
}

// The same through the command line, as the reader ran it: `kagent profile --compact`.
TEST_F(FloorsGpu, KagentProfileCompactOfAGraphPlanShowsCounters) {
  auto r = run_capture({(test::binary_dir() / "kagent").string(), "profile", "--compact",
                        (test::source_dir() / "tests/gpu/kernels/graph_three_launches.cu").string(), "--op",
                        (test::examples_dir() / "vector_add/op.json").string()},
                       600s);
  ASSERT_TRUE(r.started);
  std::printf("%s", r.output.c_str());
  if (r.output.find("administrators") != std::string::npos ||
      r.output.find("INSUFFICIENT_PRIVILEGES") != std::string::npos)
    GTEST_SKIP() << "performance counters are not readable here";
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("#0 add_range"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("DRAM"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("no counters"), std::string::npos) << r.output;
}

// The task prompt of level2/33 (Gemm_Scale_BatchNorm) and level3/33 (VanillaRNN) gives a compute
// floor: the FLOPs FlopCounterMode counts (every nn.Linear's 2 x M x N x K) at this GPU's measured
// rates, the operator compute-bound (its FLOPs outweigh its bytes), tier 3 against that floor.
TEST_F(FloorsGpu, KernelBenchGemmProblemsShowAComputeFloor) {
  std::string why;
  if (!test::torch_with_gpu(&why)) GTEST_SKIP() << why;
  struct Case {
    const char* problem;
    double flops;
  };
  for (const Case& k :
       {Case{"level2/33_Gemm_Scale_BatchNorm.py", 2.0 * 1024 * 8192 * 8192},
        Case{"level3/33_VanillaRNN.py", 2.0 * 256 * (16384 + 16384) * 16384 + 2.0 * 256 * 16384 * 8192}}) {
    SCOPED_TRACE(k.problem);
    const auto py = test::kernelbench_dir() / k.problem;
    if (!std::filesystem::exists(py)) GTEST_SKIP() << py << " not here (set KAGENT_KERNELBENCH_DIR)";
    const Op loaded = load_op(py);
    const ResolvedOp resolved = ev->resolve(loaded);
    ASSERT_TRUE(resolved.op.flops.has_value()) << resolved.op.flops_source;
    EXPECT_NEAR(*resolved.op.flops, k.flops, 1e-6 * k.flops) << resolved.op.flops_source;
    EXPECT_NE(resolved.op.flops_source.find("FlopCounterMode"), std::string::npos) << resolved.op.flops_source;

    agent::TimingFacts t;
    const RefBaselines& b = ev->pytorch_baselines(resolved);
    t.eager_ms = b.eager.median_ms;
    if (b.compile) t.compile_ms = b.compile->median_ms;
    t.compile_missing = b.compile_error;
    auto peaks = ev->device_peaks(&why);
    ASSERT_TRUE(peaks.has_value()) << why;
    t.peaks = peaks;
    t.bandwidth_gbs = profile::memory_roof(*peaks).gbs;
    t.theoretical_gbs = peaks->theoretical_gbs;
    t.bandwidth_source = "the best bandwidth measured on this GPU";
    auto values = agent::task_values(loaded, resolved.op, t, agent::gpu_text(0), agent::AgentOptions{},
                                     model_tools::ToolSet{}, "");
    auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
    const std::string& task = opening[1].content;
    std::printf("%s\n", agent::baselines_text(resolved.op, t).c_str());
    EXPECT_NE(task.find("Compute floor: the operator's"), std::string::npos) << task;
    EXPECT_NE(task.find("counted by PyTorch's FlopCounterMode"), std::string::npos) << task;
    EXPECT_NE(task.find("the operator is compute-bound"), std::string::npos) << task;
    EXPECT_NE(task.find("Measured on this GPU by kagent"), std::string::npos) << task;
    if (peaks->tf32_mma_gflops > 0) {
      EXPECT_NE(task.find("3xTF32 mma.sync at"), std::string::npos) << task;
    }
  }
}
