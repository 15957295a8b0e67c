// The profile as people and the agent read it, from a made-up evaluation: the full form carries
// the counters, the roofline against the measured peaks, the ideal time and the verdict; the
// agent's compact form is a header, one line per launch and the verdict.
#include <gtest/gtest.h>

#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/eval/profile_table.hpp"
#include "kagent/spec/candidate.hpp"

using namespace kagent;
using namespace kagent::profile;

namespace {

constexpr const char* kSource = R"~(/*kagent
{"launch": [
  {"kernel": "scale", "grid": ["cdiv(numel(x), 256)"], "block": [256], "args": ["x", "y", "i64:numel(x)"]},
  {"kernel": "reduce_rows", "grid": [1024], "block": [512], "smem": 4096, "args": ["y", "out"]}
]}
*/
extern "C" __global__ void scale(const float* x, float* y, long long n) {}
extern "C" __global__ void reduce_rows(const float* y, float* out) {}
)~";

struct Fixture {
  Op op;
  Candidate cand;
  CompileResult compiled;
  EvalReport rep;

  Fixture() : cand(parse_candidate(kSource, "cand.cu")) {
    op.name = "ScaleThenReduce";
    op.ref_kind = RefKind::cuda;
    op.inputs = {TensorSpec{"x", {4096, 4096}, DType::f32, {}}};
    op.outputs = {TensorSpec{"out", {4096}, DType::f32, {}}, TensorSpec{"y", {4096, 4096}, DType::f32, {}}};
    KernelInfo a, b;
    a.name = "scale";
    a.registers = 16;
    b.name = "reduce_rows";
    b.registers = 40;
    b.static_smem = 0;
    compiled.ok = true;
    compiled.kernels = {a, b};

    rep.ran = true;
    rep.outcome.correct = true;
    TimingSummary t;
    t.n = 40;
    t.median_ms = 0.200;
    rep.outcome.candidate_time = t;
    rep.outcome.bytes_moved = 3 * 4096 * 4096 * 4 + 4096 * 4;  // x read, y written, out written
    rep.outcome.launch_times = {{"scale", 0.150, 0.75, 0.148, {}}, {"reduce_rows", 0.050, 0.25, 0.049, {}}};
    KernelMetrics m0{"scale", 0.148, 88, 20, 85, 2, 0, 1.34e8, 1.68e7, 0};
    KernelMetrics m1{"reduce_rows", 0.049, 40, 35, 45, 10, 5, 6.7e7, 1.68e7, 0};
    rep.outcome.metrics = {m0, m1};
    DevicePeaks p;
    p.gpu = "GPU";
    p.copy_bytes = int64_t(1) << 30;
    p.copy_gbs = 3000;
    p.gemm_n = 8192;
    p.fp32_gflops = 48000;
    p.gemm_by = "cuBLAS";
    p.theoretical_gbs = 3350;
    p.theoretical_gflops = 67000;
    rep.peaks = p;
    rep.reward.tier = 2;
  }
};

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t nl; (nl = s.find('\n', start)) != std::string::npos; start = nl + 1)
    out.push_back(s.substr(start, nl - start));
  if (start < s.size()) out.push_back(s.substr(start));
  return out;
}

}  // namespace

TEST(ProfileRender, CompactIsAHeaderALinePerLaunchAndTheVerdict) {
  Fixture f;
  ProfileOutput out = render_profile(f.op, f.cand, f.compiled, &f.rep, "");
  auto l = lines(out.compact);
  ASSERT_EQ(l.size(), 4u) << out.compact;
  // 201 MB at 3000 GB/s: 0.0671 ms ideal, the plan at 2.98x.
  EXPECT_NE(l[0].find("ScaleThenReduce: median 0.2000 ms over 40 samples, tier 2; ideal 0.0671 ms (201.3 MB at "
                      "the measured 3000 GB/s), 2.98x"),
            std::string::npos)
      << l[0];
  EXPECT_EQ(l[1].rfind("#0 scale grid 65536 block 256, 16 regs, 0 B smem, occupancy 100%, achieved 85% | 0.1500 ms, "
                       "75% | DRAM 88% SM 20% L2 hit 2% L1 hit 0% | 905 GB/s, 114 GFLOP/s FP32, 30% of the memory "
                       "roof | memory-bound",
                       0),
            0u)
      << l[1];
  EXPECT_NE(l[2].find("#1 reduce_rows grid 1024 block 512, 40 regs, 4096 B smem"), std::string::npos) << l[2];
  EXPECT_NE(l[2].find("latency-bound"), std::string::npos) << l[2];
  EXPECT_EQ(l[3].rfind("verdict: launch 0 (scale, 75% of the time) is memory-bound: DRAM at 88%", 0), 0u) << l[3];
  EXPECT_NE(l[3].find("The plan takes 2.98x the ideal time of its bytes"), std::string::npos) << l[3];
}

