// The kagent binary end to end: exit codes (0 ok, 1 failed, 2 bad input, 3 environment),
// messages that name the file, --json output, and no load-time dependency on the GPU driver.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "kagent/common/files.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

class Cli : public ::testing::Test {
 protected:
  test::TempDir tmp;

  ProcessResult kagent(std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "KAGENT_CACHE_DIR=" + (tmp / "cache").string(),
                                     (test::binary_dir() / "kagent").string()};
    args = test::optimize_anywhere(std::move(args));
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv, 300s);
  }
  static std::string example(const std::string& rel) { return (test::examples_dir() / rel).string(); }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }
};

constexpr const char* kGoodKernel = R"~(/*kagent
{"launch": [{"kernel": "add", "grid": ["cdiv(numel(out), 256)"], "block": [256],
             "args": ["a", "b", "out", "i64:numel(out)"]}]}
*/
extern "C" __global__ void add(const float* a, const float* b, float* out, long long n) {
  long long i = blockIdx.x * 256ll + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
)~";

}  // namespace

TEST_F(Cli, HelpListsSubcommands) {
  auto r = kagent({"--help"});
  EXPECT_EQ(r.exit_code, 0);
  for (const char* sub : {"compile", "eval", "doctor", "Exit codes"}) EXPECT_TRUE(has(r.output, sub)) << sub;
}

// Every subcommand's help fits 100 columns and ends with examples of that command, then the exit codes.
TEST_F(Cli, EachSubcommandsHelpIsNarrowWithExamples) {
  for (const char* sub :
       {"compile", "eval", "ref", "optimize", "bench", "report", "check", "profile", "doctor", "serve"}) {
    auto r = kagent({sub, "--help"});
    EXPECT_EQ(r.exit_code, 0) << sub;
    const std::string first = std::string("Examples:\n  kagent ") + sub;
    EXPECT_TRUE(has(r.output, first + " ") || has(r.output, first + "\n")) << r.output;
    EXPECT_TRUE(has(r.output, "Exit codes: 0 ok")) << r.output;
    size_t start = 0;
    while (start < r.output.size()) {
      size_t end = std::min(r.output.find('\n', start), r.output.size());
      EXPECT_LE(end - start, 100u) << sub << ": " << r.output.substr(start, end - start);
      start = end + 1;
    }
  }
}

TEST_F(Cli, Version) {
  auto r = kagent({"--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_TRUE(has(r.output, std::string("kagent ") + KAGENT_VERSION)) << r.output;
}

TEST_F(Cli, UsageErrorsExit2) {
  EXPECT_EQ(kagent({}).exit_code, 2);
  EXPECT_EQ(kagent({"frobnicate"}).exit_code, 2);
  EXPECT_EQ(kagent({"compile"}).exit_code, 2);
  EXPECT_EQ(kagent({"compile", "/no/such/file.cu"}).exit_code, 2);
  EXPECT_EQ(kagent({"eval", tmp.write("c.cu", kGoodKernel).string()}).exit_code, 2);  // --op missing
}

// A typo gets the nearest subcommand or option beside CLI11's own message, still exit 2.
TEST_F(Cli, TyposGetTheNearestName) {
  auto r = kagent({"optimze", "x"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "did you mean 'kagent optimize'?")) << r.output;
  r = kagent({"compile", tmp.write("good.cu", kGoodKernel).string(), "--arhc", "sm_80"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "'--arhc' is not an option of kagent compile; did you mean '--arch'?")) << r.output;
}

// --op takes an op's folder and a KernelBench id under $KAGENT_KERNELBENCH_DIR (as kagent serve takes
// them under its problems root); an id without the variable, or with no such problem, says so (exit 2).
TEST_F(Cli, OpTakesAFolderAndAKernelBenchId) {
  const std::string cand = example("vector_add/cand_naive.cu");
  auto r = kagent({"compile", cand, "--op", example("vector_add")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = kagent({"compile", cand, "--op", tmp.path().string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "a folder without an op.json")) << r.output;
  r = kagent({"compile", cand, "--op", "level1/19"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "needs KAGENT_KERNELBENCH_DIR")) << r.output;
  const auto kb = tmp / "kb";
  std::filesystem::create_directories(kb / "level1");
  write_file_atomic(kb / "level1" / "19_Add.py",
                    "import torch\nclass Model(torch.nn.Module):\n    def forward(self, a, b):\n        return a + b\n"
                    "def get_inputs():\n    return [torch.randn(1024), torch.randn(1024)]\n"
                    "def get_init_inputs():\n    return []\n");
  auto with_kb = [&](const std::string& id) {
    return run_capture({"env", "KAGENT_CACHE_DIR=" + (tmp / "cache").string(), "KAGENT_KERNELBENCH_DIR=" + kb.string(),
                        (test::binary_dir() / "kagent").string(), "compile", cand, "--op", id},
                       300s);
  };
  r = with_kb("level1/19");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "tensor names and shapes are not checked against it")) << "said, not skipped silently";
  r = with_kb("level1/20");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "no KernelBench problem level1/20 under KAGENT_KERNELBENCH_DIR=")) << r.output;
}

