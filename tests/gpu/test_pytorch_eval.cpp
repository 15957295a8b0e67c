// Candidates against PyTorch references (KernelBench problem files): the reference server makes
// each trial's tensors and the runner imports them by CUDA IPC. Our own solutions in
// examples/kernelbench are correct and get a tier; a wrong solution fails; errors in a problem
// file are reported; a 6 GB problem runs without a host copy of its tensors. Needs a GPU, python3
// with torch and the KernelBench problems; skips with the reason otherwise.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include <fmt/format.h>

#include "gpu_test.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/baselines_file.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

// out = relu(x) on a small randn input: fast, and negative values make ReLU non-trivial.
// A 512x512x512 fp32 GEMM: the precision rule's tests round its operands to TF32.
constexpr const char* kMatmul512 = R"~(import torch
class Model(torch.nn.Module):
    def forward(self, A, B):
        return torch.matmul(A, B)
def get_inputs():
    return [torch.rand(512, 512), torch.rand(512, 512)]
def get_init_inputs():
    return []
)~";

constexpr const char* kSmallRelu = R"~(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(1000, 1001)]
def get_init_inputs():
    return []
)~";

constexpr const char* kSmallReluCandidate = R"~(/*kagent
{"launch": [{"kernel": "relu", "grid": ["cdiv(numel(x), 256)"], "block": [256], "args": ["x", "out", "i64:numel(x)"]}]}
*/
extern "C" __global__ void relu(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i], 0.0f);
}
)~";

// Peak resident host memory of a process, from /proc (VmHWM), in bytes; -1 when unreadable.
int64_t peak_rss(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return -1;
}

class PyTorchEval : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    std::string why;
    if (!test::torch_with_gpu(&why)) GTEST_SKIP() << why;
    opts.runner_path = (test::binary_dir() / "kagent-runner").string();
    opts.timeout = 300s;
    cache = std::make_shared<CompileCache>(dir.path() / "cache");
  }
  Evaluator& ev() {
    if (!ev_) ev_ = std::make_unique<Evaluator>(opts, cache);
    return *ev_;
  }
  fs::path problem(const std::string& rel) {
    fs::path p = test::kernelbench_dir() / rel;
    if (!fs::exists(p)) throw std::runtime_error("KernelBench problem not found: " + p.string());
    return p;
  }
  // Tests of KernelBench's own files skip, with where they looked, on a machine without them.
  static bool have_kernelbench(const std::string& rel) { return fs::exists(test::kernelbench_dir() / rel); }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

  test::TempDir dir;
  std::shared_ptr<CompileCache> cache;
  EvalOptions opts;
  std::unique_ptr<Evaluator> ev_;
};