TEST(ProfileRender, TensorPipeActivityIsMentionedOnlyWhenItIsReal) {
  Fixture f;
  f.rep.outcome.metrics[0].tensor_pct = 6;  // what a softmax without tensor-core code reads on the H100
  auto quiet = render_profile(f.op, f.cand, f.compiled, &f.rep, "").compact;
  EXPECT_EQ(quiet.find("tensor"), std::string::npos) << quiet;
  f.rep.outcome.metrics[0].tensor_pct = 40;
  auto busy = render_profile(f.op, f.cand, f.compiled, &f.rep, "").compact;
  EXPECT_NE(busy.find("L1 hit 0% tensor 40% |"), std::string::npos) << busy;
  EXPECT_NE(busy.find("(tensor cores busy 40% of the time; their work is not in the FP32 FLOP/s)"), std::string::npos)
      << busy;
}

TEST(ProfileRender, FullFormCarriesTheRooflineAndTheIdealTime) {
  Fixture f;
  ProfileOutput out = render_profile(f.op, f.cand, f.compiled, &f.rep, "");
  EXPECT_NE(out.text.find("ideal time: 0.0671 ms"), std::string::npos) << out.text;
  EXPECT_NE(
      out.text.find("roofline (roofs measured on this GPU: 3000 GB/s (device-to-device copy) over 1024 MiB, 48000 "
                    "GFLOP/s FP32 matrix product 8192^3 by cuBLAS"),
      std::string::npos)
      << out.text;
  EXPECT_NE(out.text.find("\nverdict: launch 0 (scale"), std::string::npos);
  const auto& j = out.record;
  EXPECT_NEAR(j.at("ideal_ms").get<double>(), 0.0671, 1e-4);
  EXPECT_EQ(j.at("peaks").at("copy_gbs"), 3000);
  ASSERT_EQ(j.at("counters").size(), 2u);
  EXPECT_EQ(j.at("counters")[0].at("roofline").at("roof"), "memory");
  EXPECT_NEAR(j.at("counters")[0].at("roofline").at("achieved_gbs").get<double>(), 905.4, 0.1);
  EXPECT_EQ(j.at("verdict").get<std::string>().rfind("launch 0 (scale", 0), 0u);
}

TEST(ProfileRender, SaysWhatIsMissing) {
  Fixture f;
  f.rep.outcome.metrics.clear();
  f.rep.outcome.metrics_note = "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  f.rep.peaks.reset();
  f.rep.peaks_note = "measuring the GPU's peaks: timed out";
  ProfileOutput out = render_profile(f.op, f.cand, f.compiled, &f.rep, "");
  auto l = lines(out.compact);
  ASSERT_EQ(l.size(), 4u) << out.compact;
  EXPECT_NE(l[0].find("no roofline (measuring the GPU's peaks: timed out)"), std::string::npos) << l[0];
  EXPECT_EQ(l[1].find("DRAM"), std::string::npos);
  EXPECT_NE(l[3].find("launch 0 (scale, 75% of the time) takes most of the time; no counters "
                      "(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)"),
            std::string::npos)
      << l[3];
  EXPECT_NE(out.text.find("roofline: not available (measuring the GPU's peaks: timed out)"), std::string::npos);

  // Without a GPU: the static figures and why there is nothing else.
  ProfileOutput none = render_profile(f.op, f.cand, f.compiled, nullptr, "no GPU: cuInit failed");
  auto n = lines(none.compact);
  ASSERT_EQ(n.size(), 4u) << none.compact;
  EXPECT_EQ(n[0], "ScaleThenReduce: not timed");
  EXPECT_EQ(n[3], "verdict: no timing (no GPU: cuInit failed): only the static figures above");
}