// --json asked for machine-readable output: an error (here a GPU index no machine has) comes on
// stdout too, as one JSON object with the exit code, besides the line on stderr.
TEST_F(Cli, AnErrorUnderJsonIsJsonOnStdout) {
  const std::string cand = tmp.write("c.cu", kGoodKernel).string();
  // stdout alone: stderr to /dev/null.
  std::vector<std::string> argv = {"sh",
                                   "-c",
                                   "exec \"$0\" \"$@\" 2>/dev/null",
                                   "env",
                                   "KAGENT_CACHE_DIR=" + (tmp / "cache").string(),
                                   (test::binary_dir() / "kagent").string(),
                                   "eval",
                                   cand,
                                   "--op",
                                   example("vector_add/op.json"),
                                   "--gpu",
                                   "99",
                                   "--json"};
  auto r = run_capture(argv, 300s);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  nlohmann::json j;
  ASSERT_NO_THROW(j = nlohmann::json::parse(r.output)) << r.output;
  EXPECT_EQ(j.value("exit_code", 0), 3);
  EXPECT_FALSE(j.value("error", std::string()).empty());
}

TEST_F(Cli, CompilePrintsTheResourceTable) {
  auto r = kagent({"compile", "--arch", "sm_90a", tmp.write("good.cu", kGoodKernel).string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* col : {"kernel", "regs", "smem B", "spill st/ld B", "max threads", "add"})
    EXPECT_TRUE(has(r.output, col)) << col << "\n" << r.output;
}

// The target's launch limits hold without --op too (274080 bytes of shared memory on sm_90a), and
// the output says what was checked and what was not.
TEST_F(Cli, CompileChecksTheTargetsLimitsWithoutAnOp) {
  std::string over = kGoodKernel;
  over.replace(over.find("\"block\": [256],"), 15, "\"block\": [256], \"smem\": 274080,");
  auto r = kagent({"compile", "--arch", "sm_90a", tmp.write("over.cu", over).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "launch[0].smem")) << r.output;
  EXPECT_TRUE(has(r.output, "from 0 to 232448")) << r.output;
  auto ok = kagent({"compile", "--arch", "sm_90a", tmp.write("good.cu", kGoodKernel).string()});
  EXPECT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_TRUE(has(ok.output,
                  "not checked without the operator's shapes: tensor and scalar names, library steps, 1 "
                  "launch value that reads them"))
      << ok.output;
}

TEST_F(Cli, CompileJson) {
  auto r = kagent({"compile", "--json", "--arch", "sm_90a", tmp.write("good.cu", kGoodKernel).string()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["arch"], "sm_90a");
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["ok"], true);
  EXPECT_EQ(j["results"][0]["kernels"][0]["name"], "add");
  EXPECT_EQ(j["results"][0]["kernels"][0]["param_sizes"], nlohmann::json({8, 8, 8, 8}));
  // Second run: served from the cache.
  auto again =
      nlohmann::json::parse(kagent({"compile", "--json", "--arch", "sm_90a", (tmp / "good.cu").string()}).output);
  EXPECT_EQ(again["results"][0]["cache_hit"], true);
}

TEST_F(Cli, CompileErrorExits1WithTheLine) {
  std::string src = std::string(kGoodKernel) + "__global__ void broken() { int x = ; }\n";  // line 9
  auto r = kagent({"compile", "--arch", "sm_90a", tmp.write("bad.cu", src).string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "bad.cu(9): error")) << r.output;
}

TEST_F(Cli, MalformedPlanExits2NamingFileAndLine) {
  std::string src = "// header\n/*kagent\n{\"launch\": [ {\"kernel\": \"add\",, } ]}\n*/\n";
  auto r = kagent({"compile", "--arch", "sm_90a", tmp.write("plan.cu", src).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "plan.cu:3")) << r.output;
}

TEST_F(Cli, PlanNamingAMissingKernelExits2) {
  std::string src = kGoodKernel;
  src.replace(src.find("\"add\""), 5, "\"sub\"");
  auto r = kagent({"compile", "--arch", "sm_90a", tmp.write("k.cu", src).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "sub")) << r.output;
}

TEST_F(Cli, RefusedOptionExits2) {
  std::string src = R"~(/*kagent
{"launch": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x"]}], "options": ["-rdc=true"]}
*/
extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.f; }
)~";
  auto r = kagent({"compile", "--arch", "sm_90a", tmp.write("rdc.cu", src).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "-rdc")) << r.output;
}

