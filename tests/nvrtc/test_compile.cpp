// NVRTC compilation: needs the CUDA toolkit, not a GPU, so these run in CI.
#include <gtest/gtest.h>

#include <future>

#include <fmt/format.h>

#include "kagent/agent/task_text.hpp"
#include "kagent/common/error.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/eval/harness_source.hpp"
#include "kagent/spec/plan_check.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

constexpr const char* kPlan = R"~(/*kagent
{"launch": [{"kernel": "k_shared", "grid": [1], "block": [256], "args": ["x", "y", "i32:numel(x)"]}]}
*/
)~";

std::string with_plan(const std::string& body) {
  return std::string(kPlan) + body;
}

// A plan launching k(x, y) before `body`.
std::string with_plan_for_k(const std::string& body) {
  return fmt::format("{}{}", R"~(/*kagent
{"launch": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x", "y"]}]}
*/
)~",
                     body);
}

const std::string kSharedKernel = with_plan(R"~(
extern "C" __global__ void __launch_bounds__(256) k_shared(const float* x, float* y, int n) {
  __shared__ float tile[512];
  int i = threadIdx.x;
  tile[i] = i < n ? x[i] : 0.f;
  tile[i + 256] = 0.f;
  __syncthreads();
  if (i < n) y[i] = tile[(i + 1) % 256];
}
)~");

Candidate make(const std::string& source, const std::string& name = "cand.cu") {
  return parse_candidate(source, name);
}

class CompileTest : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::shared_ptr<CompileCache> cache = std::make_shared<CompileCache>(dir.path());
  Compiler compiler{find_cuda_paths(), cache};
};

}  // namespace

// kagent's own kernels (fill, compare, flush, guard bands, digests, the FP32-peak matrix product,
// the mma.sync roofs) compile for every architecture kagent targets, and the matrix product keeps its 8x8 tile in
// registers: a spill would make the measured FP32 roof a memory benchmark.
TEST_F(CompileTest, HarnessKernelsCompileAndThePeakProductDoesNotSpill) {
  for (const char* arch : {"sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"}) {
    SCOPED_TRACE(arch);
    auto r = compiler.compile(harness_kernels(), arch);
    ASSERT_TRUE(r.ok) << r.log;
    auto k = std::find_if(r.kernels.begin(), r.kernels.end(),
                          [](const KernelInfo& ki) { return ki.name == "kagent_peak_sgemm"; });
    ASSERT_NE(k, r.kernels.end());
    EXPECT_EQ(k->spill_stores, 0);
    EXPECT_EQ(k->spill_loads, 0);
    EXPECT_EQ(k->stack_frame, 0);
    EXPECT_LE(k->registers, 255);
    EXPECT_EQ(k->static_smem, 2 * 2 * 8 * 128 * 4);  // A and B tiles, double-buffered
    // The tensor-core roofs (src/runner/peaks.cpp): each mma.sync kind with its 8 chains of 4 fp32
    // accumulators and 6 operand registers live in registers (38 at least: the instructions are
    // there, not the empty body of architectures without them), nothing in local memory.
    for (const char* name : {"kagent_peak_mma_tf32", "kagent_peak_mma_f16", "kagent_peak_mma_bf16"}) {
      SCOPED_TRACE(name);
      auto m = std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == name; });
      ASSERT_NE(m, r.kernels.end());
      EXPECT_EQ(m->param_sizes, (std::vector<uint32_t>{4, 4, 8}));
      EXPECT_GE(m->registers, 38);
      EXPECT_EQ(m->spill_stores, 0);
      EXPECT_EQ(m->stack_frame, 0);
    }
    // The FP64 roofs: DMMA's 8 chains of 2 doubles and DFMA's 8 doubles in registers, nothing in
    // local memory (the DMMA kernel is empty below sm_80, where the host does not launch it).
    for (const char* name : {"kagent_peak_mma_f64", "kagent_peak_dfma"}) {
      SCOPED_TRACE(name);
      auto m = std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == name; });
      ASSERT_NE(m, r.kernels.end());
      EXPECT_EQ(m->param_sizes, (std::vector<uint32_t>{4, 4, 8}));
      EXPECT_GE(m->registers, 16);
      EXPECT_EQ(m->spill_stores, 0);
      EXPECT_EQ(m->stack_frame, 0);
    }
    // The memory roofs: 16-byte streaming kernels whose parameters the host passes as these sizes,
    // with nothing in local memory.
    const std::pair<const char*, std::vector<uint32_t>> streams[] = {
        {"kagent_peak_read", {8, 8, 4, 8}}, {"kagent_peak_write", {8, 8, 4}}, {"kagent_peak_copy", {8, 8, 8}}};
    for (const auto& [name, params] : streams) {
      SCOPED_TRACE(name);
      auto m = std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == name; });
      ASSERT_NE(m, r.kernels.end());
      EXPECT_EQ(m->param_sizes, params);
      EXPECT_EQ(m->stack_frame, 0);
      EXPECT_EQ(m->spill_stores, 0);
    }
    // The guard bands' and seals' kernels (src/runner/bounds_check.cpp), without local memory.
    for (const char* name : {"kagent_guard_fill", "kagent_guard_check", "kagent_digest"}) {
      SCOPED_TRACE(name);
      auto g = std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == name; });
      ASSERT_NE(g, r.kernels.end());
      EXPECT_EQ(g->stack_frame, 0);
      EXPECT_EQ(g->spill_stores, 0);
    }
  }
}