// A library step has no grid, block or registers of its own: its row is named by what the runner
// said it runs, and the kernels CUPTI saw for it are listed under the table and in the compact line.
TEST(ProfileRender, LibraryStepsAreNamedWithTheKernelsTheyRan) {
  constexpr const char* kGemmPlan = R"~(/*kagent
{"launch": [
  {"gemm": {"a": "x", "b": "w", "d": "y", "m": 64, "n": 32, "k": 16}},
  {"kernel": "relu", "grid": [8], "block": [256], "args": ["y", "i64:numel(y)"]}
]}
*/
extern "C" __global__ void relu(float* y, long long n) {}
)~";
  Op op;
  op.name = "LinearRelu";
  op.ref_kind = RefKind::cuda;
  op.inputs = {TensorSpec{"x", {64, 16}, DType::f32, {}}, TensorSpec{"w", {16, 32}, DType::f32, {}}};
  op.outputs = {TensorSpec{"y", {64, 32}, DType::f32, {}}};
  Candidate cand = parse_candidate(kGemmPlan, "cand.cu");
  CompileResult compiled;
  compiled.ok = true;
  KernelInfo relu;
  relu.name = "relu";
  relu.registers = 8;
  compiled.kernels = {relu};
  EvalReport rep;
  rep.ran = true;
  rep.outcome.correct = true;
  TimingSummary t;
  t.n = 20;
  t.median_ms = 0.030;
  rep.outcome.candidate_time = t;
  LaunchTime gemm{"cuBLASLt gemm 64x32x16 f32 (IEEE fp32)", 0.020, 0.66, 0.012, {"sm90_xmma_gemm_f32f32", "splitK"}};
  rep.outcome.launch_times = {gemm, {"relu", 0.010, 0.33, 0.004, {}}};
  ProfileOutput out = render_profile(op, cand, compiled, &rep, "");
  EXPECT_NE(out.text.find("cuBLASLt gemm 64x32x16 f32 (IEEE fp32)"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("launch 0 (gemm step) ran: sm90_xmma_gemm_f32f32, splitK"), std::string::npos) << out.text;
  EXPECT_NE(out.compact.find("#0 gemm step: cuBLASLt gemm"), std::string::npos) << out.compact;
  EXPECT_NE(out.compact.find("kernels: sm90_xmma_gemm_f32f32, splitK"), std::string::npos) << out.compact;
  EXPECT_NE(out.compact.find("#1 relu grid 8 block 256, 8 regs"), std::string::npos) << out.compact;
  EXPECT_EQ(out.record["launches"][0]["library"], "gemm");
  EXPECT_EQ(out.record["launches"][0]["library_kernels"].size(), 2u);
}