TEST_F(Cli, BadArchExits2) {
  auto r = kagent({"compile", "--arch", "sm_1", tmp.write("good.cu", kGoodKernel).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "sm_1")) << r.output;
}

TEST_F(Cli, WorstExitCodeOfSeveralFiles) {
  std::string bad = std::string(kGoodKernel) + "__global__ void broken() { int x = ; }\n";
  auto r = kagent(
      {"compile", "--arch", "sm_90a", tmp.write("good.cu", kGoodKernel).string(), tmp.write("bad.cu", bad).string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "add")) << "the good file is still reported\n" << r.output;
}

TEST_F(Cli, EvalBadOpExits2NamingTheKey) {
  auto op = tmp.write("op.json", R"~({"name": "x", "reference": {"cuda": "ref.cu"}, "bogus": 1})~");
  tmp.write("ref.cu", kGoodKernel);
  auto r = kagent({"eval", tmp.write("c.cu", kGoodKernel).string(), "--op", op.string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "bogus")) << r.output;
}

TEST_F(Cli, EvalCompileErrorIsTierMinusOne) {
  std::string bad = std::string(kGoodKernel) + "__global__ void broken() { int x = ; }\n";
  auto r =
      kagent({"eval", tmp.write("bad.cu", bad).string(), "--op", example("vector_add/op.json"), "--arch", "sm_90a"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "tier -1")) << r.output;
}

// A macro that expands exponentially never finishes compiling: stopped at the compile time limit
// (set low here), it is the candidate's failure, "not compiled" (exit 1), never the environment's
// (exit 3). Without a GPU eval compiles before it says there is none, so this runs anywhere.
TEST_F(Cli, EvalOfACompileThatNeverEndsIsNotCompiled) {
  std::string bomb = std::string(kGoodKernel) + "#define A0 x\n";
  for (int i = 1; i <= 40; ++i)
    bomb += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " A" + std::to_string(i - 1) + "\n";
  bomb += "__device__ int v = sizeof(A40);\n";
  const std::string cand = tmp.write("bomb.cu", bomb).string();
  for (bool json : {false, true}) {
    std::vector<std::string> argv = {"env",
                                     "KAGENT_CACHE_DIR=" + (tmp / "cache").string(),
                                     "KAGENT_COMPILE_TIMEOUT=2",
                                     (test::binary_dir() / "kagent").string(),
                                     "eval",
                                     cand,
                                     "--op",
                                     example("vector_add/op.json"),
                                     "--arch",
                                     "sm_90a"};
    if (json) argv.push_back("--json");
    auto r = run_capture(argv, 300s);
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(has(r.output, "the compile was stopped after 2 s (limit)")) << r.output;
    if (!json) {
      EXPECT_TRUE(has(r.output, "tier -1")) << r.output;
    }
  }
}

TEST_F(Cli, EvalExitCodeFollowsTheVerdictOrTheMissingGpu) {
  auto r = kagent({"eval", tmp.write("c.cu", kGoodKernel).string(), "--op", example("vector_add/op.json")});
  if (query_gpus().gpus.empty()) {
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_TRUE(has(r.output, "no GPU")) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 0) << r.output;  // a correct vector add
    EXPECT_TRUE(has(r.output, "correctness: passed")) << r.output;
    EXPECT_TRUE(has(r.output, "tier ")) << r.output;
  }
}

