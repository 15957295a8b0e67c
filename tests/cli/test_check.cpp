// `kagent check` end to end: exit codes (with and without a GPU), manifests, a baseline at a git
// ref, JUnit and GitHub output files.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/common/files.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

class CheckCli : public ::testing::Test {
 protected:
  test::TempDir tmp;
  bool gpu = !query_gpus().gpus.empty();

  ProcessResult kagent(const std::vector<std::string>& args, const std::vector<std::string>& env = {},
                       const std::string& cwd = "") {
    std::vector<std::string> argv = {"env", "KAGENT_CACHE_DIR=" + (tmp / "cache").string()};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back((test::binary_dir() / "kagent").string());
    argv.insert(argv.end(), args.begin(), args.end());
    if (cwd.empty()) return run_capture(argv, 300s);
    std::string cmd = "cd '" + cwd + "' &&";
    for (const auto& a : argv) cmd += " '" + a + "'";
    return run_capture({"sh", "-c", cmd}, 300s);
  }
  static std::string example(const std::string& rel) { return (test::examples_dir() / rel).string(); }
  static std::string kernel(const std::string& name) {
    return (test::source_dir() / "tests/gpu/kernels" / name).string();
  }
  static bool has(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }
  void git(const std::string& dir, const std::string& args) {
    auto r = run_capture(
        {"sh", "-c", "cd '" + dir + "' && git -c user.name=t -c user.email=t@t -c init.defaultBranch=main " + args},
        60s);
    ASSERT_EQ(r.exit_code, 0) << args << ": " << r.output;
  }
};

}  // namespace

TEST_F(CheckCli, ACompileErrorFailsWithAnAnnotationOnItsLine) {
  auto r = kagent({"check", example("vector_add/cand_compile_error.cu"), "--op", example("vector_add/op.json"),
                   "--github", "--junit", (tmp / "out/check.xml").string()},
                  {"GITHUB_STEP_SUMMARY=" + (tmp / "summary.md").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "::error file=")) << r.output;
  EXPECT_TRUE(has(r.output,
                  "cand_compile_error.cu,line=17,title=kagent check%3A cand_compile_error::identifier "
                  "\"undeclared_scale\" is undefined"))
      << r.output;
  const std::string summary = read_text_file(tmp / "summary.md");
  EXPECT_TRUE(has(summary, "### kagent check: 0 of 1 passed")) << summary;
  EXPECT_TRUE(has(read_text_file(tmp / "out/check.xml"), "<failure message=\"does not compile (1 error(s))\""));
  if (!find_in_path("xmllint").empty()) {
    EXPECT_EQ(run_capture({"xmllint", "--noout", (tmp / "out/check.xml").string()}, 30s).exit_code, 0);
  }
}

// A pull request's kernel that includes the process environment: in CI the secret must never
// reach the output, the annotations or the step summary.
TEST_F(CheckCli, ASecretInTheEnvironmentIsNeverPrinted) {
  const std::string secret = "ci-secret-value-31337";
  std::string text = read_text_file(example("vector_add/cand_compile_error.cu"));
  write_file_atomic(tmp / "leak.cu", "#include \"/proc/self/environ\"\n#include \"/proc/1/environ\"\n" + text);
  auto r = kagent({"check", (tmp / "leak.cu").string(), "--op", example("vector_add/op.json"), "--github"},
                  {"CI_SECRET=" + secret, "GITHUB_STEP_SUMMARY=" + (tmp / "summary.md").string()});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "::error")) << r.output;
  EXPECT_FALSE(has(r.output, secret)) << r.output;
  EXPECT_FALSE(has(r.output, "CI_SECRET")) << r.output;
  EXPECT_FALSE(has(read_text_file(tmp / "summary.md"), secret));
}