// With the operator's FLOPs known, the ideal time is the larger floor: a GEMM-bound plan is measured
// against its FLOPs at the fastest measured rate fp32 allows (3xTF32 here), not against its bytes.
TEST(ProfileRender, IdealTimeIsTheLargerOfTheMemoryAndComputeFloors) {
  Fixture f;
  f.op.flops = 2.0 * 4096 * 4096 * 4096;  // 137 GFLOP
  f.op.flops_source = "given by the op.json";
  f.rep.peaks->tf32_mma_gflops = 360000;  // 3xTF32: 120000 GFLOP/s, above FP32's 48000
  f.rep.outcome.candidate_time->median_ms = 2.0;
  ProfileOutput out = render_profile(f.op, f.cand, f.compiled, &f.rep, "");
  // 1.374e11 / 120e12 = 1.1453 ms; the bytes alone 0.0671 ms.
  auto l = lines(out.compact);
  EXPECT_NE(l[0].find("ideal 1.1453 ms (137 GFLOP at the measured 3xTF32 mma.sync 120.0 TFLOP/s; its bytes 0.0671 "
                      "ms), 1.75x"),
            std::string::npos)
      << l[0];
  EXPECT_NE(out.compact.find("the ideal time of its FLOPs (1.1453 ms: 137 GFLOP at the 120.0 TFLOP/s 3xTF32 "
                             "mma.sync rate"),
            std::string::npos)
      << out.compact;
  EXPECT_NE(out.text.find("compute floor at the measured rates fp32 allows: 1.1453 ms"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("FP32 FFMA 48.0 TFLOP/s: 2.8633 ms"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("ideal time: 1.1453 ms (the larger floor: compute)"), std::string::npos) << out.text;
  EXPECT_NEAR(out.record.at("ideal_ms").get<double>(), 1.1453, 1e-4);
  EXPECT_NEAR(out.record.at("memory_floor_ms").get<double>(), 0.0671, 1e-4);
  EXPECT_NE(out.text.find("tensor-core rates measured on this GPU (mma.sync from registers): TF32 m16n8k8 360000"),
            std::string::npos)
      << out.text;

  // A memory-bound plan with FLOPs known keeps its bytes' ideal and names the compute floor beside it.
  f.op.flops = 1e6;
  f.rep.outcome.candidate_time->median_ms = 0.2;
  ProfileOutput mem = render_profile(f.op, f.cand, f.compiled, &f.rep, "");
  EXPECT_NE(mem.compact.find("ideal 0.0671 ms (201.3 MB at the measured 3000 GB/s), 2.98x (its FLOPs 0.0000 ms at "
                             "3xTF32 mma.sync)"),
            std::string::npos)
      << mem.compact;
}

// A graph plan's counters were taken launch by launch, and the profile says so; a library step's
// counters (its kernels summed) show on its line with the limiter.
TEST(ProfileRender, CountersOfGraphPlansAndLibraryStepsAreShown) {
  Fixture f;
  f.rep.outcome.metrics_replay = "this pass ran the plan's launches one by one, not as its CUDA graph";
  ProfileOutput out = render_profile(f.op, f.cand, f.compiled, &f.rep, "");
  auto l = lines(out.compact);
  ASSERT_EQ(l.size(), 5u) << out.compact;
  EXPECT_EQ(l[1], "counters: this pass ran the plan's launches one by one, not as its CUDA graph");
  EXPECT_NE(out.text.find("after an L2 flush; this pass ran the plan's launches one by one"), std::string::npos)
      << out.text;
  EXPECT_EQ(out.record.at("counters_replay"), "this pass ran the plan's launches one by one, not as its CUDA graph");

  constexpr const char* kGemmPlan = R"~(/*kagent
{"graph": true, "launch": [
  {"gemm": {"a": "x", "b": "w", "d": "y", "m": 64, "n": 32, "k": 16}},
  {"kernel": "relu", "grid": [8], "block": [256], "args": ["y", "i64:numel(y)"]}
]}
*/
extern "C" __global__ void relu(float* y, long long n) {}
)~";
  Op op;
  op.name = "LinearRelu";
  op.ref_kind = RefKind::cuda;
  op.inputs = {TensorSpec{"x", {64, 16}, DType::f32, {}}, TensorSpec{"w", {16, 32}, DType::f32, {}}};
  op.outputs = {TensorSpec{"y", {64, 32}, DType::f32, {}}};
  Candidate cand = parse_candidate(kGemmPlan, "cand.cu");
  CompileResult compiled;
  compiled.ok = true;
  KernelInfo relu;
  relu.name = "relu";
  compiled.kernels = {relu};
  EvalReport rep;
  rep.ran = true;
  rep.outcome.correct = true;
  TimingSummary t;
  t.n = 20;
  t.median_ms = 0.030;
  rep.outcome.candidate_time = t;
  rep.outcome.launch_times = {{"cuBLASLt gemm 64x32x16 f32 (IEEE fp32)", 0.020, 0.66, 0.012, {"sm90_xmma"}},
                              {"relu", 0.010, 0.33, 0.004, {}}};
  rep.outcome.metrics = {{"cuBLASLt gemm 64x32x16 f32 (IEEE fp32)", 0.012, 10, 30, 40, 80, 20, 1e5, 0, 65},
                         {"relu", 0.004, 70, 10, 60, 50, 0, 1.6e4, 2048, 0}};
  ProfileOutput lib = render_profile(op, cand, compiled, &rep, "");
  EXPECT_NE(lib.compact.find("#0 gemm step: cuBLASLt gemm 64x32x16 f32 (IEEE fp32) | 0.0200 ms, 66% | kernels: "
                             "sm90_xmma | DRAM 10% SM 30% tensor 65% | compute-bound"),
            std::string::npos)
      << lib.compact;
  EXPECT_NE(lib.text.find("launch 0 (cuBLASLt gemm 64x32x16 f32 (IEEE fp32)): compute-bound: tensor pipe busy 65%"),
            std::string::npos)
      << lib.text;
}
