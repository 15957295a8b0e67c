// Library steps against PyTorch itself (issue #19): every step kind on random odd shapes, each a
// small KernelBench-style problem written here and judged by the evaluator under IEEE fp32 as any
// candidate is. GEMMs: odd m/n/k, trans_a and trans_b, batched with explicit strides (torch.bmm)
// and with one weight shared by the batch (matmul on 3-D), bias and ReLU in the epilogue.
// Convolutions: 1-D, 2-D and 3-D with odd sizes, stride, padding, dilation, groups, depthwise, and
// a transposed 2-D one with output_padding and groups. The shapes come from a fixed seed
// (KAGENT_LIBRARY_SEED overrides it) and are printed, so a failure can be replayed.
//
// Then launch overhead: a plan of 128 tiny kernel launches with "graph": true and false, both
// correct; the medians are printed for the record and the graph replay may not be slower than the
// launches one by one by more than 10%.
//
// Skips without a GPU, without python3/torch (the PyTorch cases), or without cuBLASLt/cuDNN.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include <fmt/format.h>

#include "gpu_test.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/gpu/libraries.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

unsigned seed_from_env() {
  const char* s = std::getenv("KAGENT_LIBRARY_SEED");
  return s != nullptr && *s != '\0' ? static_cast<unsigned>(std::strtoul(s, nullptr, 10)) : 19u;
}

// A KernelBench-style problem file: `init` is Model.__init__'s body (after super().__init__()),
// `forward` forward's body, `inputs` and `init_inputs` the lists the two functions return.
std::string problem(const std::string& args, const std::string& init, const std::string& forward,
                    const std::string& inputs, const std::string& init_inputs = "", const std::string& init_args = "") {
  return fmt::format(R"~(import torch
class Model(torch.nn.Module):
    def __init__(self{}):
        super().__init__()
        {}
    def forward(self, {}):
        return {}
def get_inputs():
    return [{}]
def get_init_inputs():
    return [{}]
)~",
                     init_args, init.empty() ? "pass" : init, args, forward, inputs, init_inputs);
}

// A candidate made of one library step.
std::string step_candidate(const std::string& step) {
  return fmt::format("/*kagent\n{{\"launch\": [{}]}}\n*/\n", step);
}

class LibraryStepsVsPyTorch : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    std::string why;
    if (!test::torch_with_gpu(&why)) GTEST_SKIP() << why;
    EvalOptions opts;
    opts.runner_path = (test::binary_dir() / "kagent-runner").string();
    opts.timeout = 300s;
    opts.timing = false;  // correctness only: no baselines to measure, a few seconds an evaluation
    ev = std::make_unique<Evaluator>(opts, std::make_shared<CompileCache>(dir.path() / "cache"));
    fmt::print("seed {} (KAGENT_LIBRARY_SEED)\n", seed);
  }
  // An odd number in [lo, hi] (lo odd).
  int64_t odd(int64_t lo, int64_t hi) { return lo + 2 * std::uniform_int_distribution<int64_t>(0, (hi - lo) / 2)(rng); }
  int64_t pick(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); }

  // Evaluates the step against the problem under fp32 and expects it correct; `what` (the shapes)
  // is printed and names the case in a failure.
  void expect_correct(const std::string& name, const std::string& what, const std::string& py,
                      const std::string& step) {
    fmt::print("[{}] {}\n", name, what);
    SCOPED_TRACE(name + ": " + what);
    Op op = with_precision(load_op(dir.write(name + ".py", py)), Precision::fp32);
    EvalReport r = ev->evaluate(op, load_candidate(dir.write(name + ".cu", step_candidate(step))));
    ASSERT_TRUE(r.compile.ok) << r.compile.log;
    EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
    EXPECT_GE(r.reward.tier, 1) << r.reward.reason;
  }

  unsigned seed = seed_from_env();
  std::mt19937_64 rng{seed};
  test::TempDir dir;
  std::unique_ptr<Evaluator> ev;
};

}  // namespace

