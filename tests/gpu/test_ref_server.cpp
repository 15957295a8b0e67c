// The Python reference server against real problem files: signature names per docs/candidate.md,
// scalars, problems that print, problem errors with the traceback's tail, the degenerate flag,
// eager and torch.compile baselines and their cache. Needs python3 with torch and a GPU; skips
// with the reason otherwise.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>

#include "kagent/common/error.hpp"
#include "kagent/compile/cache.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

constexpr const char* kScaledAdd = R"~(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.proj = nn.Linear(dim, dim)
        print("a problem file that prints must not break the protocol")

    def forward(self, x, y, alpha: float):
        return self.proj(x) + alpha * y, x.sum(dim=1)

def get_inputs():
    return [torch.randn(8, 64), torch.randn(8, 64), 0.5]

def get_init_inputs():
    return [64]
)~";

class RefServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto r = run_capture({"python3", "-c", "import torch; assert torch.cuda.is_available()"}, 120s);
    if (!r.started || r.exit_code != 0) GTEST_SKIP() << "python3 with torch and a GPU is needed: " << r.output;
  }
  Op op_for(const std::string& source) { return load_op(dir.write("problem_" + std::to_string(n_++) + ".py", source)); }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

  test::TempDir dir;
  int n_ = 0;
};

}  // namespace

TEST_F(RefServerTest, SignatureFollowsCandidateNaming) {
  Op op = op_for(kScaledAdd);
  RefServer server(0, op.reference);
  RefSignature s = server.load(op, Precision::fp32, 1);
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_EQ(s.inputs[0].name, "x");
  EXPECT_EQ(s.inputs[1].name, "y");
  EXPECT_EQ(s.inputs[0].shape, (std::vector<int64_t>{8, 64}));
  ASSERT_EQ(s.scalars.size(), 1u);
  EXPECT_EQ(s.scalars[0].name, "alpha");
  EXPECT_EQ(s.scalars[0].value.get<double>(), 0.5);
  ASSERT_EQ(s.params.size(), 2u);
  EXPECT_EQ(s.params[0].name, "proj_weight");
  EXPECT_EQ(s.params[1].name, "proj_bias");
  ASSERT_EQ(s.outputs.size(), 2u);
  EXPECT_EQ(s.outputs[0].name, "out0");
  EXPECT_EQ(s.outputs[1].name, "out1");
  EXPECT_EQ(s.outputs[1].shape, (std::vector<int64_t>{8}));
  EXPECT_FALSE(s.degenerate.has_value());
}

// What forward never reads is marked unread (level3/50's c_proj, a layer built and never called; an
// input it ignores), and only that: a parameter read through a view (weight.t()) is read.
TEST_F(RefServerTest, TensorsForwardNeverReadsAreMarkedUnread) {
  Op op = op_for(R"~(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.used = nn.Linear(dim, dim)
        self.c_proj = nn.Linear(dim, dim)
        self.w = nn.Parameter(torch.randn(dim, dim))

    def forward(self, x, ignored):
        return self.used(x) @ self.w.t()

def get_inputs():
    return [torch.randn(8, 16), torch.randn(8, 16)]

def get_init_inputs():
    return [16]
)~");
  RefServer server(0, op.reference);
  RefSignature s = server.load(op, Precision::fp32, 1);
  ASSERT_EQ(s.inputs.size(), 2u);
  EXPECT_FALSE(s.inputs[0].unread) << "x";
  EXPECT_TRUE(s.inputs[1].unread) << "ignored";
  std::map<std::string, bool> unread;
  for (const auto& p : s.params) unread[p.name] = p.unread;
  EXPECT_FALSE(unread.at("used_weight"));
  EXPECT_FALSE(unread.at("used_bias"));
  EXPECT_FALSE(unread.at("w"));
  EXPECT_TRUE(unread.at("c_proj_weight"));
  EXPECT_TRUE(unread.at("c_proj_bias"));
}

