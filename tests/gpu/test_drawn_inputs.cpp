// The random numbers a reference draws inside forward become inputs (tools/kagent_ref/draws.py):
// the reference server names them with their meaning on KernelBench's three problems that draw
// (level2/66 and level2/83: nn.Dropout in training mode; level3/35: torch.randn for h0 and c0)
// and `kagent ref` shows them; our native solutions of the three (examples/kernelbench_library)
// are correct; a ModelNew solution of level2/66 that runs torch's own dropout is correct and one
// that draws otherwise is not, with a message that says why; a problem that draws nothing is
// unchanged. Needs a GPU, python3 with torch and the KernelBench problems; skips with the reason
// otherwise.
#include <gtest/gtest.h>

#include <set>

#include "gpu_test.hpp"
#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

constexpr const char* kDropout = "level2/66_Matmul_Dropout_Softmax.py";
constexpr const char* kConvDropout = "level2/83_Conv3d_GroupNorm_Min_Clamp_Dropout.py";
constexpr const char* kLstm = "level3/35_LSTM.py";

// A problem that draws nothing: its signature and trials are what they were before draws existed.
constexpr const char* kNoDraws = R"~(import torch
class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(64, 64)
    def forward(self, x):
        return torch.relu(self.proj(x))
def get_inputs():
    return [torch.randn(8, 64)]
def get_init_inputs():
    return []
)~";

const fs::path kModelNewFixtures = fs::path(KAGENT_SOURCE_DIR_DEFAULT) / "tests" / "gpu" / "modelnew";

class DrawnInputs : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    std::string why;
    if (!test::torch_with_gpu(&why)) GTEST_SKIP() << why;
    for (const char* p : {kDropout, kConvDropout, kLstm})
      if (!fs::exists(test::kernelbench_dir() / p))
        GTEST_SKIP() << "no KernelBench problems at " << test::kernelbench_dir() << " (KAGENT_KERNELBENCH_DIR)";
    opts.runner_path = (test::binary_dir() / "kagent-runner").string();
    opts.timeout = 600s;
    opts.timing = false;  // correctness is the point; tiers are benchmarks/run_on_gpu.sh's
    opts.trials = 2;
    cache = std::make_shared<CompileCache>(dir.path() / "cache");
  }
  Evaluator& ev() {
    if (!ev_) ev_ = std::make_unique<Evaluator>(opts, cache);
    return *ev_;
  }
  static Op problem(const std::string& rel) { return load_op(test::kernelbench_dir() / rel); }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }
  static std::set<std::string> trial_names(const nlohmann::json& trial) {
    std::set<std::string> names;
    for (const auto& t : trial.at("tensors")) names.insert(t.at("name").get<std::string>());
    return names;
  }

  test::TempDir dir;
  std::shared_ptr<CompileCache> cache;
  EvalOptions opts;
  std::unique_ptr<Evaluator> ev_;
};

}  // namespace

// (a) The reference server: each draw named, shaped and explained; every trial carries it among
// the tensors and says which generator state its forward started from.
TEST_F(DrawnInputs, ServerNamesTheDrawsOfTheThreeProblems) {
  {
    Op op = problem(kDropout);
    RefServer server(0, op.reference);
    RefSignature s = server.load(op, Precision::fp32, 1);
    ASSERT_EQ(s.inputs.size(), 1u);
    EXPECT_EQ(s.inputs[0].name, "x");
    ASSERT_EQ(s.draws.size(), 1u);
    EXPECT_EQ(s.draws[0].name, "dropout_mult");
    EXPECT_EQ(s.draws[0].shape, (std::vector<int64_t>{128, 16384}));
    EXPECT_EQ(s.draws[0].dtype, DType::f32);
    EXPECT_TRUE(has(s.draws[0].drawn, "drawn by nn.Dropout(p=0.2) in forward, call 1")) << s.draws[0].drawn;
    EXPECT_TRUE(has(s.draws[0].drawn, "1/(1-p) = 1.25")) << s.draws[0].drawn;
    nlohmann::json t1 = server.trial(7);
    EXPECT_TRUE(trial_names(t1).count("dropout_mult")) << t1.dump();
    ASSERT_TRUE(t1.contains("draws")) << t1.dump();
    EXPECT_TRUE(t1["draws"].contains("seed"));
    EXPECT_NE(t1["draws"]["seed"].get<uint64_t>(), 7u) << "the trial's seed stays unknown";
    EXPECT_TRUE(t1["draws"]["rng_after"].contains("cuda"));
    EXPECT_FALSE(t1.contains("fp64_note")) << "the fp64 twin replays the draws: " << t1.dump();
    nlohmann::json t2 = server.trial(8);
    EXPECT_NE(t1["draws"]["seed"], t2["draws"]["seed"]) << "fresh draws each trial";
  }
  {
    Op op = problem(kConvDropout);
    RefServer server(0, op.reference);
    RefSignature s = server.load(op, Precision::fp32, 1);
    ASSERT_EQ(s.draws.size(), 1u);
    EXPECT_EQ(s.draws[0].name, "dropout_mult");
    EXPECT_EQ(s.draws[0].shape, (std::vector<int64_t>{128, 16, 14, 62, 62}));
    EXPECT_TRUE(has(s.draws[0].drawn, "nn.Dropout(p=0.2)")) << s.draws[0].drawn;
  }
  {
    Op op = problem(kLstm);
    RefServer server(0, op.reference);
    RefSignature s = server.load(op, Precision::fp32, 1);
    ASSERT_EQ(s.draws.size(), 2u);
    EXPECT_EQ(s.draws[0].name, "h0");
    EXPECT_EQ(s.draws[1].name, "c0");
    EXPECT_EQ(s.draws[0].shape, (std::vector<int64_t>{6, 10, 256}));
    EXPECT_TRUE(has(s.draws[0].drawn, "drawn by torch.randn in forward, call 1")) << s.draws[0].drawn;
    EXPECT_TRUE(has(s.draws[0].drawn, "forward uses them as h0")) << s.draws[0].drawn;
    EXPECT_TRUE(has(s.draws[1].drawn, "call 2")) << s.draws[1].drawn;
    nlohmann::json t = server.trial(3);
    EXPECT_TRUE(trial_names(t).count("h0") && trial_names(t).count("c0")) << t.dump();
  }
}

