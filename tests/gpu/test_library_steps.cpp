// Library steps (cuBLASLt gemm, cuDNN conv) against naive reference kernels on odd sizes: a linear
// layer with bias and ReLU in cuBLASLt's epilogue, a grouped, strided and dilated convolution, a
// transposed 1-D convolution; a CUDA-graph replay of the same plan gives the same result in the
// same time; a step that leaves part of an output unwritten fails on the poison; a step asked to
// write an input is refused before the GPU. Skips without a GPU, or without cuBLASLt/cuDNN.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu_test.hpp"
#include "kagent/common/error.hpp"
#include "kagent/gpu/libraries.hpp"

using namespace kagent;

namespace {

class LibrarySteps : public test::GpuTest {
 protected:
  EvalReport eval(const std::string& op, const std::string& fixture) {
    Op o = load_op(test::source_dir() / "tests/gpu/ops" / op / "op.json");
    return ev->evaluate(o, load_candidate(test::source_dir() / "tests/gpu/kernels" / fixture));
  }
  static void expect_correct(const EvalReport& r) {
    EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
    EXPECT_GE(r.reward.tier, 1) << r.reward.reason;
    for (const auto& f : r.outcome.flags) EXPECT_NE(f.kind, FlagKind::timing_untrusted) << flag_text(f);
  }
};

}  // namespace

TEST_F(LibrarySteps, GemmWithBiasAndReluEpilogueMatchesTheReference) {
  KAGENT_SKIP_WITHOUT_CUBLASLT();
  EvalReport r = eval("linear_relu", "gemm_linear_relu.cu");
  expect_correct(r);
  ASSERT_TRUE(r.outcome.cupti.has_value());
  EXPECT_TRUE(r.outcome.cupti->problem.empty()) << r.outcome.cupti->problem;
}

TEST_F(LibrarySteps, GraphReplayGivesTheSameResultInTheSameTime) {
  KAGENT_SKIP_WITHOUT_CUBLASLT();
  EvalReport eager = eval("linear_relu", "gemm_linear_relu.cu");
  EvalReport graph = eval("linear_relu", "gemm_linear_relu_graph.cu");
  expect_correct(eager);
  expect_correct(graph);
  ASSERT_TRUE(eager.outcome.candidate_time && graph.outcome.candidate_time);
  const double e = eager.outcome.candidate_time->median_ms, g = graph.outcome.candidate_time->median_ms;
  // One step: the kernel time is the same, and a graph launch differs from the library's own launch
  // by at most a launch's overhead, a few microseconds either way: of a 12 us step, 17% (an H200,
  // graph 14.4 us against 12.4 us), so the bound is relative plus 5 us.
  EXPECT_LE(std::abs(g - e), 0.15 * e + 0.005) << "eager " << e << " ms, graph " << g << " ms";
}

TEST_F(LibrarySteps, AnOutputLeftPartlyUnwrittenFailsOnThePoison) {
  KAGENT_SKIP_WITHOUT_CUBLASLT();
  EvalReport r = eval("linear_relu", "gemm_leaves_last_row.cu");
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(LibrarySteps, AStepThatWritesAnInputIsRefusedBeforeTheGpu) {
  EXPECT_THROW(eval("linear_relu", "gemm_writes_input.cu"), InputError);
}

TEST_F(LibrarySteps, GroupedStridedDilatedConvolutionWithBiasAndRelu) {
  KAGENT_SKIP_WITHOUT_CUDNN();
  expect_correct(eval("conv2d_grouped", "conv2d_grouped_relu.cu"));
}

TEST_F(LibrarySteps, TransposedOneDimensionalConvolution) {
  KAGENT_SKIP_WITHOUT_CUDNN();
  expect_correct(eval("conv_transpose1d", "conv_transpose1d.cu"));
}

// The profile's per-launch breakdown of a plan with library steps: every launch timed, and each
// library step named with the kernels CUPTI saw it run (split launch by launch by harness marks).
TEST_F(LibrarySteps, ProfileNamesTheKernelsOfEachLibraryStep) {
  KAGENT_SKIP_WITHOUT_CUDNN();
  Op o = load_op(test::source_dir() / "tests/gpu/ops/conv2d_grouped/op.json");
  EvalReport r = ev->evaluate(o, load_candidate(test::source_dir() / "tests/gpu/kernels/conv2d_grouped_relu.cu"),
                              EvalMode::profile);
  expect_correct(r);
  ASSERT_FALSE(r.outcome.launch_times.empty());
  const LaunchTime& step = r.outcome.launch_times[0];
  EXPECT_NE(step.kernel.find("cuDNN"), std::string::npos) << step.kernel;
  EXPECT_FALSE(step.library_kernels.empty()) << "no CUPTI kernels attributed to " << step.kernel;
  EXPECT_GT(step.cupti_ms, 0) << step.kernel;
  EXPECT_LE(step.cupti_ms, step.median_ms * 1.05) << "a step's kernels cannot outlast the events around it";
  for (const auto& name : step.library_kernels) EXPECT_FALSE(name.starts_with("kagent_")) << name;
}
