// Hostile candidates: NVRTC runs in kagent-compile, which sees only the toolkit's headers, so an
// #include of /proc/self/environ, of a host file or of a path a macro builds finds nothing, and
// options that name files never reach NVRTC. Where the kernel refuses the worker its namespaces,
// the tests that need the private view skip with the worker's reason (never pass silently).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/compile/compile_worker_client.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/compile/toolkit_identity.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/spec/option_allowlist.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace kagent;

namespace {

const std::string kSecret = "sk-kagent-test-secret-4242";

std::string with_plan(const std::string& body, const std::string& options = "") {
  return "/*kagent\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], \"args\": [\"out\"]}]" +
         (options.empty() ? std::string() : ", \"options\": [" + options + "]") + "}\n*/\n" + body +
         "\nextern \"C\" __global__ void k(float* out) { out[0] = 1.0f; }\n";
}

class CompileSandbox : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("MYKEY", kSecret.c_str(), 1);  // in kagent's environment, as an API key would be
    dir_ = fs::path(::testing::TempDir()) / ("kagent-compile-sandbox-" + std::to_string(getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "secret.txt") << kSecret << "\n";
  }
  void TearDown() override {
    unsetenv("MYKEY");
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  CompileResult compile(const std::string& text) {
    Compiler c(find_cuda_paths(), nullptr);
    return c.compile(parse_candidate(text, dir_ / "cand.cu"), "sm_90a");
  }
  // The worker's isolation for a harmless program: the private view, or why not.
  static void require_private_view() {
    Compiler c(find_cuda_paths(), nullptr);
    CompileResult r = c.compile(parse_candidate(with_plan(""), "probe.cu"), "sm_90a");
    ASSERT_TRUE(r.ok) << r.log;
    if (r.isolation != "namespaces")
      GTEST_SKIP() << "the kernel refuses the compile worker its namespaces here (isolation '" << r.isolation
                   << "'): only the scrubbed environment holds";
  }
  fs::path dir_;
};

}  // namespace

TEST_F(CompileSandbox, ProcSelfEnvironHoldsNoSecretAndIsNotThere) {
  // Even with the weaker isolation the worker's environment is scrubbed: no key in it.
  CompileResult r = compile(with_plan("#include \"/proc/self/environ\""));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.log.find(kSecret), std::string::npos) << r.log;
  EXPECT_EQ(r.log.find("MYKEY"), std::string::npos) << r.log;
  require_private_view();
  EXPECT_NE(r.log.find("cannot open source file"), std::string::npos) << r.log;
}

TEST_F(CompileSandbox, AHostFileCannotBeIncludedByPathOrByMacro) {
  require_private_view();
  const std::string path = (dir_ / "secret.txt").string();
  for (const std::string& src :
       {"#include \"" + path + "\"", "#define Q(x) #x\n#define P(x) Q(x)\n#include P(" + path + ")",
        std::string("#include \"/etc/passwd\""), std::string("#include \"/root/.bashrc\"")}) {
    CompileResult r = compile(with_plan(src));
    EXPECT_FALSE(r.ok) << src;
    EXPECT_EQ(r.log.find(kSecret), std::string::npos) << r.log;
    EXPECT_EQ(r.log.find("root:x:0"), std::string::npos) << r.log;
    EXPECT_NE(r.log.find("cannot open source file"), std::string::npos) << r.log;
  }
}

TEST_F(CompileSandbox, ToolkitHeadersStillCompile) {
  CompileResult r = compile(with_plan("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n#include <mma.h>"));
  EXPECT_TRUE(r.ok) << r.log;
  EXPECT_FALSE(r.cubin.empty());
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].name, "k");
}

TEST_F(CompileSandbox, OptionsThatNameFilesAreRefusedBeforeNvrtc) {
  const std::string csv = (dir_ / "x.csv").string();
  for (const std::string& opt :
       {std::string("--pre-include=/etc/shadow"), std::string("-include=/etc/shadow"), "--time=" + csv,
        "--fdevice-time-trace=" + csv, std::string("-I/etc"), std::string("--include-path=/root"),
        std::string("--use-pch"), std::string("--pch-dir=/tmp"), std::string("--use_fast_math --time=/tmp/y"),
        std::string("--ptxas-options=--output-file=/tmp/z")}) {
    try {
      check_option_allowed(opt, "cand.cu:1: plan key options[0]");
      ADD_FAILURE() << opt << " was allowed";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("is refused"), std::string::npos) << e.what();
    }
    // In a plan, too: parsing refuses it, so no compile ever sees it.
    EXPECT_THROW(parse_candidate(with_plan("", "\"" + opt + "\""), dir_ / "cand.cu"), InputError) << opt;
    // And the compiler refuses it on its own, whatever route the option took.
    Candidate c = parse_candidate(with_plan(""), dir_ / "cand.cu");
    c.plan.options = {opt};
    Compiler compiler(find_cuda_paths(), nullptr);
    EXPECT_THROW(compiler.compile(c, "sm_90a"), InputError) << opt;
  }
  EXPECT_FALSE(fs::exists(csv));
  for (const char* ok : {"--use_fast_math", "--maxrregcount=64", "-DTILE=32", "--ptxas-options=-v,-O3", "--ftz=true",
                         "-lineinfo", "--std=c++20", "--diag-suppress=177"})
    EXPECT_NO_THROW(check_option_allowed(ok, "here")) << ok;
}

TEST_F(CompileSandbox, TheCacheKeyFollowsTheToolkitHeaders) {
  // A stand-in toolkit: the identity must change when a header's content (size) changes.
  fs::path inc = dir_ / "toolkit" / "include";
  fs::create_directories(inc / "crt");
  std::ofstream(inc / "cuda_fp16.h") << "// v1\n";
  std::ofstream(inc / "crt" / "host_defines.h") << "// v1\n";
  CudaPaths p;
  p.include_dir = inc;
  const std::string a = toolkit_identity_now(p);
  EXPECT_EQ(a, toolkit_identity_now(p));
  std::ofstream(inc / "crt" / "host_defines.h") << "// version two\n";
  const std::string b = toolkit_identity_now(p);
  EXPECT_NE(a, b) << "a changed header in a subdirectory must change the key";
  std::ofstream(inc / "new_header.h") << "\n";
  EXPECT_NE(b, toolkit_identity_now(p)) << "a new header must change the key";
}

TEST_F(CompileSandbox, CacheHitsNeedNoWorker) {
  auto cache = std::make_shared<CompileCache>(dir_ / "cache");
  Compiler c(find_cuda_paths(), cache);
  Candidate cand = parse_candidate(with_plan(""), dir_ / "cand.cu");
  CompileResult cold = c.compile(cand, "sm_90a");
  ASSERT_TRUE(cold.ok) << cold.log;
  // With no worker to be found, a hit still answers.
  setenv("KAGENT_COMPILE_WORKER", "/nonexistent/kagent-compile", 1);
  CompileResult hot = c.compile(cand, "sm_90a");
  unsetenv("KAGENT_COMPILE_WORKER");
  EXPECT_TRUE(hot.cache_hit);
  EXPECT_EQ(hot.cubin, cold.cubin);
}