TEST_F(Cli, EvalJsonOnAGpu) {
  if (query_gpus().gpus.empty()) GTEST_SKIP() << "no GPU: kagent eval --json needs one";
  std::string wrong = kGoodKernel;
  wrong.replace(wrong.find("a[i] + b[i]"), 11, "a[i] - b[i]");
  auto r = kagent({"eval", "--json", tmp.write("w.cu", wrong).string(), "--op", example("vector_add/op.json")});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j["tier"], -1);
  EXPECT_EQ(j["outcome"]["failure_stage"], "correctness");
  EXPECT_EQ(j["outcome"]["mismatch"]["tensor"], "out");
}

TEST_F(Cli, RefOnAPyTorchProblem) {
  auto r = kagent({"ref", example("kernelbench_tiny/op.json")});
  auto torch = run_capture({"python3", "-c", "import torch; assert torch.cuda.is_available()"}, 120s);
  if (!torch.started || torch.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 3) << r.output;  // no torch (or no GPU for it): the environment is missing
    EXPECT_TRUE(has(r.output, "torch") || has(r.output, "GPU")) << r.output;
    return;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  for (const char* s : {"linear_weight", "linear_bias", "out", "eager:", "torch.compile:"})
    EXPECT_TRUE(has(r.output, s)) << s << "\n" << r.output;
}

// `kagent eval` against a KernelBench problem file: exit 3 naming what is missing (the GPU, or
// torch), else the verdict of our fixture (correct: exit 0).
TEST_F(Cli, EvalAgainstAPyTorchProblem) {
  auto r = kagent({"eval", example("kernelbench_tiny/cand.cu"), "--op", example("kernelbench_tiny/model.py"),
                   "--trials", "2", "--no-timing"});
  auto torch = run_capture({"python3", "-c", "import torch; assert torch.cuda.is_available()"}, 120s);
  if (query_gpus().gpus.empty() || !torch.started || torch.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_TRUE(has(r.output, "torch") || has(r.output, "GPU")) << r.output;
    return;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "correctness: passed 2 trial(s)")) << r.output;
}

TEST_F(Cli, RefAndEvalWithoutTorchExit3NamingIt) {
  // First on PATH, a python3 that speaks like the reference server does when torch is missing.
  auto bin = tmp / "fakebin";
  std::filesystem::create_directories(bin);
  tmp.write("fakebin/python3",
            "#!/bin/sh\n"
            "echo '{\"hello\": \"kagent-ref\", \"version\": \"fake\", \"torch\": null, \"cuda\": false, "
            "\"error\": \"torch is not importable: No module named torch\"}'\n"
            "while read -r line; do id=$(echo \"$line\" | sed 's/.*\"id\": *\\([0-9]*\\).*/\\1/'); "
            "echo \"{\\\"id\\\": $id, \\\"ok\\\": true}\"; done\n");
  std::filesystem::permissions(bin / "python3", std::filesystem::perms::owner_all);
  auto without_torch = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {"env", "PATH=" + bin.string() + ":/usr/bin:/bin",
                                     "KAGENT_CACHE_DIR=" + (tmp / "cache").string(),
                                     (test::binary_dir() / "kagent").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_capture(argv, 120s);
  };
  auto r = without_torch({"ref", example("kernelbench_tiny/model.py")});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "cannot import torch")) << r.output;
  if (query_gpus().gpus.empty()) return;  // without a GPU, eval stops at the GPU first (tested above)
  r = without_torch({"eval", example("kernelbench_tiny/cand.cu"), "--op", example("kernelbench_tiny/model.py")});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_TRUE(has(r.output, "cannot import torch")) << r.output;
}

TEST_F(Cli, DoctorReportsEachCheck) {
  auto r = kagent({"doctor", "--json"});
  auto j = nlohmann::json::parse(r.output);
  std::set<std::string> names;
  for (const auto& c : j["checks"]) names.insert(c["name"].get<std::string>());
  for (const char* n :
       {"nvrtc", "cuda headers", "driver", "runner", "python3", "torch", "ref server", "llm endpoint", "cupti"})
    EXPECT_TRUE(names.count(n)) << n;
  bool gpu = !query_gpus().gpus.empty();
  EXPECT_EQ(j["ok"].get<bool>(), r.exit_code == 0);
  if (!gpu) {
    EXPECT_EQ(r.exit_code, 3) << "no GPU must be exit 3\n" << r.output;
  }
}