TEST_F(LibraryStepsVsPyTorch, GemmOddSizesTransposesAndEpilogue) {
  KAGENT_SKIP_WITHOUT_CUBLASLT();
  {
    const int64_t m = odd(33, 301), n = odd(33, 301), k = odd(33, 301);
    expect_correct(
        "gemm_nn", fmt::format("A [{0}, {2}] @ B [{2}, {1}]", m, n, k),
        problem("A, B", "", "torch.matmul(A, B)", fmt::format("torch.randn({}, {}), torch.randn({}, {})", m, k, k, n)),
        R"({"gemm": {"a": "A", "b": "B", "d": "out", "m": "A.shape[0]", "n": "B.shape[1]", "k": "A.shape[1]"}})");
  }
  {
    const int64_t m = odd(33, 301), n = odd(33, 301), k = odd(33, 301);
    expect_correct(
        "gemm_tt", fmt::format("A [{2}, {0}]^T @ B [{1}, {2}]^T", m, n, k),
        problem("A, B", "", "A.t() @ B.t()", fmt::format("torch.randn({}, {}), torch.randn({}, {})", k, m, n, k)),
        R"({"gemm": {"a": "A", "b": "B", "trans_a": true, "trans_b": true, "d": "out",
                                "m": "A.shape[1]", "n": "B.shape[0]", "k": "A.shape[0]"}})");
  }
  {
    const int64_t m = odd(33, 301), n = odd(33, 301), k = odd(33, 301);
    expect_correct("linear_relu", fmt::format("relu(x [{}, {}] @ W [{}, {}]^T + b)", m, k, n, k),
                   problem("x", "self.linear = torch.nn.Linear(k, n)", "torch.relu(self.linear(x))",
                           fmt::format("torch.randn({}, {})", m, k), fmt::format("{}, {}", k, n), ", k, n"),
                   R"({"gemm": {"a": "x", "b": "linear_weight", "trans_b": true, "d": "out", "bias": "linear_bias",
                                "activation": "relu", "m": "x.shape[0]", "n": "linear_weight.shape[0]",
                                "k": "x.shape[1]"}})");
  }
}

TEST_F(LibraryStepsVsPyTorch, BatchedGemmWithStrides) {
  KAGENT_SKIP_WITHOUT_CUBLASLT();
  {
    const int64_t b = pick(2, 7), m = odd(17, 151), n = odd(17, 151), k = odd(17, 151);
    expect_correct("bmm", fmt::format("bmm(A [{0}, {1}, {3}], B [{0}, {3}, {2}])", b, m, n, k),
                   problem("A, B", "", "torch.bmm(A, B)",
                           fmt::format("torch.randn({}, {}, {}), torch.randn({}, {}, {})", b, m, k, b, k, n)),
                   R"({"gemm": {"a": "A", "b": "B", "d": "out", "batch": "A.shape[0]",
                                "m": "A.shape[1]", "n": "B.shape[2]", "k": "A.shape[2]",
                                "stride_a": "A.shape[1] * A.shape[2]", "stride_b": "B.shape[1] * B.shape[2]",
                                "stride_d": "out.shape[1] * out.shape[2]"}})");
  }
  {
    // One weight for every batch index: stride_b 0.
    const int64_t b = pick(2, 7), m = odd(17, 151), n = odd(17, 151), k = odd(17, 151);
    expect_correct(
        "matmul_3d_shared", fmt::format("x [{}, {}, {}] @ W [{}, {}]^T", b, m, k, n, k),
        problem("x", "self.weight = torch.nn.Parameter(torch.randn(n, k))", "torch.matmul(x, self.weight.t())",
                fmt::format("torch.randn({}, {}, {})", b, m, k), fmt::format("{}, {}", k, n), ", k, n"),
        R"({"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "batch": "x.shape[0]",
                                "m": "x.shape[1]", "n": "weight.shape[0]", "k": "x.shape[2]", "stride_b": 0}})");
  }
}