// fp32 pins the reference (and the baselines) to IEEE fp32; tf32 keeps fp32 tensors with TF32 on.
// Every trial carries the floating outputs' fp64 twins, sized for numel doubles.
TEST_F(RefServerTest, PrecisionSetsTheNumericsAndTrialsCarryFp64Twins) {
  Op op = op_for(kScaledAdd);
  RefServer server(0, op.reference);
  RefSignature fp32 = server.load(op, Precision::fp32, 1);
  EXPECT_FALSE(fp32.allow_tf32);
  ASSERT_EQ(fp32.output_stats.size(), 2u);
  EXPECT_EQ(fp32.output_stats[0].numel, 8u * 64u);
  EXPECT_LT(fp32.output_stats[0].zero_share, 0.5);
  nlohmann::json trial = server.trial(7);
  ASSERT_TRUE(trial.contains("tensors")) << trial.dump();
  EXPECT_FALSE(trial.contains("fp64_note")) << trial.dump();
  std::map<std::string, uint64_t> bytes;
  for (const auto& t : trial["tensors"]) bytes[t["name"].get<std::string>()] = t["bytes"].get<uint64_t>();
  EXPECT_EQ(bytes["out0@f64"], 8u * 64u * 8u);
  EXPECT_EQ(bytes["out1@f64"], 8u * 8u);
  EXPECT_EQ(bytes["out0"], 8u * 64u * 4u);

  RefSignature tf32 = server.load(op, Precision::tf32, 1);
  EXPECT_TRUE(tf32.allow_tf32);
  EXPECT_EQ(tf32.inputs[0].dtype, DType::f32) << "tf32 is a precision for fp32 tensors";
  EXPECT_EQ(tf32.params[0].dtype, DType::f32);
}

// A reference exact at its precision (ReLU: no rounding) has twins equal to its outputs: after one
// trial shows it on a large output, later trials make none and say why. One that rounds keeps them.
TEST_F(RefServerTest, AnExactReferenceStopsMakingFp64TwinsAfterATrialShowsIt) {
  auto trial_has_twin = [](const nlohmann::json& t) {
    for (const auto& x : t["tensors"])
      if (x["name"] == "out@f64") return true;
    return false;
  };
  Op relu = op_for(R"~(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return torch.relu(x)
def get_inputs():
    return [torch.randn(1024, 2048)]
def get_init_inputs():
    return []
)~");
  RefServer server(0, relu.reference);
  server.load(relu, Precision::fp32, 1);
  nlohmann::json first = server.trial(7);
  EXPECT_TRUE(trial_has_twin(first)) << first.dump();
  nlohmann::json second = server.trial(8);
  EXPECT_FALSE(trial_has_twin(second)) << second.dump();
  EXPECT_NE(second.value("fp64_note", "").find("exact at its precision"), std::string::npos) << second.dump();

  Op scaled = op_for(R"~(import torch
class Model(torch.nn.Module):
    def forward(self, x):
        return x * 1.1
def get_inputs():
    return [torch.randn(1024, 2048)]
def get_init_inputs():
    return []
)~");
  RefServer rounding(0, scaled.reference);
  rounding.load(scaled, Precision::fp32, 1);
  EXPECT_TRUE(trial_has_twin(rounding.trial(7)));
  EXPECT_TRUE(trial_has_twin(rounding.trial(8))) << "x * 1.1 rounds: its twins differ from its outputs";
}

TEST_F(RefServerTest, PrecisionCastsFloatingTensors) {
  Op op = op_for(kScaledAdd);
  RefServer server(0, op.reference);
  RefSignature s = server.load(op, Precision::bf16, 1);
  EXPECT_EQ(s.inputs[0].dtype, DType::bf16);
  EXPECT_EQ(s.params[0].dtype, DType::bf16);
  EXPECT_EQ(s.outputs[0].dtype, DType::bf16);
}

TEST_F(RefServerTest, ProblemErrorsComeBackWithTheTraceback) {
  // One server per problem file: each broken problem ends only its own server.
  Op syntax = op_for(
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x)\n        return x\n"
      "def get_inputs():\n    return []\ndef get_init_inputs():\n    return []\n");
  try {
    RefServer server(0, syntax.reference);
    server.load(syntax, Precision::fp32, 1);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "SyntaxError")) << e.what();
  }
  Op raises = op_for(
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
      "def get_inputs():\n    raise RuntimeError('broken inputs')\ndef get_init_inputs():\n    return []\n");
  RefServer server(0, raises.reference);
  try {
    server.load(raises, Precision::fp32, 1);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "broken inputs")) << e.what();
    EXPECT_TRUE(has(e.what(), "get_inputs")) << "the traceback names the function\n" << e.what();
  }
  // The server survived and still answers.
  try {
    server.load(raises, Precision::fp32, 2);
    FAIL() << "expected InputError again";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "broken inputs")) << e.what();
  }
}