TEST_F(CheckCli, ACorrectKernelPassesOrIsUncheckedWithoutAGpu) {
  auto r = kagent({"check", example("vector_add/cand_vec4.cu"), "--op", example("vector_add/op.json"), "--json"});
  if (gpu) {
    EXPECT_EQ(r.exit_code, 0) << r.output;
  } else {
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_TRUE(has(r.output, "\"status\": \"unchecked\"")) << r.output;
    EXPECT_TRUE(has(r.output, "no GPU")) << r.output;
  }
}

// Without a GPU the reason is said once for all the entries it holds for, not once per entry and
// again under the table; the header does not name a GPU it does not have.
TEST_F(CheckCli, WithoutAGpuTheReasonIsSaidOnceNotPerEntry) {
  if (gpu) GTEST_SKIP() << "this machine has a GPU";
  const std::string op = example("vector_add/op.json");
  tmp.write("kagent.json", fmt::format(R"({{"checks": [{{"name": "a", "op": "{0}", "kernel": "{1}"}},
                                         {{"name": "b", "op": "{0}", "kernel": "{1}"}},
                                         {{"name": "c", "op": "{0}", "kernel": "{1}"}}]}})",
                                       op, example("vector_add/cand_vec4.cu")));
  auto r = kagent({"check", "--manifest", (tmp / "kagent.json").string()});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_FALSE(has(r.output, "on GPU(s)")) << r.output;
  EXPECT_TRUE(has(r.output, "unchecked a, b, c: no GPU")) << r.output;
  size_t said = 0;
  for (size_t p = r.output.find("no GPU to evaluate on"); p != std::string::npos;
       p = r.output.find("no GPU to evaluate on", p + 1))
    ++said;
  EXPECT_LE(said, 2u) << "the first entry's progress line and the table's note: " << r.output;
}

// --tolerance scores a kernel under another protocol without an op.json of its own; the verdict
// (and its JUnit test case) says which tolerance it was judged under, with or without a GPU.
TEST_F(CheckCli, ToleranceFromTheCommandLineIsInTheVerdict) {
  auto r = kagent({"check", example("vector_add/cand_vec4.cu"), "--op", example("vector_add/op.json"), "--json",
                   "--tolerance", "0.01", "--junit", (tmp / "t.xml").string()});
  EXPECT_EQ(r.exit_code, gpu ? 0 : 3) << r.output;
  auto j = nlohmann::json::parse(r.output.substr(r.output.find('[')));
  ASSERT_EQ(j.size(), 1u) << r.output;
  EXPECT_EQ(j[0]["precision"], "fp32");
  EXPECT_EQ(j[0]["tolerance"], nlohmann::json({{"atol", 0.01}, {"rtol", 0.01}})) << j[0].dump();
  EXPECT_TRUE(has(read_text_file(tmp / "t.xml"), "<property name=\"atol\" value=\"0.01\"/>"));
  // Without the flag, the op's own (fp32: 1e-4).
  r = kagent(
      {"check", example("vector_add/cand_vec4.cu"), "--op", example("vector_add/op.json"), "--json", "--rtol", "0.5"});
  j = nlohmann::json::parse(r.output.substr(r.output.find('[')));
  EXPECT_EQ(j[0]["tolerance"], nlohmann::json({{"atol", 1e-4}, {"rtol", 0.5}})) << j[0].dump();
  // Bad tolerances are usage errors.
  for (std::vector<std::string> bad : {std::vector<std::string>{"--tolerance", "0.01", "--atol", "0.1"},
                                       {"--atol", "-1"},
                                       {"--rtol", "nan"},
                                       {"--tolerance", "inf"}}) {
    std::vector<std::string> args = {"check", example("vector_add/cand_vec4.cu"), "--op",
                                     example("vector_add/op.json")};
    args.insert(args.end(), bad.begin(), bad.end());
    auto b = kagent(args);
    EXPECT_EQ(b.exit_code, 2) << bad[0] << " " << bad[1] << ": " << b.output;
  }
}

