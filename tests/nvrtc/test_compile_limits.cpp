// Sources that never finish compiling: a macro that expands exponentially and a template that
// instantiates exponentially. The compile worker stops each at its limits (wall clock, CPU time,
// address space) and the compile is the candidate's failure, saying what happened and the limit:
// not an exception, not cached. Low limits keep each test to seconds. No GPU needed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/compile/compile_worker_client.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/sandbox/network.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/spawn.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

std::string with_plan(const std::string& body) {
  return "/*kagent\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], \"args\": [\"out\"]}]}\n*/\n" +
         body + "\nextern \"C\" __global__ void k(float* out) { out[0] = 1.0f; }\n";
}

// 2^40 tokens from 41 short lines: the preprocessor never finishes.
std::string macro_bomb() {
  std::string s = "#define A0 x\n";
  for (int i = 1; i <= 40; ++i)
    s += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " A" + std::to_string(i - 1) + "\n";
  return with_plan(s + "__device__ int v = sizeof(A40);\n");
}

// 2^41 distinct instantiations: memory grows until something stops it.
std::string template_bomb() {
  return with_plan(R"(
template <int N, unsigned long long M> struct B {
  static constexpr unsigned long long v = B<N - 1, 2 * M>::v + B<N - 1, 2 * M + 1>::v;
};
template <unsigned long long M> struct B<0, M> { static constexpr unsigned long long v = M; };
__device__ unsigned long long r = B<40, 1>::v;
)");
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

class CompileLimitsTest : public ::testing::Test {
 protected:
  CompileResult compile(const std::string& text, const CompileLimits* limits,
                        std::shared_ptr<CompileCache> cache = nullptr) {
    Compiler c(find_cuda_paths(), std::move(cache));
    if (limits != nullptr) c.set_limits(*limits);
    return c.compile(parse_candidate(text, tmp_.path() / "bomb.cu"), "sm_90a");
  }
  test::TempDir tmp_;
};

}  // namespace