TEST_F(Cli, DoctorNeverPrintsKeyValues) {
  std::vector<std::string> argv = {"env", "OPENAI_API_KEY=sk-very-secret-value",
                                   (test::binary_dir() / "kagent").string(), "doctor"};
  auto r = run_capture(argv, 300s);
  EXPECT_TRUE(has(r.output, "OPENAI_API_KEY")) << r.output;
  EXPECT_FALSE(has(r.output, "sk-very-secret-value")) << r.output;
}

TEST_F(Cli, BinaryDoesNotNeedTheDriverAtLoadTime) {
  for (const char* bin : {"kagent", "kagent-runner"}) {
    auto r = run_capture({"readelf", "-d", (test::binary_dir() / bin).string()}, 30s);
    if (!r.started) GTEST_SKIP() << "readelf not installed";
    EXPECT_FALSE(has(r.output, "libcuda.so")) << bin << " links the driver:\n" << r.output;
  }
}

// The README's demo: the scripted session on the bundled operator. Without a GPU the loop still
// completes (evaluations say "no GPU", no correct candidate: exit 1); with one, the session's
// final kernel is correct and faster than the reference (tier 2).
TEST_F(Cli, ScriptedDemoSession) {
  auto out = tmp / "run";
  auto r = kagent({"optimize", example("optimize_demo/op.json"), "--provider", "script", "--script",
                   example("optimize_demo/session.jsonl"), "--out", out.string()});
  auto result = nlohmann::json::parse(read_text_file(out / "result.json"));
  EXPECT_EQ(result["stop_reason"], "finish") << r.output;
  EXPECT_EQ(result["turns"], 8);
  EXPECT_EQ(result["final"], "softmax.cu");
  // A second fresh run into the same folder would mix two runs: refused, pointing at --resume.
  auto again = kagent({"optimize", example("optimize_demo/op.json"), "--provider", "script", "--script",
                       example("optimize_demo/session.jsonl"), "--out", out.string()});
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_TRUE(has(again.output, "already holds a run")) << again.output;
  // --out naming a file is bad input naming it (exit 2), not a filesystem failure.
  auto file = tmp.write("a_file", "x");
  auto onto = kagent({"optimize", example("optimize_demo/op.json"), "--provider", "script", "--script",
                      example("optimize_demo/session.jsonl"), "--out", file.string()});
  EXPECT_EQ(onto.exit_code, 2) << onto.output;
  EXPECT_TRUE(has(onto.output, "that is a file; the run needs a folder there")) << onto.output;
  if (query_gpus().gpus.empty()) {
    EXPECT_EQ(r.exit_code, 1) << r.output;
    EXPECT_TRUE(has(r.output, "no GPU")) << r.output;
    return;
  }
  EXPECT_EQ(r.exit_code, 0) << r.output;
  ASSERT_FALSE(result["best"].is_null()) << r.output;
  EXPECT_GE(result["best"]["tier"].get<int>(), 2) << result.dump(2);
  EXPECT_EQ(result["evaluations"].get<int>(), 3) << "two evaluations and the profile's";
  RecordProperty("demo_best_speedup_vs_eager", result["best"]["speedup_vs_eager"].dump());
  std::printf("demo: best tier %d, %.3fx vs the reference\n", result["best"]["tier"].get<int>(),
              result["best"]["speedup_vs_eager"].get<double>());
}