TEST_F(RefServerTest, DegenerateReferenceIsFlagged) {
  Op op = op_for(
      "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n"
      "        return x * 0\ndef get_inputs():\n    return [torch.randn(16)]\n"
      "def get_init_inputs():\n    return []\n");
  RefServer server(0, op.reference);
  RefSignature s = server.load(op, Precision::fp32, 1);
  ASSERT_TRUE(s.degenerate.has_value());
  EXPECT_TRUE(has(*s.degenerate, "zero")) << *s.degenerate;
}

TEST_F(RefServerTest, BaselinesAreTimedThenCached) {
  test::ScopedEnv cache("KAGENT_CACHE_DIR", (dir / "cache").string().c_str());
  Op op = op_for(kScaledAdd);
  {
    RefServer server(0, op.reference);
    server.load(op, Precision::fp32, 1);
    RefBaselines b = server.baselines(false, StopRule{});
    EXPECT_FALSE(b.cached);
    EXPECT_GT(b.eager.median_ms, 0);
    EXPECT_GE(b.eager.n, 20);
    EXPECT_TRUE(b.compile.has_value()) << b.compile_error;
  }
  RefServer again(0, op.reference);
  again.load(op, Precision::fp32, 2);
  RefBaselines cached = again.baselines(false, StopRule{});
  EXPECT_TRUE(cached.cached);
  EXPECT_FALSE(again.baselines(true, StopRule{}).cached) << "--refresh re-measures";
}

// The reference's library calls timed alone (tools/kagent_ref/library_times.py): a convolution
// (cuDNN, at PyTorch's algorithm and the fastest one), a linear layer's GEMM called twice with the
// same arguments (one row, two calls) and a matmul on a transposed operand, each operand's layout
// said (strides where it is not packed row-major); elementwise work is not listed; a second server reads the cache; the
// spare path keeps it in the problem's cache.
TEST_F(RefServerTest, LibraryCallsAreTimedAloneThenCached) {
  test::ScopedEnv cache("KAGENT_CACHE_DIR", (dir / "cache").string().c_str());
  Op op = op_for(R"~(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(256, 256)

    def forward(self, x, a, b):
        y = torch.relu(self.conv(x))
        h = self.fc(self.fc(a))
        return y, h, a @ b.t()

def get_inputs():
    return [torch.randn(8, 16, 64, 64), torch.randn(128, 256), torch.randn(512, 256)]

def get_init_inputs():
    return []
)~");
  RefLibraryTimes t;
  {
    RefServer server(0, op.reference);
    server.load(op, Precision::fp32, 1);
    t = server.library_times(false);
  }
  EXPECT_FALSE(t.cached);
  EXPECT_TRUE(t.note.empty()) << t.note;
  std::map<std::string, RefLibraryCall> by_op;
  for (const auto& c : t.calls) {
    EXPECT_TRUE(c.median_ms && *c.median_ms > 0) << c.op << " " << c.args;
    EXPECT_EQ(c.kind == "conv", c.fastest_ms.has_value()) << c.op;
    by_op[c.op] = c;
  }
  ASSERT_EQ(by_op.count("aten.convolution"), 1u) << nlohmann::json(t).dump(1);
  EXPECT_EQ(by_op["aten.convolution"].library, "cuDNN");
  EXPECT_TRUE(has(by_op["aten.convolution"].args, "input [8, 16, 64, 64] float32")) << by_op["aten.convolution"].args;
  EXPECT_TRUE(has(by_op["aten.convolution"].args, "padding [1, 1]")) << by_op["aten.convolution"].args;
  ASSERT_EQ(by_op.count("aten.addmm"), 1u) << nlohmann::json(t).dump(1);
  EXPECT_EQ(by_op["aten.addmm"].calls, 2) << "fc twice with the same shapes: one row, two calls";
  EXPECT_EQ(by_op["aten.addmm"].library, "cuBLAS");
  // nn.Linear's weight is passed transposed too (weight.t()): its layout is part of the call.
  EXPECT_TRUE(has(by_op["aten.addmm"].args, "mat2 [256, 256] float32 strides (1, 256)")) << by_op["aten.addmm"].args;
  ASSERT_EQ(by_op.count("aten.mm"), 1u) << nlohmann::json(t).dump(1);
  EXPECT_TRUE(has(by_op["aten.mm"].args, "mat2 [256, 512] float32 strides (1, 256)")) << by_op["aten.mm"].args;
  EXPECT_EQ(t.calls.size(), 3u) << "relu is not a library call: " << nlohmann::json(t).dump(1);
  double sum = 0;
  for (const auto& c : t.calls) sum += *c.median_ms * c.calls;
  EXPECT_NEAR(t.total_ms, sum, 1e-9);

  RefServer again(0, op.reference);
  again.load(op, Precision::fp32, 2);
  EXPECT_TRUE(again.library_times(false).cached);

  // A spare measures into its own folder; the problem's cache keeps the result.
  test::ScopedEnv other("KAGENT_CACHE_DIR", (dir / "cache2").string().c_str());
  {
    auto spare = RefServer::spare(0);
    spare->adopt(op.reference);
    spare->load(op, Precision::fp32, 3);
    EXPECT_FALSE(spare->library_times(false).cached);
  }
  RefServer third(0, op.reference);
  third.load(op, Precision::fp32, 4);
  EXPECT_TRUE(third.library_times(false).cached) << "the spare's measurement reached the problem's cache";
}