// The compare kernels are built from the element rule the host shares (compare_rule.hpp, pasted in
// by CMake: NVRTC has no include path for it), one without the fp64 reference and, for floating
// outputs, one with it (compare64), both taking out, ref, ref64, n, atol, rtol, stats; none spills.
TEST_F(CompileTest, CompareKernelsUseTheSharedRuleAndTakeTheFp64Reference) {
  const Candidate h = harness_kernels();
  EXPECT_EQ(h.source.find("#include \"kagent/protocol/compare_rule.hpp\""), std::string::npos);
  EXPECT_NE(h.source.find("element_verdict"), std::string::npos);
  auto r = compiler.compile(h, "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  auto find = [&](const std::string& name) {
    return std::find_if(r.kernels.begin(), r.kernels.end(), [&](const KernelInfo& ki) { return ki.name == name; });
  };
  for (const char* kind : {"compare", "compare64"})
    for (const char* dt : {"f32", "f16", "bf16", "f64", "i32", "bool"}) {
      SCOPED_TRACE(std::string(kind) + " " + dt);
      const auto k = find(fmt::format("kagent_{}_{}", kind, dt));
      // Only floating outputs have an fp64 twin.
      if (std::string(kind) == "compare64" && (std::string(dt) == "i32" || std::string(dt) == "bool")) {
        EXPECT_EQ(k, r.kernels.end());
        continue;
      }
      ASSERT_NE(k, r.kernels.end());
      EXPECT_EQ(k->param_sizes, (std::vector<uint32_t>{8, 8, 8, 8, 8, 8, 8}));
      EXPECT_EQ(k->spill_stores, 0);
    }
}