// Every examples/kernelbench/levelN/NAME.cu with its levelN/NAME.py.
std::vector<std::pair<fs::path, std::string>> fixtures() {
  std::vector<std::pair<fs::path, std::string>> out;
  for (const char* level : {"level1", "level2"}) {
    fs::path d = test::examples_dir() / "kernelbench" / level;
    for (const auto& e : fs::directory_iterator(d))
      if (e.path().extension() == ".cu")
        out.push_back({e.path(), std::string(level) + "/" + e.path().stem().string() + ".py"});
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_F(PyTorchEval, EveryFixtureIsCorrect) {
  if (!fs::exists(test::kernelbench_dir())) GTEST_SKIP() << "no KernelBench problems at " << test::kernelbench_dir();
  auto all = fixtures();
  ASSERT_GE(all.size(), 13u);
  opts.timing = false;
  opts.trials = 2;  // the timed test below runs the op's full 5
  for (const auto& [cand, rel] : all) {
    SCOPED_TRACE(rel);
    EvalReport r = ev().evaluate(load_op(problem(rel)), load_candidate(cand));
    ASSERT_TRUE(r.compile.ok) << r.compile.log;
    EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
    EXPECT_EQ(r.outcome.trials_run, 2);
    for (const auto& f : r.outcome.flags) EXPECT_NE(f.kind, FlagKind::degenerate_reference) << flag_text(f);
  }
}

TEST_F(PyTorchEval, FixtureGetsItsTierFromMeasuredBaselines) {
  test::ScopedEnv cache_dir("KAGENT_CACHE_DIR", (dir.path() / "kagent-cache").string().c_str());
  if (!have_kernelbench("level1/19_ReLU.py"))
    GTEST_SKIP() << "no KernelBench problems at " << test::kernelbench_dir() << " (KAGENT_KERNELBENCH_DIR)";
  Op op = load_op(problem("level1/19_ReLU.py"));
  EvalReport r = ev().evaluate(op, load_candidate(test::examples_dir() / "kernelbench/level1/19_ReLU.cu"));
  ASSERT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_EQ(r.outcome.trials_run, op.correctness_trials);
  ASSERT_TRUE(r.torch.has_value());
  EXPECT_FALSE(r.torch->cached);
  EXPECT_GT(r.torch->eager.median_ms, 0);
  ASSERT_TRUE(r.outcome.candidate_time.has_value());
  EXPECT_FALSE(r.outcome.reference_time.has_value()) << "the server times the reference, not the runner";
  EXPECT_GE(r.outcome.rechecks, 2) << "re-checks during timing and the final check against the server";
  // The tier is the one the reward function gives for the measured times.
  Reward expect = compute_reward(true, true, r.outcome.candidate_time->median_ms, r.baselines);
  EXPECT_EQ(r.reward.tier, expect.tier);
  EXPECT_GE(r.reward.tier, 1);
  ASSERT_TRUE(r.baselines.eager_ms.has_value());
  EXPECT_DOUBLE_EQ(*r.baselines.eager_ms, r.torch->eager.median_ms);
  if (r.torch->compile) {
    EXPECT_DOUBLE_EQ(*r.baselines.compile_ms, r.torch->compile->median_ms);
  }
  // A second evaluation on the warm server reuses the loaded problem and its baselines.
  pid_t server = ev().ref_server()->pid();
  EvalReport again = ev().evaluate(op, load_candidate(test::examples_dir() / "kernelbench/level1/19_ReLU.cu"));
  EXPECT_TRUE(again.outcome.correct) << again.outcome.message;
  EXPECT_EQ(ev().ref_server()->pid(), server);
  EXPECT_DOUBLE_EQ(again.torch->eager.median_ms, r.torch->eager.median_ms);
}

TEST_F(PyTorchEval, ProblemsStayWarmAcrossSwitchesAndStartAhead) {
  // Three problem files (a server each) in one evaluator that keeps up to four warm.
  auto warm = std::make_shared<WarmProblems>(0, WarmLimits{4, 0.5});
  opts.timing = false;
  ev().set_warm_problems(warm);
  const Candidate cand = load_candidate(dir.write("relu.cu", kSmallReluCandidate));
  const Op a = load_op(dir.write("relu_a.py", kSmallRelu)), b = load_op(dir.write("relu_b.py", kSmallRelu)),
           c = load_op(dir.write("relu_c.py", kSmallRelu));
  EvalReport r = ev().evaluate(a, cand);
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_EQ(r.problem_state, "started");
  const pid_t server_a = ev().ref_server()->pid();
  EXPECT_EQ(ev().evaluate(a, cand).problem_state, "current");
  r = ev().evaluate(b, cand);
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_EQ(r.problem_state, "started");
  r = ev().evaluate(a, cand);
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_EQ(r.problem_state, "warm") << "a switch back finds a's server up";
  EXPECT_EQ(ev().ref_server()->pid(), server_a);
  // Announced while a is evaluated: c's server, context and first run happen on a helper thread.
  ev().expect_problem(c, true);
  EXPECT_TRUE(ev().evaluate(a, cand).outcome.correct);
  r = ev().evaluate(c, cand);
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_EQ(r.problem_state, "started_ahead");
  EXPECT_EQ(warm->stats().warm, 3u);
}

TEST_F(PyTorchEval, ANewProblemTakesASpareServerStartedBeforeItWasKnown) {
  // Two problems make a mix: a spare server is started (Python, torch, the context, the libraries'
  // first kernels) before the third problem is known, and the third is served by it: right
  // verdicts, its baselines measured in the spare and cached as the problem's own, its errors
  // naming its own file.
  test::ScopedEnv cache_dir("KAGENT_CACHE_DIR", (dir.path() / "kagent-cache").string().c_str());
  auto warm = std::make_shared<WarmProblems>(0, WarmLimits{4, 0.5, 1});
  opts.timing = false;
  ev().set_warm_problems(warm);
  const Candidate cand = load_candidate(dir.write("relu.cu", kSmallReluCandidate));
  const Op a = load_op(dir.write("relu_a.py", kSmallRelu)), b = load_op(dir.write("relu_b.py", kSmallRelu)),
           c = load_op(dir.write("relu_c.py", kSmallRelu));
  EXPECT_TRUE(ev().evaluate(a, cand).outcome.correct);
  EXPECT_TRUE(ev().evaluate(b, cand).outcome.correct);
  for (int i = 0; i < 1200 && warm->stats().spares == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(warm->stats().spares, 1u) << "no spare within 120 s";
  EvalReport r = ev().evaluate(c, cand);
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_EQ(r.problem_state, "started");
  EXPECT_EQ(warm->stats().spares_used, 1);
  RefServer* server = ev().ref_server();
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->problem(), std::filesystem::absolute(c.reference));
  StopRule quick;
  quick.min_samples = 5;
  quick.min_gpu_s = 0.001;
  quick.max_wall_s = 2;
  RefBaselines measured = server->baselines(false, quick);
  EXPECT_FALSE(measured.cached);
  const auto cached = RefServer::cache_dir_for(c.reference) / "baselines" / (measured.key + ".json");
  EXPECT_TRUE(std::filesystem::exists(cached)) << cached << ": the spare's measurement is the problem's cache";
  EXPECT_TRUE(server->baselines(false, quick).cached);
  // A wrong candidate against the spare's problem still fails; a broken problem in the next spare
  // names its own file.
  const Candidate wrong = load_candidate(test::source_dir() / "tests/gpu/kernels/elementwise_skips_last.cu");
  EXPECT_FALSE(ev().evaluate(c, wrong).outcome.correct);
  for (int i = 0; i < 1200 && warm->stats().spares == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  ASSERT_EQ(warm->stats().spares, 1u) << "the spare taken is replaced";
  const auto broken =
      dir.write("broken.py",
                "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                "def get_inputs():\n    raise ValueError('broken on purpose')\n"
                "def get_init_inputs():\n    return []\n");
  try {
    ev().evaluate(load_op(broken), cand);
    ADD_FAILURE() << "a problem that raises at import is an error";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("broken on purpose"), std::string::npos) << what;
    EXPECT_EQ(what.find("spares"), std::string::npos) << "the spare's copy is named as the problem: " << what;
  }
}

TEST_F(PyTorchEval, AProblemThatDoesNotFitBesideTheIdleOnesLetsThemGo) {
  // Each problem holds 60% of the GPU's memory for as long as its model lives (a plain attribute,
  // not a parameter): two do not fit at once. The idle share is set high enough that only the
  // out-of-memory failure, not the bound, lets the first go; the verdict must not see it.
  constexpr const char* kBallast = R"~(import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        free, total = torch.cuda.mem_get_info()
        self.ballast = torch.empty(int(total * 0.6) // 4, dtype=torch.float32)
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(1000, 1001)]
def get_init_inputs():
    return []
)~";
  auto warm = std::make_shared<WarmProblems>(0, WarmLimits{4, 0.95});
  opts.timing = false;
  ev().set_warm_problems(warm);
  const Candidate cand = load_candidate(dir.write("relu.cu", kSmallReluCandidate));
  EvalReport r = ev().evaluate(load_op(dir.write("ballast_a.py", kBallast)), cand);
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  r = ev().evaluate(load_op(dir.write("ballast_b.py", kBallast)), cand);
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_FALSE(r.outcome.out_of_memory);
  EXPECT_EQ(warm->stats().warm, 1u);
  EXPECT_GE(warm->stats().evicted, 1);
}

TEST_F(PyTorchEval, WrongSolutionFailsAgainstTheServersOutputs) {
  Op op = load_op(dir.write("relu.py", kSmallRelu));
  opts.timing = false;
  EvalReport r = ev().evaluate(op, load_candidate(test::source_dir() / "tests/gpu/kernels/elementwise_skips_last.cu"));
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(failure_stage_name(r.outcome.failure_stage), "correctness");
  EXPECT_EQ(r.reward.tier, -1);
  ASSERT_TRUE(r.outcome.mismatch.has_value());
  EXPECT_EQ(r.outcome.mismatch->tensor, "out");
  EXPECT_EQ(r.outcome.mismatch->count, 1u);
  EXPECT_EQ(r.outcome.mismatch->first_index, 1000u * 1001u - 1);
  // The same problem with a correct kernel passes (the failure was the kernel's).
  EvalReport ok = ev().evaluate(op, load_candidate(dir.write("relu.cu", kSmallReluCandidate)));
  EXPECT_TRUE(ok.outcome.correct) << ok.outcome.message;
}

TEST_F(PyTorchEval, ProblemFileErrorsAreReportedWithTheTraceback) {
  Op op = load_op(dir.write("broken.py",
                            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                            "        return torch.relu(x)\ndef get_inputs():\n"
                            "    return [torch.randn(10) / 0 + undefined_name]\n"
                            "def get_init_inputs():\n    return []\n"));
  opts.timing = false;
  try {
    ev().evaluate(op, load_candidate(dir.write("relu.cu", kSmallReluCandidate)));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "NameError")) << e.what();
    EXPECT_TRUE(has(e.what(), "undefined_name")) << e.what();
    EXPECT_TRUE(has(e.what(), "get_inputs")) << "the traceback's tail names the function\n" << e.what();
  }
  // kagent and the evaluator survive: a good problem evaluates next.
  EvalReport r = ev().evaluate(load_op(dir.write("relu.py", kSmallRelu)),
                               load_candidate(dir.write("relu.cu", kSmallReluCandidate)));
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
}