// kagent's own plan step for each of the reference's GEMMs and convolutions, timed by the runner on
// buffers of the call's shapes: the plan Python wrote parses and runs (nn.Linear's addmm as trans_b with
// the bias epilogue, mm with a transposed operand, a convolution with its bias), the times are near
// PyTorch's for the same call, a plan the step refuses is that call's error only, and a second
// evaluator reads the times from the cache.
TEST_F(RefServerTest, KagentsOwnStepsAreTimedForTheReferencesCalls) {
  test::ScopedEnv env("KAGENT_CACHE_DIR", (dir / "cache").string().c_str());
  Op op = op_for(R"~(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(64, 128, 3, padding=1)
        self.fc = nn.Linear(2048, 2048)

    def forward(self, x, a, b):
        return torch.relu(self.conv(x)), self.fc(a), a @ b.t()

def get_inputs():
    return [torch.randn(16, 64, 128, 128), torch.randn(2048, 2048), torch.randn(1024, 2048)]

def get_init_inputs():
    return []
)~");
  RefLibraryTimes t;
  {
    RefServer server(0, op.reference);
    server.load(op, Precision::fp32, 1);
    t = server.library_times(false);
  }
  ASSERT_EQ(t.calls.size(), 3u) << nlohmann::json(t).dump(1);
  for (const auto& c : t.calls) EXPECT_TRUE(c.plan.is_object()) << c.op << ": " << c.plan_note;
  // A plan that reads past its buffer: refused by the step's own check, naming the key; the rest run.
  RefLibraryCall bad = t.calls[0].kind == "gemm" ? t.calls[0] : t.calls[1];
  bad.plan["launch"][0]["gemm"]["m"] = 1 << 20;
  t.calls.insert(t.calls.begin(), bad);

  EvalOptions opts;
  opts.runner_path = (test::binary_dir() / "kagent-runner").string();
  auto cache = std::make_shared<CompileCache>(dir / "compile-cache");
  Evaluator ev(opts, cache);
  ev.time_library_steps(t, false);
  EXPECT_FALSE(t.calls[0].step_ms.has_value());
  EXPECT_TRUE(has(t.calls[0].step_error, "launch[0].gemm.a")) << t.calls[0].step_error;
  for (size_t i = 1; i < t.calls.size(); ++i) {
    const RefLibraryCall& c = t.calls[i];
    ASSERT_TRUE(c.step_ms && *c.step_ms > 0) << c.op << ": " << c.step_error;
    EXPECT_TRUE(has(c.step, c.kind == "conv" ? "cuDNN" : "cuBLASLt")) << c.step;
    EXPECT_TRUE(has(c.step, "IEEE fp32") || c.kind == "conv") << c.step;
    // The same work: within a factor of 3 of PyTorch's call (the conv against its fastest engine).
    const double pytorch = std::min(*c.median_ms, c.fastest_ms.value_or(*c.median_ms));
    EXPECT_LT(*c.step_ms, 3 * pytorch) << c.op << " " << c.args << " " << c.step;
    EXPECT_GT(*c.step_ms, pytorch / 3) << c.op << " " << c.args << " " << c.step;
  }
  const std::string text = library_times_text(t, std::nullopt, 8);
  EXPECT_TRUE(has(text, "kagent's gemm step")) << text;
  EXPECT_TRUE(has(text, "kagent's conv step")) << text;

  RefLibraryTimes again = t;
  for (auto& c : again.calls) c.step_ms.reset();
  Evaluator second(opts, cache);
  second.time_library_steps(again, false);
  for (size_t i = 1; i < t.calls.size(); ++i) EXPECT_EQ(again.calls[i].step_ms, t.calls[i].step_ms) << "cached";
}