TEST_F(CheckCli, BadInputExits2) {
  auto code = [&](const std::vector<std::string>& args, const std::string& cwd = "") {
    return kagent(args, {}, cwd).exit_code;
  };
  EXPECT_EQ(code({"check"}, tmp.path().string()), 2);                 // no kernel, no ./kagent.json
  EXPECT_EQ(code({"check", example("vector_add/cand_vec4.cu")}), 2);  // --op missing
  EXPECT_EQ(code({"check", example("vector_add/cand_vec4.cu"), "--op", example("vector_add/op.json"), "--manifest",
                  example("ci/kagent.json")}),
            2);
  EXPECT_EQ(code({"check", "--manifest", (tmp / "nope.json").string()}), 2);
  tmp.write("bad.json", R"({"checks": [{"op": "x.json"}]})");
  auto r = kagent({"check", "--manifest", (tmp / "bad.json").string()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(has(r.output, "bad.json: checks[0].op:")) << r.output;
  EXPECT_EQ(code({"check", example("vector_add/cand_vec4.cu"), "--op", example("vector_add/op.json"), "--vs", "torch"}),
            2);
}

TEST_F(CheckCli, ManifestFoundInTheWorkingDirectory) {
  tmp.write("repo/kagent.json",
            fmt::format(R"({{"checks": [{{"name": "broken", "op": "{}", "kernel": "{}"}}]}})",
                        example("vector_add/op.json"), example("vector_add/cand_compile_error.cu")));
  auto r = kagent({"check", "--json"}, {}, (tmp / "repo").string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "\"name\": \"broken\"")) << r.output;
}

TEST_F(CheckCli, BaselineAtAGitRef) {
  if (find_in_path("git").empty()) GTEST_SKIP() << "git not found";
  const std::string repo = (tmp / "repo").string();
  std::filesystem::create_directories(repo);
  std::filesystem::copy_file(example("vector_add/cand_naive.cu"), tmp / "repo/add.cu");
  git(repo, "init -q && git add add.cu && git commit -qm v1");
  std::filesystem::copy_file(example("vector_add/cand_vec4.cu"), tmp / "repo/add.cu",
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(example("vector_add/cand_vec4.cu"), tmp / "repo/new.cu");
  const std::string op = example("vector_add/op.json");

  auto unknown = kagent({"check", repo + "/add.cu", "--op", op, "--baseline-ref", "no-such-branch"});
  EXPECT_EQ(unknown.exit_code, 2) << unknown.output;
  EXPECT_TRUE(has(unknown.output, "baseline_ref no-such-branch: not a commit")) << unknown.output;

  auto r = kagent({"check", repo + "/add.cu", "--op", op, "--baseline-ref", "HEAD", "--max-regression", "3"});
  auto fresh = kagent({"check", repo + "/new.cu", "--op", op, "--baseline-ref", "HEAD"});
  if (!gpu) {
    EXPECT_EQ(r.exit_code, 3) << r.output;
    EXPECT_EQ(fresh.exit_code, 3) << fresh.output;
    return;
  }
  // vec4 against the naive version it replaces: faster, so no regression.
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, "add.cu at HEAD")) << r.output;
  EXPECT_EQ(fresh.exit_code, 0) << fresh.output;
  EXPECT_TRUE(has(fresh.output, "new.cu does not exist at HEAD (a new kernel)")) << fresh.output;
}

TEST_F(CheckCli, ATenPercentRegressionFailsTheGate) {
  if (!gpu) GTEST_SKIP() << "no GPU: the regression gate times kernels";
  auto r = kagent({"check", kernel("fma_chain_10pct_slower.cu"), "--op", example("vector_add/op.json"), "--baseline",
                   kernel("fma_chain.cu"), "--max-regression", "3", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(has(r.output, "regression: +")) << r.output;
  auto same = kagent({"check", kernel("fma_chain.cu"), "--op", example("vector_add/op.json"), "--baseline",
                      kernel("fma_chain.cu"), "--max-regression", "3"});
  EXPECT_EQ(same.exit_code, 0) << same.output;
}