TEST_F(CompileTest, ResourceTable) {
  auto r = compiler.compile(make(kSharedKernel), "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  ASSERT_EQ(r.kernels.size(), 1u);
  const auto& k = r.kernels[0];
  EXPECT_EQ(k.name, "k_shared");
  EXPECT_GT(k.registers, 0);
  EXPECT_EQ(k.static_smem, 2048);
  EXPECT_EQ(k.launch_bounds, 256);
  EXPECT_EQ(k.max_threads_per_block, 256);
  EXPECT_EQ(k.spill_stores, 0);
  EXPECT_EQ(k.param_sizes, (std::vector<uint32_t>{8, 8, 4}));
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_FALSE(r.cache_hit);
}

TEST_F(CompileTest, SecondCompileIsACacheHit) {
  auto first = compiler.compile(make(kSharedKernel), "sm_90a");
  auto second = compiler.compile(make(kSharedKernel), "sm_90a");
  ASSERT_TRUE(first.ok && second.ok);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(first.cubin, second.cubin);
  EXPECT_EQ(first.key, second.key);
  ASSERT_EQ(second.kernels.size(), 1u);
  EXPECT_EQ(second.kernels[0].static_smem, 2048);
  // A fresh compiler over the same folder (another process) hits too.
  Compiler other(find_cuda_paths(), std::make_shared<CompileCache>(dir.path()));
  EXPECT_TRUE(other.compile(make(kSharedKernel), "sm_90a").cache_hit);
}

TEST_F(CompileTest, ArchAndOptionsAreInTheKey) {
  auto a = compiler.compile(make(kSharedKernel), "sm_90a");
  auto b = compiler.compile(make(kSharedKernel), "sm_80");
  ASSERT_TRUE(a.ok && b.ok);
  EXPECT_NE(a.key, b.key);
  EXPECT_FALSE(b.cache_hit);
  std::string fast = kSharedKernel;
  const std::string tail = "\"i32:numel(x)\"]}]";
  fast.insert(fast.find(tail) + tail.size(), R"~(, "options": ["--use_fast_math"])~");
  auto c = compiler.compile(make(fast), "sm_90a");
  ASSERT_TRUE(c.ok) << c.log;
  EXPECT_NE(a.key, c.key);
  EXPECT_FALSE(c.cache_hit);
}

TEST_F(CompileTest, CandidateOptionsReachNvrtc) {
  std::string src = R"~(/*kagent
{"launch": [{"kernel": "k", "grid": [1], "block": [32], "args": ["x"]}], "options": ["--maxrregcount=32", "--use_fast_math"]}
*/
extern "C" __global__ void k(float* x) { x[threadIdx.x] = __expf(x[threadIdx.x]); }
)~";
  auto r = compiler.compile(make(src), "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  EXPECT_EQ(r.options.back(), "--use_fast_math");
  EXPECT_LE(r.kernels.at(0).registers, 32);
}

TEST_F(CompileTest, HeadersForHalfBf16PipelineMmaCooperativeGroups) {
  std::string src = R"~(/*kagent
{"launch": [{"kernel": "k", "grid": [1], "block": [64], "smem": 256, "args": ["x", "y"]}]}
*/
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <mma.h>
#include <cooperative_groups.h>
#include <cuda/pipeline>
namespace cg = cooperative_groups;
extern "C" __global__ void k(const __nv_bfloat16* x, float* y) {
  extern __shared__ __nv_bfloat16 buf[];
  auto block = cg::this_thread_block();
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  pipe.producer_acquire();
  cuda::memcpy_async(&buf[threadIdx.x], &x[threadIdx.x], sizeof(__nv_bfloat16), pipe);
  pipe.producer_commit();
  cuda::pipeline_consumer_wait_prior<0>(pipe);
  block.sync();
  __half h = __float2half(__bfloat162float(buf[threadIdx.x]));
  y[threadIdx.x] = __half2float(h);
}
)~";
  auto r = compiler.compile(make(src), "sm_90a");
  EXPECT_TRUE(r.ok) << r.log;
}

