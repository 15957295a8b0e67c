// A plan evaluated against the operator's shapes and the architecture's launch limits before
// anything runs (`kagent compile --op`): what could never launch is bad input naming the launch.
// And what a plan may cost to parse: its size and its number of JSON values are bounded before
// the DOM is built.
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <functional>

#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/plan_limits.hpp"

using namespace kagent;

namespace {

Op vector_op() {
  Op op;
  op.name = "v";
  op.ref_kind = RefKind::cuda;
  op.inputs = {TensorSpec{"x", {1 << 20}, DType::f32, {}}};
  op.outputs = {TensorSpec{"out", {1 << 20}, DType::f32, {}}};
  return op;
}

Candidate plan(const std::string& launch, const std::string& extra = "") {
  return parse_candidate("/*kagent\n{" + extra + "\"launch\": [" + launch + "]}\n*/\n", "cand.cu");
}

std::string launch(const std::string& grid, const std::string& block, const std::string& rest = "") {
  return R"({"kernel": "k", "grid": [)" + grid + R"(], "block": [)" + block + "]" + rest + R"(, "args": ["x", "out"]})";
}

std::string error_of(const Candidate& c, int sm = 90) {
  try {
    check_plan_limits(c, vector_op(), launch_limits(sm));
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(PlanLimits, AValidPlanPasses) {
  EXPECT_NO_THROW(check_plan_limits(plan(launch("\"cdiv(numel(out), 256)\"", "256", R"(, "smem": 4096)")), vector_op(),
                                    launch_limits(90)));
  EXPECT_NO_THROW(check_plan_limits(plan(launch("2147483647, 65535, 65535", "1024")), vector_op(), launch_limits(90)));
}

TEST(PlanLimits, DivisionByZeroAndOverflowAreBadInputNamingTheKey) {
  auto msg = error_of(plan(launch("\"numel(x) / (x.shape[0] - 1048576)\"", "256")));
  EXPECT_TRUE(has(msg, "cand.cu:1: plan key launch[0].grid[0]")) << msg;
  EXPECT_TRUE(has(msg, "division by zero")) << msg;
  msg = error_of(plan(launch("1", "\"numel(x) * 9223372036854775807\"")));
  EXPECT_TRUE(has(msg, "launch[0].block[0]")) << msg;
  EXPECT_TRUE(has(msg, "integer overflow")) << msg;
}

TEST(PlanLimits, GridBlockAndSharedMemoryBeyondTheArchitecture) {
  auto msg = error_of(plan(launch("99999999999", "256")));
  EXPECT_TRUE(has(msg, "launch[0].grid[0]")) << msg;
  EXPECT_TRUE(has(msg, "from 1 to 2147483647")) << msg;
  EXPECT_TRUE(has(error_of(plan(launch("1, 65536", "32"))), "launch[0].grid[1]"));
  msg = error_of(plan(launch("1", "4096")));
  EXPECT_TRUE(has(msg, "launch[0].block[0]")) << msg;
  msg = error_of(plan(launch("1", "64, 64")));  // each dimension fits, the product does not
  EXPECT_TRUE(has(msg, "a block of 4096 threads")) << msg;
  EXPECT_TRUE(has(error_of(plan(launch("1", "1, 1, 65"))), "launch[0].block[2]"));
  EXPECT_TRUE(has(error_of(plan(launch("\"0 * numel(x)\"", "32"))), "from 1 to"));
  // 227 KiB on sm_90; 99 KiB on sm_89.
  const std::string smem = R"(, "smem": 120000)";
  EXPECT_NO_THROW(check_plan_limits(plan(launch("1", "32", smem)), vector_op(), launch_limits(90)));
  msg = error_of(plan(launch("1", "32", smem)), 89);
  EXPECT_TRUE(has(msg, "launch[0].smem")) << msg;
  EXPECT_TRUE(has(msg, "from 0 to 101376")) << msg;
  EXPECT_TRUE(has(error_of(plan(launch("1", "32", R"(, "smem": 232449)"))), "launch[0].smem"));
}

// Without the operator's shapes (`kagent compile` without --op) the values that read none of them
// are still held to the architecture: 274080 bytes of shared memory is over sm_90a's 232448.
TEST(PlanLimits, ValuesThatReadNoTensorAreCheckedWithoutTheOperator) {
  try {
    check_plan_constant_limits(plan(launch("132", "256", R"(, "smem": 274080)")), launch_limits(90));
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "launch[0].smem")) << e.what();
    EXPECT_TRUE(has(e.what(), "from 0 to 232448")) << e.what();
  }
  EXPECT_THROW(check_plan_constant_limits(plan(launch("1", "64, 64")), launch_limits(90)), InputError);
  EXPECT_THROW(check_plan_constant_limits(plan(launch("\"num_sms * 0\"", "32")), launch_limits(90)), InputError);
  // What reads a tensor is left for the evaluation, and counted.
  EXPECT_EQ(check_plan_constant_limits(
                plan(launch("\"cdiv(numel(out), 256)\", \"num_sms\"", "256", R"(, "smem": "numel(x) * 1000")")),
                launch_limits(90)),
            2);
  EXPECT_EQ(check_plan_constant_limits(plan(launch("132", "256", R"(, "smem": 4096)")), launch_limits(90)), 0);
}

TEST(PlanLimits, ScalarArgumentsMustFitTheirType) {
  auto c = parse_candidate(R"(/*kagent
{"launch": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x", "i32:numel(x) * 4096"]}]}
*/)",
                           "cand.cu");
  auto msg = error_of(c);
  EXPECT_TRUE(has(msg, "launch[0].args[1]")) << msg;
  EXPECT_TRUE(has(msg, "does not fit i32")) << msg;
  c = parse_candidate(R"(/*kagent
{"launch": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x", "f32:1e300 * 10.0"]}]}
*/)",
                      "cand.cu");
  EXPECT_TRUE(has(error_of(c), "does not fit f32"));
  EXPECT_EQ(scalar_value_problem(ScalarType::u32, ExprValue{true, -1, 0}).value_or(""), "= -1 does not fit u32");
  EXPECT_FALSE(scalar_value_problem(ScalarType::i64, ExprValue{true, INT64_MIN, 0}));
}

TEST(PlanLimits, ScratchShapesAreEvaluatedToo) {
  const std::string huge =
      R"~("scratch": {"t": {"dtype": "f32", "shape": ["numel(x)", "numel(x)", "numel(x)", 9]}}, )~";
  auto msg = error_of(plan(launch("1", "32"), huge));
  EXPECT_TRUE(has(msg, "scratch.t.shape")) << msg;
  EXPECT_TRUE(has(msg, "overflows")) << msg;
  msg = error_of(plan(launch("\"t.shape[0] / 0\"", "32"), R"~("scratch": {"t": {"dtype": "f32", "shape": [8]}}, )~"));
  EXPECT_TRUE(has(msg, "division by zero")) << msg;
}

TEST(PlanLimits, NumSmsIsTheNominalCountWithoutAGpuAndAnOperatorScalarComesFirst) {
  EXPECT_EQ(launch_limits(90).device.num_sms, 132);
  Candidate ok = plan(launch("\"num_sms\"", "256"), R"~("scratch": {"p": {"dtype": "f32", "shape": ["num_sms"]}}, )~");
  EXPECT_NO_THROW(check_plan_limits(ok, vector_op(), launch_limits(90)));
  auto msg = error_of(plan(launch("\"num_sms * 20000000\"", "256")));
  EXPECT_TRUE(has(msg, "= 2640000000")) << msg;
  Op op = vector_op();
  op.scalars.push_back(ScalarArg{"num_sms", ExprValue{true, 0, 0}});  // the operator's own num_sms: 0
  try {
    check_plan_limits(plan(launch("\"num_sms\"", "256")), op, launch_limits(90));
    ADD_FAILURE() << "a grid of the operator's num_sms = 0 passed";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "'num_sms' = 0")) << e.what();
  }
}