// The task prompt says which precision applies and what it allows: fp32 by default (IEEE fp32, the
// reference pinned to it), tf32 with --precision (TF32 allowed, its own tolerance). No GPU needed:
// the task is written to the transcript before the first turn.
TEST_F(Cli, TaskPromptStatesThePrecision) {
  auto script = tmp.write("one.jsonl", R"({"content": "Nothing to do.", "tool_calls": []})"
                                       "\n");
  auto task_of = [&](const std::string& run, std::vector<std::string> extra) {
    std::vector<std::string> args = {"optimize",   example("optimize_demo/op.json"),
                                     "--provider", "script",
                                     "--script",   script.string(),
                                     "--turns",    "1",
                                     "--out",      (tmp / run).string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = kagent(args);
    EXPECT_NE(r.exit_code, 2) << r.output;
    return read_text_file(tmp / run / "transcript.jsonl");
  };
  const std::string fp32 = task_of("fp32", {});
  EXPECT_TRUE(has(fp32, "Precision fp32: fp32 tensors, results as accurate as IEEE fp32 arithmetic. No TF32"))
      << fp32.substr(0, 4000);
  EXPECT_TRUE(has(fp32, "Tolerance atol 0.0001, rtol 0.0001.")) << fp32.substr(0, 4000);
  EXPECT_FALSE(has(fp32, "TF32 tensor-core math is allowed"));
  const std::string tf32 = task_of("tf32", {"--precision", "tf32"});
  EXPECT_TRUE(has(tf32, "Precision tf32: fp32 tensors; TF32 tensor-core math is allowed")) << tf32.substr(0, 4000);
  EXPECT_TRUE(has(tf32, "Tolerance atol 0.05, rtol 0.05, sized for TF32 rounding")) << tf32.substr(0, 4000);
  auto run_json = nlohmann::json::parse(read_text_file(tmp / "tf32" / "run.json"));
  EXPECT_EQ(run_json["precision"], "tf32") << "a resumed run keeps its precision";
  auto bad = kagent({"optimize", example("optimize_demo/op.json"), "--precision", "fp8", "--provider", "script",
                     "--script", script.string(), "--out", (tmp / "bad").string()});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_TRUE(has(bad.output, "--precision 'fp8': expected one of fp32, tf32, fp16, bf16")) << bad.output;
}

TEST_F(Cli, ReportMergesShardsIntoTheSummary) {
  auto a = tmp.write(
      "a.jsonl", R"({"problem": "level1/a", "level": "level1", "status": "correct", "tier": 2, "speedup_vs_eager": 1.5}
)");
  auto b = tmp.write("b.jsonl", R"({"problem": "level1/b", "level": "level1", "status": "incorrect", "tier": -1}
)");
  auto r = kagent({"report", a.string(), b.string(), "--md"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "2 problems from 2 file(s)")) << r.output;
  EXPECT_TRUE(has(r.output, "| level1 | 2 | 50.0% | 50.0% | 0.0% | 1.500x |")) << r.output;
  auto bad = tmp.write("bad.jsonl", "nope\n{}\n");
  r = kagent({"report", bad.string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "bad.jsonl:1")) << r.output;
  // A file with no record is the wrong file, not "0 problems": an empty one, or one whose only line
  // has no newline (the first 2000 bytes of a binary).
  r = kagent({"report", tmp.write("empty.jsonl", "").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "empty.jsonl: no result record in it (empty, or blank lines only)")) << r.output;
  r = kagent({"report", tmp.write("binary.jsonl", std::string("\x7f"
                                                              "ELF\x02\x01\x01 garbage without a newline"))
                            .string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "binary.jsonl: no result record in it (only a last line without its newline")) << r.output;
  // A torn last line after records: the records are reported, the cut line is said.
  auto torn = tmp.write("torn.jsonl", std::string(R"({"problem": "level1/a", "level": "level1", "status": "correct", )"
                                                  R"("tier": 2, "speedup_vs_eager": 1.5})") +
                                          "\n{\"problem\": \"level1/b\", \"lev");
  r = kagent({"report", torn.string()});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "torn.jsonl:2: the last line has no newline and is not a complete record")) << r.output;
  EXPECT_TRUE(has(r.output, "1 problem from 1 file(s)")) << r.output;
}

// Shards measured on different GPUs are not summed up together: refused (exit 2, naming each
// setting), or one summary per setting with --separate.
TEST_F(Cli, ReportRefusesResultsMeasuredDifferentlyUnlessSeparate) {
  auto a = tmp.write("h100.jsonl", R"({"problem": "level1/a", "level": "level1", "status": "correct", "tier": 2, )"
                                   R"("speedup_vs_eager": 1.5, "precision": "fp32", "device": "NVIDIA H100 80GB HBM3"}
)");
  auto b = tmp.write("h200.jsonl", R"({"problem": "level1/b", "level": "level1", "status": "correct", "tier": 2, )"
                                   R"("speedup_vs_eager": 1.2, "precision": "fp32", "device": "NVIDIA H200"}
{"problem": "level1/c", "level": "level1", "status": "error", "tier": -1}
)");
  auto r = kagent({"report", a.string(), b.string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "measured under 2 different settings")) << r.output;
  EXPECT_TRUE(has(r.output, "1 problem: NVIDIA H100 80GB HBM3, fp32")) << r.output;
  EXPECT_TRUE(has(r.output, "--separate")) << r.output;
  r = kagent({"report", a.string(), b.string(), "--separate"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "== measured under: NVIDIA H100 80GB HBM3, fp32")) << r.output;
  EXPECT_TRUE(has(r.output, "== measured under: NVIDIA H200, fp32")) << r.output;
  EXPECT_TRUE(has(r.output, "== nothing measured (1 problem:")) << r.output;
  EXPECT_EQ(kagent({"report", a.string()}).exit_code, 0);
}