// The headers the prompts name (candidate_headers, rendered into the guide) compile in a candidate,
// through the compile worker as the model's candidates do; the host headers the guide says are
// missing are missing.
TEST_F(CompileTest, EveryHeaderThePromptsNameCompilesAndHostHeadersDoNot) {
  std::string includes;
  for (const auto& h : candidate_headers()) includes += fmt::format("#include <{}>\n", h);
  const std::string body = R"~(
extern "C" __global__ void k(const float* x, float* y) { y[threadIdx.x] = x[threadIdx.x] + CUDART_PI_F; }
)~";
  auto r = compiler.compile(make(with_plan_for_k(fmt::format("{}{}", includes, body))), "sm_90a");
  EXPECT_TRUE(r.ok) << r.log;
  for (const char* host : {"cstdint", "cmath", "climits"}) {
    auto h = compiler.compile(make(with_plan_for_k(fmt::format("#include <{}>\n{}", host, body))), "sm_90a");
    EXPECT_FALSE(h.ok) << host << " compiled: the guide says host headers are not there";
  }
}

// The task's example, written with the operator's names and types, compiles once its bodies are
// filled in, and its plan matches the kernels' parameters.
TEST_F(CompileTest, TheTasksCandidateExampleCompilesAndMatchesItsPlan) {
  Op op;
  op.ref_kind = RefKind::python;
  TensorSpec in, out;
  in.name = "predictions";
  in.shape = {128, 4096};
  in.dtype = DType::bf16;
  out.name = "loss";
  out.shape = {};
  op.inputs = {in};
  op.outputs = {out};
  ScalarArg s;
  s.name = "margin";
  s.value.is_int = true;
  s.value.i = 2;
  op.scalars = {s};
  std::string ex = agent::candidate_example(op);
  for (size_t at = ex.find("{ ... }"); at != std::string::npos; at = ex.find("{ ... }")) ex.replace(at, 7, "{}");
  auto r = compiler.compile(make(fmt::format("#include <cuda_bf16.h>\n{}", ex)), "sm_90a");
  ASSERT_TRUE(r.ok) << r.log << ex;
  EXPECT_NO_THROW(check_plan_kernels(make(ex), kernel_signatures(r.kernels))) << ex;
}

TEST_F(CompileTest, CompileErrorUsesTheCandidatesLineNumbers) {
  // The plan block takes lines 1-3, a blank line 4, the signature line 5: the error is on line 6.
  std::string src = with_plan(
      "\nextern \"C\" __global__ void k_shared(const float* x, float* y, int n) {\n"
      "  y[0] = undeclared_thing;\n}\n");
  auto r = compiler.compile(make(src, "dir/my_cand.cu"), "sm_90a");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.log.find("dir/my_cand.cu(6): error"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("undeclared_thing"), std::string::npos);
  EXPECT_TRUE(r.kernels.empty());
}

TEST_F(CompileTest, BadArchIsInputError) {
  EXPECT_THROW(compiler.compile(make(kSharedKernel), "sm_1"), InputError);
  EXPECT_THROW(compiler.compile(make(kSharedKernel), "compute_90"), InputError);
}

TEST_F(CompileTest, PlanCheckedAgainstCompiledKernels) {
  std::string src = R"~(/*kagent
{"launch": [{"kernel": "missing_kernel", "grid": [1], "block": [32], "args": ["x"]}]}
*/
extern "C" __global__ void present(float* x) { x[0] = 1.f; }
)~";
  auto cand = make(src);
  auto r = compiler.compile(cand, "sm_90a");
  ASSERT_TRUE(r.ok) << r.log;
  try {
    check_plan_kernels(cand, kernel_signatures(r.kernels));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("missing_kernel"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("present"), std::string::npos) << e.what();
  }
}

TEST_F(CompileTest, ConcurrentCompilesOfOneCandidate) {
  auto run = [&] { return compiler.compile(make(kSharedKernel), "sm_90a"); };
  auto a = std::async(std::launch::async, run);
  auto b = std::async(std::launch::async, run);
  auto ra = a.get(), rb = b.get();
  ASSERT_TRUE(ra.ok && rb.ok);
  EXPECT_EQ(ra.cubin.size(), rb.cubin.size());
  EXPECT_TRUE(compiler.compile(make(kSharedKernel), "sm_90a").cache_hit);
}