TEST_F(LibraryStepsVsPyTorch, ConvolutionsOneTwoAndThreeDimensional) {
  KAGENT_SKIP_WITHOUT_CUDNN();
  {
    const int64_t n = pick(2, 5), ci = odd(3, 9), co = odd(3, 17), len = odd(41, 201), ks = odd(3, 7);
    const int64_t s = pick(1, 3), p = pick(0, 3), d = pick(1, 3);
    expect_correct(
        "conv1d",
        fmt::format("x [{}, {}, {}], Conv1d({}, {}, {}, stride {}, padding {}, dilation {}) + bias", n, ci, len, ci, co,
                    ks, s, p, d),
        problem("x",
                fmt::format("self.conv = torch.nn.Conv1d({}, {}, {}, stride={}, padding={}, dilation={})", ci, co, ks,
                            s, p, d),
                "self.conv(x)", fmt::format("torch.randn({}, {}, {})", n, ci, len)),
        fmt::format(R"({{"conv": {{"x": "x", "w": "conv_weight", "y": "out", "bias": "conv_bias", "stride": {},
                                   "padding": {}, "dilation": {}}}}})",
                    s, p, d));
  }
  {
    const int64_t g = pick(2, 3), n = pick(2, 4), ci = g * odd(3, 5), co = g * odd(3, 7), h = odd(21, 61),
                  w = odd(21, 61);
    const int64_t kh = odd(1, 5), kw = odd(3, 5), sh = pick(1, 2), sw = pick(1, 3), ph = pick(0, 2), pw = pick(0, 2),
                  dh = pick(1, 2), dw = pick(1, 2);
    expect_correct(
        "conv2d_grouped_relu",
        fmt::format("relu(Conv2d({}, {}, ({}, {}), stride ({}, {}), padding ({}, {}), dilation ({}, {}), groups {}) "
                    "of x [{}, {}, {}, {}] + bias)",
                    ci, co, kh, kw, sh, sw, ph, pw, dh, dw, g, n, ci, h, w),
        problem("x",
                fmt::format("self.conv = torch.nn.Conv2d({}, {}, ({}, {}), stride=({}, {}), padding=({}, {}), "
                            "dilation=({}, {}), groups={})",
                            ci, co, kh, kw, sh, sw, ph, pw, dh, dw, g),
                "torch.relu(self.conv(x))", fmt::format("torch.randn({}, {}, {}, {})", n, ci, h, w)),
        fmt::format(R"({{"conv": {{"x": "x", "w": "conv_weight", "y": "out", "bias": "conv_bias", "stride": [{}, {}],
                                   "padding": [{}, {}], "dilation": [{}, {}], "groups": {}, "activation": "relu"}}}})",
                    sh, sw, ph, pw, dh, dw, g));
  }
  {
    // Depthwise: one group per input channel, a channel multiplier of 1 or 2, no bias.
    const int64_t n = pick(2, 4), c = odd(3, 33), mult = pick(1, 2), h = odd(21, 81), w = odd(21, 81), ks = odd(3, 5);
    const int64_t s = pick(1, 2), p = ks / 2;
    expect_correct(
        "conv2d_depthwise",
        fmt::format("Conv2d({}, {}, {}, stride {}, padding {}, groups {}, no bias) of x [{}, {}, {}, {}]", c, c * mult,
                    ks, s, p, c, n, c, h, w),
        problem("x",
                fmt::format("self.conv = torch.nn.Conv2d({}, {}, {}, stride={}, padding={}, groups={}, bias=False)", c,
                            c * mult, ks, s, p, c),
                "self.conv(x)", fmt::format("torch.randn({}, {}, {}, {})", n, c, h, w)),
        fmt::format(
            R"({{"conv": {{"x": "x", "w": "conv_weight", "y": "out", "stride": {}, "padding": {}, "groups": {}}}}})", s,
            p, c));
  }
  {
    const int64_t n = pick(1, 3), ci = odd(3, 7), co = odd(3, 9), d = odd(9, 17), h = odd(11, 25), w = odd(11, 25);
    const int64_t dd = pick(1, 2), pd = pick(0, 1), sh = pick(1, 2);
    expect_correct(
        "conv3d",
        fmt::format("Conv3d({}, {}, (3, 3, 5), stride (1, {}, 2), padding ({}, 1, 2), dilation ({}, 1, 1)) + bias "
                    "of x [{}, {}, {}, {}, {}]",
                    ci, co, sh, pd, dd, n, ci, d, h, w),
        problem("x",
                fmt::format("self.conv = torch.nn.Conv3d({}, {}, (3, 3, 5), stride=(1, {}, 2), padding=({}, 1, 2), "
                            "dilation=({}, 1, 1))",
                            ci, co, sh, pd, dd),
                "self.conv(x)", fmt::format("torch.randn({}, {}, {}, {}, {})", n, ci, d, h, w)),
        fmt::format(R"({{"conv": {{"x": "x", "w": "conv_weight", "y": "out", "bias": "conv_bias",
                                   "stride": [1, {}, 2], "padding": [{}, 1, 2], "dilation": [{}, 1, 1]}}}})",
                    sh, pd, dd));
  }
}