// The measurement flags: out-of-range values and contradictory bounds are bad input (exit 2) before
// anything runs; bench refuses them for agent runs, which time with the defaults.
TEST_F(Cli, MeasurementFlagsAreCheckedBeforeAnythingRuns) {
  const std::string cand = example("vector_add/cand_naive.cu"), op = example("vector_add/op.json");
  auto r = kagent({"eval", cand, "--op", op, "--check-every", "0"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--check-every")) << r.output;
  r = kagent({"profile", cand, "--op", op, "--min-samples", "50", "--max-samples", "10"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "--max-samples 10 is below --min-samples 50")) << r.output;
  r = kagent({"bench", example("kernelbench_tiny"), "--agent", "--check-every", "2"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "apply to --solutions")) << r.output;
  r = kagent({"eval", "--help"});
  EXPECT_TRUE(has(r.output, "--warmup-ms")) << r.output;
  EXPECT_TRUE(has(r.output, "--launch-samples")) << r.output;
}

TEST_F(Cli, ProfilePrintsThePerLaunchTable) {
  const bool gpu = !query_gpus().gpus.empty();
  auto r = kagent({"profile", (test::source_dir() / "tests/gpu/kernels/fifty_launches.cu").string(), "--op",
                   example("vector_add/op.json")});
  EXPECT_EQ(r.exit_code, gpu ? 0 : 3) << r.output;
  EXPECT_TRUE(has(r.output, "CUPTI ms")) << r.output;
  EXPECT_TRUE(has(r.output, "49      add_range  1312    256")) << r.output;  // 50 launches, grids evaluated
  if (!gpu) {
    EXPECT_TRUE(has(r.output, "no timing:")) << r.output;
  }
  // The agent's form: a header, one line per launch (50), the verdict.
  auto c = kagent({"profile", (test::source_dir() / "tests/gpu/kernels/fifty_launches.cu").string(), "--op",
                   example("vector_add/op.json"), "--compact"});
  EXPECT_EQ(c.exit_code, gpu ? 0 : 3) << c.output;
  size_t n = 0;
  for (char ch : c.output) n += ch == '\n';
  EXPECT_EQ(n, 52u) << c.output;
  EXPECT_TRUE(has(c.output, "#49 add_range grid 1312 block 256")) << c.output;
  EXPECT_TRUE(has(c.output, "\nverdict: ")) << c.output;
  if (!gpu) {
    EXPECT_TRUE(has(c.output, "vector_add: not timed\n")) << c.output;
  }
  auto j = kagent({"profile", example("softmax/cand_online.cu"), "--op", example("softmax/op.json"), "--json"});
  auto parsed = nlohmann::json::parse(j.output.substr(0, j.output.rfind('}') + 1), nullptr, false);
  ASSERT_FALSE(parsed.is_discarded()) << j.output;
  EXPECT_EQ(parsed["launches"][0]["kernel"], "softmax_online");
  EXPECT_EQ(parsed["launches"][0]["grid"][0], 4096);
  EXPECT_EQ(
      kagent({"profile", example("vector_add/cand_compile_error.cu"), "--op", example("vector_add/op.json")}).exit_code,
      1);
}

// Hostile inputs (issue 16): bad input is exit 2 naming the file and key; nothing hangs or crashes.
TEST_F(Cli, AHugeArchIsExit2NotAStackOverflow) {
  auto r = kagent({"compile", "--arch", "sm_" + std::string(100000, '9'), tmp.write("good.cu", kGoodKernel).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output.substr(0, 500);
  EXPECT_TRUE(has(r.output, "expected sm_XY")) << r.output.substr(0, 500);
  EXPECT_EQ(kagent({"compile", "--arch", "sm_9999999999", tmp.write("g.cu", kGoodKernel).string()}).exit_code, 2);
}

TEST_F(Cli, AFifoOrDevZeroIsExit2NotAHang) {
  auto fifo = tmp / "fifo.cu";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto r = kagent({"compile", "--arch", "sm_90a", fifo.string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "not a regular file")) << r.output;
  r = kagent({"report", "/dev/zero"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "/dev/zero")) << r.output;
}

TEST_F(Cli, PlansThatCouldNeverLaunchAreExit2NamingTheLaunch) {
  auto op = example("vector_add/op.json");
  auto with_grid = [&](const std::string& name, const std::string& grid, const std::string& block) {
    std::string src = kGoodKernel;
    src.replace(src.find("[\"cdiv(numel(out), 256)\"]"), 25, "[" + grid + "]");
    src.replace(src.find("[256]"), 5, "[" + block + "]");
    return tmp.write(name, src).string();
  };
  auto r = kagent({"compile", "--arch", "sm_90a", "--op", op, with_grid("grid.cu", "99999999999", "256")});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "grid.cu:1: plan key launch[0].grid[0]")) << r.output;
  r = kagent({"compile", "--arch", "sm_90a", "--op", op, with_grid("block.cu", "1", "4096")});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "launch[0].block[0]")) << r.output;
  r = kagent({"compile", "--arch", "sm_90a", "--op", op, with_grid("div.cu", "\"numel(out) / 0\"", "256")});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "division by zero")) << r.output;
  r = kagent(
      {"compile", "--arch", "sm_90a", "--op", op, with_grid("ovf.cu", "\"numel(out) * 9223372036854775807\"", "256")});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "overflow")) << r.output;
  EXPECT_EQ(kagent({"compile", "--arch", "sm_90a", "--op", op, tmp.write("ok.cu", kGoodKernel).string()}).exit_code, 0);
}