// (a) `kagent ref` shows the drawn inputs with their meaning, in the table and as JSON.
TEST_F(DrawnInputs, KagentRefShowsTheDrawnInputs) {
  const std::string kagent = (test::binary_dir() / "kagent").string();
  const std::string p = (test::kernelbench_dir() / kLstm).string();
  const std::string env = "KAGENT_CACHE_DIR=" + (dir.path() / "cache").string();
  auto text = run_capture({"env", env, kagent, "ref", p}, 900s);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_TRUE(has(text.output, "drawn input")) << text.output;
  EXPECT_TRUE(has(text.output, "drawn input h0: drawn by torch.randn in forward, call 1")) << text.output;
  EXPECT_TRUE(has(text.output, "drawn input c0: drawn by torch.randn in forward, call 2")) << text.output;
  auto json = run_capture({"env", env, kagent, "ref", p, "--json"}, 900s);
  ASSERT_EQ(json.exit_code, 0) << json.output;
  // stdout and stderr come together: the JSON document is from its first '{' to its last '}'.
  const size_t begin = json.output.find('{'), end = json.output.rfind('}');
  ASSERT_TRUE(begin != std::string::npos && end != std::string::npos) << json.output;
  nlohmann::json j = nlohmann::json::parse(json.output.substr(begin, end - begin + 1));
  ASSERT_EQ(j.at("draws").size(), 2u) << j.dump();
  EXPECT_EQ(j["draws"][0]["name"], "h0");
  EXPECT_TRUE(has(j["draws"][0]["meaning"].get<std::string>(), "torch.randn"));
}

// (b) Our native solutions read the draws as inputs and are correct.
TEST_F(DrawnInputs, NativeSolutionsOfTheThreeAreCorrect) {
  KAGENT_SKIP_WITHOUT_CUBLASLT();
  KAGENT_SKIP_WITHOUT_CUDNN();
  for (const char* rel : {kDropout, kConvDropout, kLstm}) {
    SCOPED_TRACE(rel);
    const fs::path cand = test::examples_dir() / "kernelbench_library" / fs::path(rel).replace_extension(".cu");
    EvalReport r = ev().evaluate(problem(rel), load_candidate(cand));
    ASSERT_TRUE(r.compile.ok) << r.compile.log;
    EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
    EXPECT_EQ(r.outcome.trials_run, 2);
    if (std::string(rel) != kLstm) {
      // The fp64 twin replays the draws: no note, or the one saying the reference turned out exact
      // (its twins equal to its outputs, so later trials leave them out).
      EXPECT_TRUE(r.outcome.fp64_note.empty() || has(r.outcome.fp64_note, "exact at its precision"))
          << r.outcome.fp64_note;
    }
  }
}

// (c) A ModelNew solution calling torch's dropout draws the reference's mask; one that draws its
// own fails, and the message says that the reference draws and the solution drew otherwise.
TEST_F(DrawnInputs, ModelNewWithTorchsDropoutIsCorrectAndOtherDrawsAreNot) {
  const Op op = problem(kDropout);
  EvalReport good = ev().evaluate(op, load_candidate(kModelNewFixtures / "dropout_torch.py"));
  ASSERT_TRUE(good.compile.ok) << good.compile.log;
  EXPECT_TRUE(good.outcome.correct) << failure_stage_name(good.outcome.failure_stage) << ": " << good.outcome.message;

  EvalReport bad = ev().evaluate(op, load_candidate(kModelNewFixtures / "dropout_other_draws.py"));
  ASSERT_TRUE(bad.compile.ok) << bad.compile.log;
  EXPECT_FALSE(bad.outcome.correct);
  EXPECT_EQ(bad.outcome.failure_stage, FailureStage::correctness) << bad.outcome.message;
  EXPECT_TRUE(has(bad.outcome.message, "the reference draws random numbers in forward: dropout_mult"))
      << bad.outcome.message;
  EXPECT_TRUE(has(bad.outcome.message, "the same ops on the same shapes, in the same order")) << bad.outcome.message;
}

// (d) A problem that draws nothing: no draws in the signature, none among a trial's tensors, no
// generator state in the trial's reply.
TEST_F(DrawnInputs, ProblemWithoutDrawsIsUnchanged) {
  Op op = load_op(dir.write("no_draws.py", kNoDraws));
  RefServer server(0, op.reference);
  RefSignature s = server.load(op, Precision::fp32, 1);
  EXPECT_TRUE(s.draws.empty());
  nlohmann::json t = server.trial(5);
  EXPECT_FALSE(t.contains("draws")) << t.dump();
  EXPECT_EQ(trial_names(t), (std::set<std::string>{"x", "proj_weight", "proj_bias", "out", "out@f64"})) << t.dump();
}