TEST_F(PyTorchEval, InPlaceReferenceStillGivesTheCandidatePristineInputs) {
  // forward doubles x into a new tensor, then bumps x in place: the candidate must see x as it was.
  Op op = load_op(dir.write("inplace.py",
                            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
                            "        y = x * 2\n        x.add_(1)\n        return y\n"
                            "def get_inputs():\n    return [torch.randn(4096)]\n"
                            "def get_init_inputs():\n    return []\n"));
  opts.timing = false;
  EvalReport r = ev().evaluate(op, load_candidate(dir.write("double.cu", R"~(/*kagent
{"launch": [{"kernel": "twice", "grid": [16], "block": [256], "args": ["x", "out"]}]}
*/
extern "C" __global__ void twice(const float* x, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  out[i] = 2.0f * x[i];
}
)~")));
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
}

TEST_F(PyTorchEval, SixGigabyteProblemRunsWithoutAHostCopy) {
  // 23_Softmax: x and out are 4096 x 393216 fp32, 6.4 GB each. A host copy anywhere (server or
  // runner) would show in its peak resident memory.
  if (!have_kernelbench("level1/23_Softmax.py"))
    GTEST_SKIP() << "no KernelBench problems at " << test::kernelbench_dir() << " (KAGENT_KERNELBENCH_DIR)";
  Op op = load_op(problem("level1/23_Softmax.py"));
  opts.timing = false;
  opts.trials = 2;
  EvalReport r = ev().evaluate(op, load_candidate(test::examples_dir() / "kernelbench/level1/23_Softmax.cu"));
  ASSERT_TRUE(r.outcome.correct) << r.outcome.message;
  constexpr int64_t kTensor = 4096LL * 393216 * 4;
  const int64_t server = peak_rss(ev().ref_server()->pid()), runner = peak_rss(ev().runner().pid());
  ASSERT_GT(server, 0);
  ASSERT_GT(runner, 0);
  EXPECT_LT(server, kTensor / 2) << "reference server peak RSS " << server;
  EXPECT_LT(runner, kTensor / 2) << "runner peak RSS " << runner;
  RecordProperty("server_peak_rss_mb", std::to_string(server >> 20));
  RecordProperty("runner_peak_rss_mb", std::to_string(runner >> 20));
  std::printf("peak RSS: reference server %lld MiB, runner %lld MiB (tensor %lld MiB)\n", (long long)(server >> 20),
              (long long)(runner >> 20), (long long)(kTensor >> 20));
}

// Precision fp32 pins the reference to IEEE fp32: an exact fp32 direct convolution of level1/50
// passes on its own merit (within the tolerance of the fp32 reference, not only by the fp64 rule).
// Against PyTorch's default TF32 convolution 18% of its elements were outside 1e-4.
TEST_F(PyTorchEval, ExactFp32ConvolutionPassesUnderFp32) {
  const fs::path p = test::kernelbench_dir() / "level1/50_conv_standard_2D__square_input__square_kernel.py";
  if (!fs::exists(p)) GTEST_SKIP() << "KernelBench level1/50 not found at " << p << " (KAGENT_KERNELBENCH_DIR)";
  Op op = load_op(p);
  ASSERT_EQ(op.precision, Precision::fp32);
  opts.timing = false;
  opts.trials = 2;
  EvalReport r =
      ev().evaluate(op, load_candidate(test::source_dir() / "tests/gpu/kernels/conv2d_level1_50_exact_fp32.cu"));
  ASSERT_TRUE(r.compile.ok) << r.compile.log;
  EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  const OutputErrors& e = r.outcome.errors[0];
  EXPECT_LT(e.max_abs, 1e-4) << "against the IEEE fp32 reference, not only against fp64";
  EXPECT_EQ(e.passed_by_fp64, 0u);
  if (e.ref_error_fp64) {
    EXPECT_LT(*e.ref_error_fp64, 1e-4) << "a TF32 reference would be 5e-4 to 5e-3 off";
    std::printf("level1/50: candidate max abs %.3g vs fp32, %.3g vs fp64; the reference's own %.3g\n", e.max_abs,
                e.max_abs_fp64.value_or(-1), *e.ref_error_fp64);
  }
  EXPECT_TRUE(r.outcome.fp64_note.empty()) << r.outcome.fp64_note;
}

// A candidate equal to the fp64 result passes where the fp32 reference itself is off by more than
// the tolerance; a wrong one still fails, and its report gives both errors.
TEST_F(PyTorchEval, CandidateRightAgainstFp64PassesWhereTheFp32ReferenceIsOff) {
  Op op = load_op(dir.write("cancel.py", R"~(import torch
class Model(torch.nn.Module):
    def forward(self, x, y):
        return (x + y) - y
def get_inputs():
    return [torch.randn(1 << 16) * 1e-3, torch.randn(1 << 16) * 1e4]
def get_init_inputs():
    return []
)~"));
  opts.timing = false;
  EvalReport r = ev().evaluate(op, load_candidate(test::source_dir() / "tests/gpu/kernels/cancellation_exact.cu"));
  ASSERT_TRUE(r.compile.ok) << r.compile.log;
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  const OutputErrors& e = r.outcome.errors[0];
  EXPECT_GT(e.max_abs, 1e-4) << "the fp32 reference is off by more than the tolerance";
  ASSERT_TRUE(e.max_abs_fp64.has_value()) << r.outcome.fp64_note;
  EXPECT_LT(*e.max_abs_fp64, 1e-9) << "x itself, up to fp64 rounding of (x + y) - y";
  ASSERT_TRUE(e.ref_error_fp64.has_value());
  EXPECT_GT(*e.ref_error_fp64, 1e-4);
  EXPECT_GT(e.passed_by_fp64, 0u);
  EXPECT_TRUE(has(render_report(r), "vs fp64")) << render_report(r);

  EvalReport wrong = ev().evaluate(op, load_candidate(dir.write("off.cu", R"~(/*kagent
{"launch": [{"kernel": "off", "grid": ["cdiv(numel(x), 256)"], "block": [256], "args": ["x", "out", "i64:numel(x)"]}]}
*/
extern "C" __global__ void off(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = x[i] + 0.01f;
}
)~")));
  EXPECT_FALSE(wrong.outcome.correct);
  ASSERT_TRUE(wrong.outcome.mismatch.has_value());
  ASSERT_TRUE(wrong.outcome.mismatch->max_abs_fp64.has_value());
  EXPECT_NEAR(*wrong.outcome.mismatch->max_abs_fp64, 0.01, 1e-6);
  EXPECT_TRUE(has(wrong.outcome.message, "against the fp64 reference")) << wrong.outcome.message;
}

// relu(x - 2) on randn is about 98% zeros: a kernel that writes zeros is right on those, so the
// reference is flagged weak (not degenerate), and the candidate is still judged.
TEST_F(PyTorchEval, MostlyZeroReferenceIsFlaggedWeak) {
  Op op = load_op(dir.write("relu_shift.py", R"~(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x - 2.0)
def get_inputs():
    return [torch.randn(1000, 1001)]
def get_init_inputs():
    return []
)~"));
  opts.timing = false;
  EvalReport r = ev().evaluate(op, load_candidate(dir.write("relu_shift.cu", R"~(/*kagent
{"launch": [{"kernel": "k", "grid": ["cdiv(numel(x), 256)"], "block": [256], "args": ["x", "out", "i64:numel(x)"]}]}
*/
extern "C" __global__ void k(const float* x, float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = fmaxf(x[i] - 2.0f, 0.0f);
}
)~")));
  EXPECT_TRUE(r.outcome.correct) << r.outcome.message;
  bool weak = false;
  for (const auto& f : r.outcome.flags) {
    weak = weak || (f.kind == FlagKind::weak_reference && f.subject == "out" &&
                    has(flag_text(f), "weak reference: output 'out' is 9"));
    EXPECT_NE(f.kind, FlagKind::degenerate_reference) << flag_text(f);
  }
  EXPECT_TRUE(weak) << nlohmann::json(r.outcome.flags).dump();
  ASSERT_EQ(r.outcome.errors.size(), 1u);
  EXPECT_GT(r.outcome.errors[0].zero_share, 0.95);
}

// The whole-output rules on the plan path (output_rules.hpp): a constant output fails however
// loose the tolerance; a GEMM whose operands are rounded to TF32 fails the precision rule at a
// tolerance its elements pass, and passes under --precision tf32; the same GEMM in plain fp32
// with another summation order (one thread per output, k in sequence) passes, its figures in the
// record.
TEST_F(PyTorchEval, WholeOutputRulesFailConstantsAndTf32WhateverTheTolerance) {
  Op relu = load_op(dir.write("relu.py", kSmallRelu));
  relu.tolerance = Tolerance{10, 10};
  opts.timing = false;
  opts.trials = 2;
  EvalReport constant = ev().evaluate(relu, load_candidate(dir.write("constant.cu", R"~(/*kagent
{"launch": [{"kernel": "k", "grid": ["cdiv(numel(x), 256)"], "block": [256], "args": ["out", "i64:numel(x)"]}]}
*/
extern "C" __global__ void k(float* out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f;
}
)~")));
  EXPECT_EQ(constant.outcome.failure_stage, FailureStage::correctness) << constant.outcome.message;
  EXPECT_TRUE(has(constant.outcome.message, "is the constant 0.5")) << constant.outcome.message;

  const fs::path mm = dir.write("mm.py", kMatmul512);
  // K = 512 in sequence per output; TF32 = each operand rounded to 10 mantissa bits first.
  auto gemm = [&](const char* name, bool tf32) {
    return load_candidate(dir.write(name, fmt::format(R"~(/*kagent
{{"launch": [{{"kernel": "mm", "grid": ["cdiv(numel(out), 256)"], "block": [256], "args": ["A", "B", "out"]}}]}}
*/
__device__ float operand(float x) {{
  if (!{}) return x;
  unsigned u = __float_as_uint(x);
  return __uint_as_float((u + 0x1000u) & 0xffffe000u);
}}
extern "C" __global__ void mm(const float* A, const float* B, float* out) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 512 * 512) return;
  int r = i / 512, c = i % 512;
  float acc = 0.f;
  for (int k = 0; k < 512; ++k) acc = fmaf(operand(A[r * 512 + k]), operand(B[k * 512 + c]), acc);
  out[i] = acc;
}}
)~",
                                                      tf32 ? "true" : "false")));
  };
  Op fp32 = load_op(mm);
  EvalReport honest = ev().evaluate(fp32, gemm("mm_fp32.cu", false));
  EXPECT_TRUE(honest.outcome.correct) << failure_stage_name(honest.outcome.failure_stage) << ": "
                                      << honest.outcome.message;
  ASSERT_EQ(honest.outcome.errors.size(), 1u);
  const OutputErrors& e = honest.outcome.errors[0];
  ASSERT_TRUE(e.precision_limit) << e.precision_note;
  EXPECT_LT(e.rel_l2.value_or(1), *e.precision_limit);
  std::printf("honest fp32 GEMM: relative L2 %.3g vs fp64, the reference's %.3g, limit %.3g (%s)\n",
              e.rel_l2.value_or(-1), e.ref_rel_l2_fp64.value_or(-1), *e.precision_limit, e.precision_nearest.c_str());

  Op loose = fp32;
  loose.tolerance = Tolerance{1e-2, 1e-2};
  EvalReport tf32 = ev().evaluate(loose, gemm("mm_tf32.cu", true));
  EXPECT_EQ(tf32.outcome.failure_stage, FailureStage::precision) << tf32.outcome.message;
  EXPECT_EQ(tf32.reward.tier, -1);
  EXPECT_TRUE(has(tf32.outcome.message, "lower precision than fp32")) << tf32.outcome.message;

  EvalReport allowed = ev().evaluate(with_precision(load_op(mm), Precision::tf32), gemm("mm_tf32.cu", true));
  EXPECT_TRUE(allowed.outcome.correct) << failure_stage_name(allowed.outcome.failure_stage) << ": "
                                       << allowed.outcome.message;
}

// The precision rule holds during timing too: a GEMM that computes in plain fp32 through the trials
// and rounds its operands to TF32 from its ninth call on (a counter its first launch keeps) passes
// the trials and fails at stage precision when the outputs are re-checked between timed samples, at
// a tolerance its elements pass.
TEST_F(PyTorchEval, Tf32OnlyDuringTimingFailsThePrecisionRuleAtTheRecheck) {
  Op op = load_op(dir.write("mm.py", kMatmul512));
  op.tolerance = Tolerance{1e-2, 1e-2};
  opts.trials = 2;
  EvalReport r = ev().evaluate(op, load_candidate(dir.write("mm_late_tf32.cu", R"~(/*kagent
{"launch": [{"kernel": "tick", "grid": [1], "block": [1], "args": []},
            {"kernel": "mm", "grid": ["cdiv(numel(out), 256)"], "block": [256], "args": ["A", "B", "out"]}]}
*/
__device__ unsigned calls;
extern "C" __global__ void tick() { ++calls; }
__device__ float operand(float x, bool tf32) {
  if (!tf32) return x;
  unsigned u = __float_as_uint(x);
  return __uint_as_float((u + 0x1000u) & 0xffffe000u);
}
extern "C" __global__ void mm(const float* A, const float* B, float* out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 512 * 512) return;
  const bool tf32 = calls > 8;
  int r = i / 512, c = i % 512;
  float acc = 0.f;
  for (int k = 0; k < 512; ++k) acc = fmaf(operand(A[r * 512 + k], tf32), operand(B[k * 512 + c], tf32), acc);
  out[i] = acc;
}
)~")));
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::precision) << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "lower precision than fp32")) << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "timing")) << r.outcome.message;  // said where: during or after timing
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(PyTorchEval, SharedBaselinesFileIsScoredAgainstAndAnotherMachinesRefused) {
  test::ScopedEnv cache_dir("KAGENT_CACHE_DIR", (dir.path() / "kagent-cache").string().c_str());
  const fs::path py = dir.write("relu_problem.py", kSmallRelu);
  const fs::path cu = dir.write("relu.cu", kSmallReluCandidate);
  const Op op = load_op(py);
  // The key as `kagent ref --export-baselines` writes it: from the problem's load on this GPU.
  RefSignature sig;
  {
    RefServer server(0, op.reference);
    sig = server.load(op, Precision::fp32, 1);
  }
  ASSERT_FALSE(sig.baselines_protocol.empty());
  BaselineEntry e;
  e.key = {sig.source_hash, "fp32", sig.allow_tf32, sig.gpu_name, sig.torch_version, sig.baselines_protocol};
  e.eager.median_ms = 1000;  // nothing measured here is this slow: the file's times are the ones used
  TimingSummary compile;
  compile.median_ms = 900;
  e.compile = compile;
  const fs::path file = dir.path() / "baselines.json";
  BaselinesFile::add(file, e);

  opts.baselines = std::make_shared<const BaselinesFile>(BaselinesFile::read(file));
  EvalReport r = ev().evaluate(op, load_candidate(cu));
  ASSERT_TRUE(r.outcome.correct) << r.outcome.message;
  ASSERT_TRUE(r.torch.has_value());
  EXPECT_EQ(r.torch->source, "file:" + file.string());
  EXPECT_EQ(r.torch->gpu_name, sig.gpu_name);
  ASSERT_TRUE(r.baselines.eager_ms && r.baselines.compile_ms);
  EXPECT_DOUBLE_EQ(*r.baselines.eager_ms, 1000);
  EXPECT_DOUBLE_EQ(*r.baselines.compile_ms, 900);
  EXPECT_EQ(r.reward.tier, 3);  // a ReLU of a million floats is far under 0.95 x 900 ms

  // The same entry measured on another GPU model: refused, the field and both values named.
  e.key.gpu_name = "NVIDIA H100 80GB HBM3";
  const fs::path other = dir.path() / "other.json";
  BaselinesFile::add(other, e);
  opts.baselines = std::make_shared<const BaselinesFile>(BaselinesFile::read(other));
  ev_.reset();
  try {
    ev().evaluate(op, load_candidate(cu));
    FAIL() << "another GPU model's baselines were used";
  } catch (const InputError& x) {
    EXPECT_TRUE(has(x.what(), "gpu_name: the file's 'NVIDIA H100 80GB HBM3', here '" + sig.gpu_name + "'")) << x.what();
  }
}