TEST_F(Cli, BadNumbersAndDuplicateKeysInAnOpAreExit2NamingTheKey) {
  tmp.write("ref.cu", "/*kagent {} */\n");
  auto op = tmp.write("op.json", R"({"name": "t", "reference": {"cuda": "ref.cu"}, "budget": {"turns": 1e400},
    "inputs": {"a": {"shape": [4], "dtype": "f32"}}, "outputs": {"out": {"shape": [4], "dtype": "f32"}}})");
  auto r = kagent({"compile", "--arch", "sm_90a", "--op", op.string(), tmp.write("good.cu", kGoodKernel).string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "key budget.turns: number out of range")) << r.output;
  EXPECT_FALSE(has(r.output, "internal error")) << r.output;
}

TEST_F(Cli, ACorruptRunJsonOnResumeIsExit2NamingIt) {
  auto run = tmp.path() / "run";
  std::filesystem::create_directories(run);
  tmp.write("run/run.json", "{\"op\": ");
  auto r = kagent({"optimize", "--resume", run.string(), "--provider", "script"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "run.json")) << r.output;
  tmp.write("run/run.json", "{\"op\": 5}");
  r = kagent({"optimize", "--resume", run.string(), "--provider", "script"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "run.json: not a kagent run record")) << r.output;
}

// A .py candidate is a ModelNew solution (candidate.hpp): one without ModelNew is bad input before
// anything runs, on any machine; NVRTC's compile command refuses one with a pointer to eval.
TEST_F(Cli, AModelNewFileWithoutModelNewExits2) {
  const auto problem = tmp.write("p.py",
                                 "import torch\nclass Model(torch.nn.Module):\n    pass\ndef get_inputs():\n    "
                                 "return []\ndef get_init_inputs():\n    return []\n");
  const auto sol = tmp.write("sol.py", "import torch\nclass Model(torch.nn.Module):\n    pass\n");
  auto r = kagent({"eval", sol.string(), "--op", problem.string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, "defines no ModelNew")) << r.output;
  const auto good = tmp.write("good.py", "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n");
  auto c = kagent({"compile", good.string()});
  EXPECT_EQ(c.exit_code, 2) << c.output;
  EXPECT_TRUE(has(c.output, "built by its own worker when it is evaluated")) << c.output;
}