TEST(PlanLimits, UnknownArchitecturesGetTheLargestSharedMemory) {
  EXPECT_EQ(launch_limits(90).dynamic_smem, 232448);
  EXPECT_EQ(launch_limits(75).dynamic_smem, 65536);
  EXPECT_EQ(launch_limits(0).dynamic_smem, 232448);
  EXPECT_EQ(launch_limits(90).threads_per_block, 1024);
}

namespace {

std::string plan_error(const std::string& plan_json) {
  try {
    parse_candidate("/*kagent\n" + plan_json + "\n*/\n", "cand.cu");
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

// Whether fn runs in a child process whose address space may grow by at most `headroom` bytes
// beyond what it holds now (an InputError is a normal end; running out of memory is not).
bool fits_in(size_t headroom, const std::function<void()>& fn) {
  pid_t pid = fork();
  if (pid == 0) {
    size_t vm_kb = 0;
    std::ifstream status("/proc/self/status");
    for (std::string l; std::getline(status, l);)
      if (l.rfind("VmSize:", 0) == 0) vm_kb = std::stoull(l.substr(7));
    rlimit r{vm_kb * 1024 + headroom, vm_kb * 1024 + headroom};
    if (vm_kb == 0 || setrlimit(RLIMIT_AS, &r) != 0) _exit(3);
    try {
      fn();
    } catch (const InputError&) {
    } catch (...) {
      _exit(2);  // std::bad_alloc
    }
    _exit(0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

// A syntactically fine plan of `n` launches, each with `args` tensor arguments.
std::string launches(int n, int args = 2) {
  std::string s = R"({"launch": [)";
  for (int i = 0; i < n; ++i) {
    s += std::string(i ? "," : "") + R"({"kernel": "k", "grid": [1], "block": [1], "args": [)";
    for (int a = 0; a < args; ++a) s += std::string(a ? "," : "") + "\"x\"";
    s += "]}";
  }
  return s + "]}";
}

}  // namespace

TEST(PlanParseLimits, APlanOverOneMebibyteIsRefusedBeforeItIsParsed) {
  // 16 MB of tensor arguments: it took some 50 times its size to parse.
  const std::string huge = launches(1, 4'000'000);
  ASSERT_GT(huge.size(), size_t{15} << 20);
  auto msg = plan_error(huge);
  EXPECT_TRUE(has(msg, "cand.cu:1: the launch plan is " + std::to_string(huge.size() + 2) + " bytes")) << msg;
  EXPECT_TRUE(has(msg, "at most 1048576 bytes")) << msg;
  std::string source = "/*kagent\n" + huge + "\n*/\n";  // made here: the child only parses
  EXPECT_TRUE(fits_in(size_t{64} << 20, [&] { parse_candidate(std::move(source), "cand.cu"); }))
      << "refusing a 16 MB plan must not cost its DOM";
}

TEST(PlanParseLimits, APlanOfTooManyValuesIsRefusedWhileItIsRead) {
  std::string many = R"({"launch": [)";
  for (int i = 0; i < 100'000; ++i) many += "[],";
  many += "[]]}";
  ASSERT_LT(many.size(), kMaxPlanBytes);
  auto msg = plan_error(many);
  EXPECT_TRUE(has(msg, "cand.cu:1: plan key launch[")) << msg;
  EXPECT_TRUE(has(msg, "more than 65536 values")) << msg;
  // The costliest plan the limits let through parses (or is refused) within a few MB.
  std::string worst = "{\"launch\": [";
  while (worst.size() < kMaxPlanBytes - 64 && worst.size() < 3 * kMaxPlanValues - 64) worst += "[],";
  worst += "[]]}";
  std::string source = "/*kagent\n" + worst + "\n*/\n";
  EXPECT_TRUE(fits_in(size_t{64} << 20, [&] { parse_candidate(std::move(source), "cand.cu"); }));
}

TEST(PlanParseLimits, PlansOfThousandsOfStepsStillParse) {
  const std::string plan = launches(4000);  // some 300 KB, 36001 values
  ASSERT_LT(plan.size(), kMaxPlanBytes);
  Candidate c = parse_candidate("/*kagent\n" + plan + "\n*/\n", "cand.cu");
  EXPECT_EQ(c.plan.launches.size(), 4000u);
}