TEST_F(CompileLimitsTest, AMacroBombIsStoppedAtTheTimeAndIsTheCandidatesFailure) {
  CompileLimits limits;
  limits.seconds = 2s;
  auto cache = std::make_shared<CompileCache>(tmp_.path() / "cache");
  CompileResult r = compile(macro_bomb(), &limits, cache);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.stopped);
  EXPECT_NE(r.log.find("the compile was stopped after 2 s"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("(limit)"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("KAGENT_COMPILE_TIMEOUT"), std::string::npos) << r.log;
  // Not cached: a higher limit must get to compile it again.
  CompileResult again = compile(macro_bomb(), &limits, cache);
  EXPECT_FALSE(again.cache_hit);
  EXPECT_TRUE(again.stopped);
}

TEST_F(CompileLimitsTest, ATemplateBombIsStoppedAtTheMemoryLimit) {
  if (sandbox::kAddressSanitizerBuild)
    GTEST_SKIP() << "an AddressSanitizer build runs the compile worker without RLIMIT_AS (its shadow memory)";
  CompileLimits limits;
  limits.seconds = 120s;  // the memory limit, not the clock, stops it
  limits.memory_bytes = uint64_t{384} << 20;
  CompileResult r = compile(template_bomb(), &limits);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(r.stopped);
  // NVRTC's own "out of memory", or a kill by a signal at the limit: either way the limit is named.
  EXPECT_NE(r.log.find("384 MiB"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("KAGENT_COMPILE_MEMORY"), std::string::npos) << r.log;
  // A real kernel still compiles under the same limits.
  CompileResult fine = compile(with_plan(""), &limits);
  EXPECT_TRUE(fine.ok) << fine.log;
}

TEST_F(CompileLimitsTest, TheLimitsComeFromTheEnvironment) {
  {
    ScopedEnv t("KAGENT_COMPILE_TIMEOUT", "2");
    ScopedEnv m("KAGENT_COMPILE_MEMORY", "512");
    CompileLimits l = compile_limits_from_environment();
    EXPECT_EQ(l.seconds, 2s);
    EXPECT_EQ(l.memory_bytes, uint64_t{512} << 20);
    CompileResult r = compile(macro_bomb(), nullptr);  // no limits set: the environment's
    EXPECT_FALSE(r.ok);
    EXPECT_NE(r.log.find("stopped after 2 s"), std::string::npos) << r.log;
  }
  CompileLimits d = compile_limits_from_environment();
  EXPECT_EQ(d.seconds, 120s) << "the documented default";
  EXPECT_EQ(d.memory_bytes, uint64_t{4} << 30) << "the documented default";
  for (const char* bad : {"0", "-5", "12s", "abc", "999999999"}) {
    ScopedEnv t("KAGENT_COMPILE_TIMEOUT", bad);
    try {
      compile_limits_from_environment();
      ADD_FAILURE() << bad << " was taken";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("KAGENT_COMPILE_TIMEOUT"), std::string::npos) << e.what();
    }
  }
}

TEST_F(CompileLimitsTest, AWorkerThatCannotStartIsStillTheEnvironments) {
  ScopedEnv w("KAGENT_COMPILE_WORKER", "/nonexistent/kagent-compile");
  EXPECT_THROW(compile(with_plan(""), nullptr), EnvError);
}

// The worker's policy carries the limits, and a child started under it gets them (lowered only).
TEST(CompileWorkerPolicy, SetsAddressSpaceAndCpuLimits) {
  // An AddressSanitizer build, or a CUDA tool following kagent's children, leaves the address space
  // unbounded (its library or shadow memory would reach the limit).
  const bool unbounded = sandbox::kAddressSanitizerBuild || sandbox::cuda_tool_injected();
  sandbox::SandboxPolicy p = sandbox::compile_worker_policy({}, rlim_t{1} << 30, 7);
  EXPECT_EQ(p.limits.address_space_bytes, unbounded ? 0 : rlim_t{1} << 30);
  EXPECT_EQ(p.limits.cpu_seconds, 7u);
  EXPECT_EQ(sandbox::compile_worker_policy({}).limits.address_space_bytes,
            unbounded ? 0 : sandbox::kCompileWorkerMemoryBytes);
  {
    test::ScopedEnv inj("CUDA_INJECTION64_PATH", "/opt/ncu/libinject.so");
    EXPECT_EQ(sandbox::compile_worker_policy({}, rlim_t{1} << 30, 7).limits.address_space_bytes, 0u);
    EXPECT_EQ(sandbox::compile_worker_policy({}, rlim_t{1} << 30, 7).limits.cpu_seconds, 7u);
  }

  sandbox::SandboxPolicy child = sandbox::helper_policy();
  child.restricted = true;
  child.limits.cpu_seconds = 1;
  child.limits.address_space_bytes = rlim_t{1} << 30;
  // ulimit -v is in KiB; ulimit -t the soft CPU limit in seconds.
  pid_t pid = sandbox::spawn(
      child, {{"sh", "-c", "[ \"$(ulimit -v)\" = 1048576 ] && [ \"$(ulimit -t)\" = 1 ]"}, {}, -1, -1, -1});
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child did not get the limits";

  pid = sandbox::spawn(child, {{"sh", "-c", "while :; do :; done"}, {}, -1, -1, -1});
  // One second of CPU time ends it; the loop below only guards against a limit that did not hold.
  bool ended = false;
  for (int i = 0; i < 1200 && !ended; ++i) {
    ended = waitpid(pid, &status, WNOHANG) == pid;
    if (!ended) usleep(100000);
  }
  if (!ended) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
  }
  ASSERT_TRUE(ended) << "the CPU-time limit did not stop a busy loop in 120 s";
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(WTERMSIG(status) == SIGXCPU || WTERMSIG(status) == SIGKILL) << WTERMSIG(status);
}