TEST_F(LibraryStepsVsPyTorch, TransposedConvolutionWithOutputPaddingAndGroups) {
  KAGENT_SKIP_WITHOUT_CUDNN();
  const int64_t g = pick(2, 3), n = pick(2, 4), ci = g * odd(3, 5), co = g * odd(1, 5), h = odd(9, 31), w = odd(9, 31);
  const int64_t kh = odd(3, 5), kw = pick(2, 4), sh = 2, sw = 3, ph = pick(0, 1), pw = pick(0, 2), oph = 1,
                opw = pick(0, 2);
  expect_correct(
      "conv_transpose2d",
      fmt::format("ConvTranspose2d({}, {}, ({}, {}), stride ({}, {}), padding ({}, {}), output_padding ({}, {}), "
                  "groups {}) + bias of x [{}, {}, {}, {}]",
                  ci, co, kh, kw, sh, sw, ph, pw, oph, opw, g, n, ci, h, w),
      problem("x",
              fmt::format("self.conv_t = torch.nn.ConvTranspose2d({}, {}, ({}, {}), stride=({}, {}), padding=({}, {}), "
                          "output_padding=({}, {}), groups={})",
                          ci, co, kh, kw, sh, sw, ph, pw, oph, opw, g),
              "self.conv_t(x)", fmt::format("torch.randn({}, {}, {}, {})", n, ci, h, w)),
      fmt::format(R"({{"conv": {{"x": "x", "w": "conv_t_weight", "y": "out", "bias": "conv_t_bias", "transposed": true,
                                 "stride": [{}, {}], "padding": [{}, {}], "output_padding": [{}, {}], "groups": {}}}}})",
                  sh, sw, ph, pw, oph, opw, g));
}

namespace {

// out = x + 128, as 128 launches of a one-line kernel: the first writes out = x + 1, the others
// add 1 in place. The reference adds 1 a hundred and twenty-eight times too, so the two round alike
// and agree exactly. 4096 elements: each launch is a few microseconds of launch overhead and
// almost no work.
constexpr int kLaunches = 128;

std::string chain_plan(bool graph) {
  std::string launches;
  for (int i = 0; i < kLaunches; ++i)
    launches += fmt::format(R"~({}    {{"kernel": "add_one", "grid": ["cdiv(numel(out), 256)"], "block": [256], )~"
                            R"~("args": ["{}", "out", "i64:numel(out)"]}})~",
                            i ? ",\n" : "", i ? "out" : "x");
  return fmt::format(R"~(/*kagent
{{"graph": {},
 "launch": [
{}
]}}
*/
extern "C" __global__ void add_one(const float* x, float* out, long long n) {{
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + 1.0f;
}}
)~",
                     graph ? "true" : "false", launches);
}

constexpr const char* kChainOp = R"({
  "name": "add_128",
  "reference": {"cuda": "ref.cu"},
  "inputs":  {"x": {"shape": [4096], "dtype": "f32", "init": "randn"}},
  "outputs": {"out": {"shape": [4096], "dtype": "f32"}}
})";

constexpr const char* kChainRef = R"~(/*kagent
{"launch": [{"kernel": "add_128", "grid": ["cdiv(numel(out), 256)"], "block": [256], "args": ["x", "out", "i64:numel(out)"]}]}
*/
extern "C" __global__ void add_128(const float* x, float* out, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  for (int k = 0; k < 128; ++k) v += 1.0f;
  out[i] = v;
}
)~";

class LibraryStepsGraphReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    EvalOptions opts;
    opts.runner_path = (test::binary_dir() / "kagent-runner").string();
    opts.timeout = 300s;
    ev = std::make_unique<Evaluator>(opts, std::make_shared<CompileCache>(dir.path() / "cache"));
  }
  test::TempDir dir;
  std::unique_ptr<Evaluator> ev;
};

}  // namespace

TEST_F(LibraryStepsGraphReplay, HundredTwentyEightTinyLaunchesAreNotSlowerReplayed) {
  dir.write("op/ref.cu", kChainRef);
  Op op = load_op(dir.write("op/op.json", kChainOp));
  double median[2] = {0, 0};
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "graph" : "eager");
    EvalReport r = ev->evaluate(op, load_candidate(dir.write(graph ? "graph.cu" : "eager.cu", chain_plan(graph))));
    ASSERT_TRUE(r.compile.ok) << r.compile.log;
    EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
    ASSERT_TRUE(r.outcome.candidate_time.has_value());
    median[graph ? 1 : 0] = r.outcome.candidate_time->median_ms;
  }
  const double eager = median[0], graph = median[1];
  fmt::print(
      "{} tiny launches: eager {:.4f} ms ({:.2f} us a launch), graph replay {:.4f} ms ({:.2f} us a launch), "
      "graph / eager {:.3f}\n",
      kLaunches, eager, eager * 1000 / kLaunches, graph, graph * 1000 / kLaunches, graph / eager);
  EXPECT_LE(graph, 1.10 * eager) << "eager " << eager << " ms, graph " << graph << " ms";
}
