// What the model reads (issue 17): the task prompt's numbers and plurals, the candidate example in
// the operator's own names, the memory-floor line, the tools' arguments from their schemas, and the
// header and dtype lists rendered from the code that enforces them into the one place that names
// them. KAGENT_PRINT_PROMPTS=1 prints the rendered prompts of level1/88 for reading.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>

#include <fmt/format.h>

#include "kagent/agent/prompts.hpp"
#include "kagent/agent/task_text.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/model_tools/file_tools.hpp"
#include "kagent/model_tools/kernel_tools.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/plan_check.hpp"
#include "kagent/spec/plan_limits.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TensorSpec tensor(std::string name, std::vector<int64_t> shape, DType dtype = DType::f32) {
  TensorSpec t;
  t.name = std::move(name);
  t.shape = std::move(shape);
  t.dtype = dtype;
  return t;
}

// An operator as the reference server describes one: the tensors filled in.
Op op_with(std::vector<TensorSpec> inputs, std::vector<TensorSpec> outputs, const std::filesystem::path& reference) {
  Op op;
  op.name = "test_op";
  op.ref_kind = RefKind::python;
  op.reference = reference;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  return op;
}

// level1/88_MinGPTNewGelu: x [8192, 8192] -> out, 2 x 256 MiB.
Op gelu(const std::filesystem::path& reference) {
  return op_with({tensor("x", {8192, 8192})}, {tensor("out", {8192, 8192})}, reference);
}

constexpr double kCopyGbs = 2975;  // an H100 SXM's measured copy bandwidth (benchmarks/RESULTS.md)

agent::TimingFacts timing(std::optional<double> eager, std::optional<double> compile) {
  agent::TimingFacts t;
  t.eager_ms = eager;
  t.compile_ms = compile;
  t.compile_missing = "it failed";
  t.bandwidth_gbs = kCopyGbs;
  t.bandwidth_source = "this GPU's measured copy bandwidth";
  return t;
}

class Prompts : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::filesystem::path ref = dir.write("ref.py", "class Model: ...\n");
};

}  // namespace

// "1 turns" once reached the model. Every count in the budget line agrees with its noun.
TEST_F(Prompts, BudgetNumbersAndPlurals) {
  auto budget = [](int turns, double minutes, int64_t tokens) {
    agent::AgentOptions o;
    o.max_turns = turns;
    o.max_minutes = minutes;
    o.max_tokens = tokens;
    return agent::budget_text(o);
  };
  EXPECT_EQ(budget(1, 1, 0), "1 turn, 1 minute");
  EXPECT_EQ(budget(40, 60, 0), "40 turns, 60 minutes");
  EXPECT_EQ(budget(2, 1.5, 1), "2 turns, 1.5 minutes, 1 token");
  EXPECT_EQ(budget(1, 0.5, 2000000), "1 turn, 0.5 minutes, 2000000 tokens");
  // As the model reads it: a turn is defined right after the numbers.
  agent::AgentOptions one;
  one.max_turns = 1;
  one.max_minutes = 1;
  model_tools::ToolSet none;
  auto values = agent::task_values(gelu(ref), gelu(ref), timing(1.0, 0.5), "a GPU", one, none, "");
  auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
  EXPECT_NE(opening[1].content.find("1 turn, 1 minute. A turn is one reply of yours"), std::string::npos)
      << opening[1].content;
  EXPECT_EQ(opening[1].content.find("1 turns"), std::string::npos);
  EXPECT_EQ(opening[1].content.find("1 minutes"), std::string::npos);
}

// The example plan and kernels use the task's own tensors (no "x" where the operator has none),
// their element types, and a scalar argument when there is one; the plan refers to nothing but the
// operator's names and its own scratch buffer.
TEST_F(Prompts, CandidateExampleUsesTheTasksNames) {
  Op loss = op_with({tensor("predictions", {128, 4096}, DType::f16), tensor("targets", {128, 4096}, DType::i64)},
                    {tensor("out", {})}, ref);
  ScalarArg margin;
  margin.name = "margin";
  margin.value.is_int = false;
  margin.value.f = 1.0;
  loss.scalars.push_back(margin);
  const std::string ex = agent::candidate_example(loss);
  EXPECT_NE(ex.find("\"predictions\""), std::string::npos) << ex;
  EXPECT_NE(ex.find("const __half* predictions"), std::string::npos) << ex;
  EXPECT_NE(ex.find("float* out"), std::string::npos) << ex;
  EXPECT_NE(ex.find("\"f32:margin\""), std::string::npos) << ex;
  EXPECT_NE(ex.find("float margin"), std::string::npos) << ex;
  EXPECT_EQ(ex.find("\"x\""), std::string::npos) << ex;
  EXPECT_EQ(ex.find("numel(x)"), std::string::npos) << ex;
  Candidate c = parse_candidate(ex, "example.cu");
  EXPECT_NO_THROW(check_plan_tensors(c, loss.tensor_names(), loss.scalar_names())) << ex;

  // A scratch name that would clash with the operator's is changed.
  Op clash = op_with({tensor("partial", {16})}, {tensor("out", {16})}, ref);
  Candidate c2 = parse_candidate(agent::candidate_example(clash), "example.cu");
  EXPECT_NO_THROW(check_plan_tensors(c2, clash.tensor_names(), clash.scalar_names()));

  // In the task prompt, through the template.
  auto values = agent::task_values(loss, loss, timing(1.0, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  EXPECT_NE(values.at("candidate_format").find("predictions"), std::string::npos);
}

// A floor that a baseline beats is said to be no bound, and tier 3 is never called out of reach
// then (level1/12, diag(A) @ B on an H100: 134 MB at the measured 2967 GB/s is 0.0452 ms, where
// torch.compile takes 0.0428 ms, 3.1 TB/s).
// The reference's own error against fp64 is stated under Correctness; where the reference itself
// would fail the tolerance against fp64 (level3/48 Mamba2's cumulative sums of exponentials need 12
// where the tolerance is 1e-4), the task says what that means for a candidate's summation order.
TEST_F(Prompts, TheReferencesOwnErrorAgainstFp64IsStated) {
  agent::TimingFacts t = timing(1.0, 0.5);
  const Tolerance tol{1e-4, 1e-4};
  EXPECT_EQ(agent::reference_error_text(t, Precision::fp32, tol), "");  // not measured: nothing said
  OutputPrecision well{"out", {}, ""};
  well.own = ReferenceError{"fp32", 3.1e-7, 2.4e-6, 3.6e-7};
  t.reference_precision = PrecisionFigures{"fp32", {well}};
  const std::string plain = agent::reference_error_text(t, Precision::fp32, tol);
  EXPECT_NE(plain.find("The reference's own error against its float64 result, on one input set: `out` relative L2 "
                       "3.1e-07, largest element error 2.4e-06."),
            std::string::npos)
      << plain;
  EXPECT_EQ(plain.find("ill-conditioned"), std::string::npos) << plain;

  OutputPrecision mamba{"y", {}, ""};
  mamba.own = ReferenceError{"fp32", 2.2e-6, 4.1e9, 12.0};
  t.reference_precision = PrecisionFigures{"fp32", {well, mamba}};
  const std::string ill = agent::reference_error_text(t, Precision::fp32, tol);
  EXPECT_NE(ill.find("`y` relative L2 2.2e-06, largest element error 4.1e+09."), std::string::npos) << ill;
  EXPECT_NE(ill.find("On `y` (it would need 12) the reference itself is outside the tolerance of the float64 result: "
                     "at fp32 this operator is ill-conditioned"),
            std::string::npos)
      << ill;
  EXPECT_NE(ill.find("accumulate in float64"), std::string::npos) << ill;
  // At the CUDA Agent paper's 1e-2 the same reference still needs 12: said too; at 20 it is not.
  EXPECT_NE(agent::reference_error_text(t, Precision::fp32, {1e-2, 1e-2}).find("ill-conditioned"), std::string::npos);
  EXPECT_EQ(agent::reference_error_text(t, Precision::fp32, {20, 20}).find("ill-conditioned"), std::string::npos);

  // Through the template: the Correctness section carries it after the precision rule.
  auto values = agent::task_values(gelu(ref), gelu(ref), t, "a GPU", {}, model_tools::ToolSet{}, "");
  const std::string& precision = values.at("precision");
  EXPECT_LT(precision.find("Precision fp32"), precision.find("The reference's own error")) << precision;
}

// The reference's own GEMMs and convolutions timed alone (issue 42, item 10): each distinct call with
// its arguments, library and count, a convolution at PyTorch's algorithm and cuDNN's fastest, the
// rows beyond the cap counted with their time, and the sum against eager; through the template in
// the baselines block, after the floors. The server's JSON (tools/kagent_ref/library_times.py) reads
// into the same struct, an untimed call included.
TEST_F(Prompts, TheReferencesLibraryCallsAreTimedInTheTask) {
  agent::TimingFacts t = timing(1.0, 0.5);
  const nlohmann::json reply = {
      {"calls",
       {{{"kind", "conv"},
         {"library", "cuDNN"},
         {"op", "aten.convolution"},
         {"args", "input [16, 64, 128, 128] float32, weight [128, 64, 3, 3] float32, stride [1, 1]"},
         {"calls", 1},
         {"median_ms", 0.41},
         {"fastest_ms", 0.30}},
        {{"kind", "gemm"},
         {"library", "cuBLAS"},
         {"op", "aten.addmm"},
         {"args", "self [1024] float32, mat1 [128, 4096] float32, mat2 [4096, 1024] float32 strides (1, 4096)"},
         {"calls", 3},
         {"median_ms", 0.05}},
        {{"kind", "gemm"},
         {"library", "cuBLAS"},
         {"op", "aten.mm"},
         {"args", "late"},
         {"calls", 2},
         {"median_ms", nullptr}}}},
      {"total_ms", 0.56},
      {"note", "1 of 3 distinct calls untimed: the measurement's 60 s were spent"},
      {"cached", false}};
  const RefLibraryTimes lib = reply.get<RefLibraryTimes>();
  ASSERT_EQ(lib.calls.size(), 3u);
  EXPECT_FALSE(lib.calls[2].median_ms.has_value());
  EXPECT_EQ(nlohmann::json(lib).get<RefLibraryTimes>().calls[0].fastest_ms, 0.30);  // round trip

  const std::string text = library_times_text(lib, 0.70);
  EXPECT_NE(text.find("- aten.convolution (cuDNN) input [16, 64, 128, 128] float32, weight [128, 64, 3, 3] float32, "
                      "stride [1, 1]: 0.4100 ms as PyTorch runs it, 0.3000 ms fastest; 1 call per forward\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- aten.addmm (cuBLAS) self [1024] float32, mat1 [128, 4096] float32, mat2 [4096, 1024] float32 "
                      "strides (1, 4096): 0.0500 ms; 3 calls per forward\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- aten.mm (cuBLAS) late: not timed; 2 calls per forward"), std::string::npos) << text;
  EXPECT_NE(text.find("Together 0.5600 ms per forward against torch eager's 0.7000 ms (80%); the rest is the work"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("(1 of 3 distinct calls untimed"), std::string::npos) << text;
  EXPECT_NE(text.find("\"fastest\" the fastest that PyTorch's benchmark mode finds"), std::string::npos) << text;
  EXPECT_NE(text.find("so a step's time is near these and can be lower: evaluate one to know it"), std::string::npos)
      << text;
  // About eager's time: said as such; more than eager: the flushed L2's doing, not work between the calls.
  EXPECT_NE(library_times_text(lib, 0.565).find("(99%): eager's time is its library calls"), std::string::npos);
  EXPECT_NE(library_times_text(lib, 0.5).find("more than eager, since alone each call starts from a flushed L2"),
            std::string::npos);
  // The cap counts the rest with their time; no convolution, no word of cuDNN's algorithms.
  RefLibraryTimes gemms = lib;
  gemms.calls.erase(gemms.calls.begin());
  const std::string capped = library_times_text(gemms, std::nullopt, 1);
  EXPECT_NE(capped.find("- and 1 more distinct call (not timed)"), std::string::npos) << capped;
  EXPECT_EQ(capped.find("\"fastest\""), std::string::npos) << capped;
  EXPECT_EQ(capped.find("eager"), std::string::npos) << capped;
  EXPECT_EQ(library_times_text(RefLibraryTimes{}, 0.7), "");  // no library call: nothing said

  // kagent's own steps for the same calls, timed: each beside its call, their sum against PyTorch's
  // for the same calls (a convolution's at its fastest), and no "evaluate one to know it".
  RefLibraryTimes stepped = lib;
  stepped.calls[0].plan = {{"scratch", nlohmann::json::object()}, {"launch", nlohmann::json::array()}};
  stepped.calls[0].step_ms = 0.25;
  stepped.calls[0].step = "cuDNN convolution";
  stepped.calls[1].step_error = "library step 1: plan key launch[0].gemm.a: 'a' is too small\nsecond line";
  stepped.calls[2].plan_note = "addbmm sums its products over the batch: no one gemm step";
  const RefLibraryTimes round = nlohmann::json(stepped).get<RefLibraryTimes>();
  EXPECT_EQ(round.calls[0].step_ms, 0.25);
  EXPECT_EQ(round.calls[0].plan, stepped.calls[0].plan);
  EXPECT_EQ(round.calls[1].step_error, stepped.calls[1].step_error);
  EXPECT_EQ(round.calls[2].plan_note, stepped.calls[2].plan_note);
  const std::string with_steps = library_times_text(stepped, 0.70);
  EXPECT_NE(with_steps.find("0.4100 ms as PyTorch runs it, 0.3000 ms fastest; kagent's conv step 0.2500 ms; 1 call"),
            std::string::npos)
      << with_steps;
  EXPECT_NE(with_steps.find("0.0500 ms; kagent's gemm step failed (library step 1: plan key launch[0].gemm.a: 'a' "
                            "is too small); 3 calls"),
            std::string::npos)
      << with_steps;
  EXPECT_NE(with_steps.find("not timed; no one gemm step expresses it (addbmm sums its products over the batch: no "
                            "one gemm step); 2 calls"),
            std::string::npos)
      << with_steps;
  EXPECT_NE(with_steps.find("kagent's steps: 0.2500 ms per forward against 0.3000 ms for the same calls as PyTorch "
                            "runs them at its fastest (1 of the 3 distinct calls)."),
            std::string::npos)
      << with_steps;
  EXPECT_NE(with_steps.find("and what kagent's own plan step for the same call takes"), std::string::npos)
      << with_steps;
  EXPECT_EQ(with_steps.find("evaluate one to know it"), std::string::npos) << with_steps;

  // Through the template: in the baselines block after the floors; absent when not measured.
  EXPECT_EQ(agent::baselines_text(gelu(ref), t).find("library calls"), std::string::npos);
  t.library_times = lib;
  const std::string block = agent::baselines_text(gelu(ref), t);
  EXPECT_NE(block.find("The reference's library calls, each timed alone"), std::string::npos) << block;
  EXPECT_LT(block.find("torch eager"), block.find("The reference's library calls")) << block;
}

TEST_F(Prompts, AFloorThatABaselineBeatsIsNoBound) {
  const Op diag = op_with({tensor("A", {4096}), tensor("B", {4096, 4096})}, {tensor("out", {4096, 4096})}, ref);
  agent::TimingFacts t = timing(0.0861, 0.0428);
  t.bandwidth_gbs = 2967;
  t.theoretical_gbs = 3350;
  const std::string s = agent::memory_floor_text(diag, t);
  EXPECT_NE(s.find("Memory floor: 0.0452 ms, the operator's 134234112 bytes"), std::string::npos) << s;
  EXPECT_NE(s.find("torch.compile already moves these bytes at 3136 GB/s, faster than that, so this floor is no bound "
                   "here; the floor at the theoretical 3350 GB/s (0.0401 ms) is one."),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("Tier 3 (<= 0.0407 ms) is 0.90x the floor: below it, so tier 3 takes a kernel that moves these "
                   "bytes faster than that bandwidth, as torch.compile does (the theoretical 3350 GB/s allows 0.0401 "
                   "ms, 0.99x tier 3's time)."),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("out of reach"), std::string::npos) << s;

  // A baseline under even the theoretical floor moves fewer bytes than the count: no floor bounds it.
  agent::TimingFacts fewer = t;
  fewer.compile_ms = 0.030;
  const std::string f = agent::memory_floor_text(diag, fewer);
  EXPECT_NE(f.find("torch.compile takes 0.75x even the floor at the theoretical 3350 GB/s (0.0401 ms): it moves fewer "
                   "bytes than these"),
            std::string::npos)
      << f;
  EXPECT_EQ(f.find("out of reach"), std::string::npos) << f;
}

// An input or parameter forward never reads (level3/50's c_proj) is marked in the tensor table and
// left out of the memory floor's bytes.
TEST_F(Prompts, UnreadInputsAreMarkedAndLeftOutOfTheFloor) {
  Op op =
      op_with({tensor("x", {1024, 1024}), tensor("c_proj_weight", {1024, 1024})}, {tensor("out", {1024, 1024})}, ref);
  op.inputs[1].unread = true;
  auto values = agent::task_values(op, op, timing(1.0, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  const std::string& sig = values.at("signature");
  EXPECT_NE(sig.find("input (unread)"), std::string::npos) << sig;
  EXPECT_NE(sig.find("Inputs marked (unread) are ones the reference's forward never reads"), std::string::npos) << sig;
  const std::string floor = agent::memory_floor_text(op, timing(1.0, 0.5));
  EXPECT_NE(floor.find("the operator's 8388608 bytes"), std::string::npos) << floor;  // x and out only
}

// The one time that reaches tier 3: 0.95x torch.compile where that is under eager, eager's own time
// where torch.compile is the slower (level1/65, a transposed convolution: eager 3.10 ms, compile 3.90).
TEST_F(Prompts, TheBindingTier3TargetIsTheLowerLine) {
  const Op op = gelu(ref);
  const auto usual = agent::tier3_target(timing(2.0, 1.5));
  ASSERT_TRUE(usual);
  EXPECT_FALSE(usual->eager_binds);
  EXPECT_DOUBLE_EQ(usual->limit_ms, 0.95 * 1.5);
  EXPECT_NE(agent::baselines_text(op, timing(2.0, 1.5))
                .find("torch eager 2.0000 ms; torch.compile 1.5000 ms (tier 3: <= 1.4250 ms, 0.95x torch.compile's "
                      "1.5000 ms)"),
            std::string::npos);

  const auto conv = agent::tier3_target(timing(3.10, 3.90));
  ASSERT_TRUE(conv);
  EXPECT_TRUE(conv->eager_binds);
  EXPECT_DOUBLE_EQ(conv->limit_ms, 3.10);
  const std::string s = agent::baselines_text(op, timing(3.10, 3.90));
  EXPECT_NE(s.find("(tier 3: under 3.1000 ms, torch eager's time: torch.compile (3.9000 ms) is slower than eager "
                   "here, so beating eager is the line that binds, not 0.95x torch.compile)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("Tier 3 (under 3.1000 ms) is"), std::string::npos) << s;
  // Exactly at the line: 0.95x torch.compile equal to eager's time still needs a time under eager.
  EXPECT_TRUE(agent::tier3_target(timing(0.95, 1.0))->eager_binds);
  EXPECT_FALSE(agent::tier3_target(timing(std::nullopt, 1.0))->eager_binds);
  EXPECT_FALSE(agent::tier3_target(timing(1.0, std::nullopt)));

  // The task's reward section says the lower line binds.
  auto values = agent::task_values(op, op, timing(3.10, 3.90), "a GPU", {}, model_tools::ToolSet{}, "");
  auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
  EXPECT_NE(opening[1].content.find("Whichever of the two lines is lower binds"), std::string::npos);
}

// The skill's facts a kernel writer lacked: ldmatrix for TF32 fragments, the cluster barrier before
// exit, dynamic shared memory alignment, the non-portable cluster size, the GEMM step's defaults.
TEST_F(Prompts, TheSkillStatesTheFactsAKernelNeeds) {
  auto values = agent::task_values(gelu(ref), gelu(ref), timing(1, 1), "a GPU", {}, model_tools::ToolSet{}, "");
  const std::string system =
      agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values)[0].content;
  for (const char* fact : {
           "`ldmatrix.sync.aligned.m8n8.x4.\n     shared.b16` gives lane l the 32-bit word",
           "Never `.trans` for TF32",
           "end such a kernel with `cluster.sync()` after the last remote\n   access",
           "rely on no more alignment of the `extern __shared__`\n   base than you declare",
           "the runner sets `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`",
           "`lda` k, or m with `trans_a`; `ldb` n, or k with `trans_b`; `ldc` and\n  `ldd` n",
           "each from 1 to 2^31 - 1",
       })
    EXPECT_NE(system.find(fact), std::string::npos) << fact;
}

// The floor line: every input read once and every output written once, at the given bandwidth, with
// each baseline against it, and tier 3 called what it is when it sits at or below the floor
// (level1/88: torch.compile at 96% of the copy bandwidth leaves 0.95x of it below the floor).
TEST_F(Prompts, MemoryFloorLineNextToTheBaselines) {
  const Op op = gelu(ref);
  const double floor = 2.0 * 8192 * 8192 * 4 / (kCopyGbs * 1e9) * 1e3;  // 0.1805 ms
  const std::string below = agent::baselines_text(op, timing(1.3 * floor, floor / 0.96));
  EXPECT_NE(below.find("torch eager"), std::string::npos) << below;
  EXPECT_NE(below.find("536870912 bytes"), std::string::npos) << below;
  EXPECT_NE(below.find(fmt::format("Memory floor: {:.4f} ms, the operator's 536870912 bytes", floor)),
            std::string::npos)
      << below;
  EXPECT_NE(below.find("once) at 2975 GB/s, this GPU's measured copy bandwidth."), std::string::npos) << below;
  EXPECT_NE(below.find("torch eager takes 1.30x that, torch.compile 1.04x"), std::string::npos) << below;
  // Below a measured floor is not out of reach: a kernel can move bytes faster than kagent's copy.
  EXPECT_NE(below.find("Tier 3 (<= 0.1786 ms) is 0.99x the floor"), std::string::npos) << below;
  EXPECT_NE(below.find("0.99x the floor: below it, so tier 3 takes a kernel that moves these bytes faster than that "
                       "bandwidth."),
            std::string::npos)
      << below;
  EXPECT_EQ(below.find("out of reach"), std::string::npos) << below;
  // Below the floor at the theoretical bandwidth it is.
  agent::TimingFacts bound = timing(1.3 * floor, floor / 0.96);
  bound.theoretical_gbs = kCopyGbs;
  const std::string beyond = agent::memory_floor_text(op, bound);
  EXPECT_NE(beyond.find("0.99x the floor: below it, faster than the memory can move these bytes, so tier 3 is out of "
                        "reach"),
            std::string::npos)
      << beyond;

  const std::string near = agent::memory_floor_text(op, timing(std::nullopt, 1.08 * floor));
  EXPECT_NE(near.find("1.03x the floor: within 5% of it"), std::string::npos) << near;

  const std::string far = agent::memory_floor_text(op, timing(10 * floor, 3 * floor));
  EXPECT_NE(far.find("2.85x the floor."), std::string::npos) << far;
  EXPECT_EQ(far.find("out of reach"), std::string::npos) << far;
  EXPECT_EQ(far.find("within 5%"), std::string::npos) << far;

  // No torch.compile time: no tier-3 sentence (the baselines line says tier 3 is out of reach).
  const std::string no_compile = agent::baselines_text(op, timing(2 * floor, std::nullopt));
  EXPECT_NE(no_compile.find("unavailable (it failed): tier 3 is out of reach"), std::string::npos) << no_compile;
  EXPECT_EQ(no_compile.find("Tier 3 ("), std::string::npos) << no_compile;

  // No bandwidth: the bytes, and no time invented.
  agent::TimingFacts unknown = timing(1.0, 0.5);
  unknown.bandwidth_gbs = 0;
  const std::string bytes_only = agent::memory_floor_text(op, unknown);
  EXPECT_NE(bytes_only.find("536870912 bytes"), std::string::npos) << bytes_only;
  EXPECT_NE(bytes_only.find("no bandwidth is known"), std::string::npos) << bytes_only;
  EXPECT_EQ(bytes_only.find(" ms"), std::string::npos) << bytes_only;

  // Weights and every output count: a linear layer's bytes.
  const Op linear = op_with({tensor("x", {64, 128}), tensor("fc_weight", {256, 128}), tensor("fc_bias", {256})},
                            {tensor("out", {64, 256}), tensor("out1", {64}, DType::i64)}, ref);
  const int64_t bytes = (64 * 128 + 256 * 128 + 256 + 64 * 256) * 4 + 64 * 8;
  EXPECT_NE(agent::memory_floor_text(linear, timing(1, 1)).find(fmt::format("{} bytes", bytes)), std::string::npos);
  // A PyTorch reference whose tensors are not known here: no line at all.
  EXPECT_EQ(agent::memory_floor_text(op_with({}, {}, ref), timing(1, 1)), "");
}

// Each tool's line gives its arguments from the schema the endpoint receives, required ones
// first and optional ones marked.
TEST_F(Prompts, ToolArgumentsComeFromTheirSchemas) {
  model_tools::Workspace ws(dir.path() / "ws");
  model_tools::ToolSet set = model_tools::make_file_tools(ws);
  model_tools::KernelToolContext ktx;
  for (auto& t : model_tools::make_kernel_tools(ws, ktx)) set.push_back(std::move(t));
  const std::string text = agent::tools_text(set, "shell is off (--no-shell)");
  EXPECT_NE(text.find("- read_file(path, max_lines?, start_line?): Read a text file in the workspace."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("- edit_file(path, old_text, new_text): "), std::string::npos) << text;
  EXPECT_NE(text.find("- list_files(path?): "), std::string::npos) << text;
  EXPECT_NE(text.find("- finish(path, summary?): "), std::string::npos) << text;
  EXPECT_NE(text.find("- (shell is off (--no-shell))"), std::string::npos) << text;
  for (const auto& t : set) {
    const auto spec = t->spec();
    const size_t at = text.find(fmt::format("- {}(", spec.name));
    ASSERT_NE(at, std::string::npos) << spec.name;
    const std::string line = text.substr(at, text.find('\n', at) - at);
    std::set<std::string> required;
    for (const auto& r : spec.parameters.value("required", nlohmann::json::array())) required.insert(r);
    for (const auto& [name, _] : spec.parameters["properties"].items())
      EXPECT_NE(line.find(required.count(name) ? name : name + "?"), std::string::npos) << line;
    EXPECT_GT(line.size(), spec.name.size() + 16) << "a description follows: " << line;
  }
}

// The headers and dtypes are named once, in the guide's section 6, rendered from the lists the
// compiler and the plan parser use; no hand-written list is left in any prompt to drift.
TEST_F(Prompts, HeadersAndDtypesHaveOneSource) {
  auto values = agent::task_values(gelu(ref), gelu(ref), timing(1, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
  const std::string all = opening[0].content + opening[1].content;
  EXPECT_EQ(all.find("{{"), std::string::npos) << "every placeholder filled";
  const auto skill = agent::skill_values();
  EXPECT_EQ(count(all, skill.at("headers")), 1u);
  for (const auto& h : candidate_headers()) EXPECT_EQ(count(all, fmt::format("<{}>", h)), 1u) << h;
  EXPECT_EQ(count(all, skill.at("dtypes")), 1u);
  EXPECT_EQ(count(all, skill.at("scratch_dtypes")), 1u);
  // The lists themselves are the code's: every dtype the parser knows, and only those.
  std::string names;
  for (DType d : all_dtypes()) {
    names += fmt::format("{}{}", names.empty() ? "" : ", ", dtype_name(d));
    EXPECT_EQ(parse_dtype(dtype_name(d)), d);
    EXPECT_NE(skill.at("dtypes").find(fmt::format("`{}` {}", dtype_name(d), dtype_c_type(d))), std::string::npos);
    // A scratch buffer of every listed dtype parses.
    const std::string plan = fmt::format(
        "/*kagent\n{{\"scratch\": {{\"s\": {{\"dtype\": \"{}\", \"shape\": [4]}}}}, \"launch\": [{{\"kernel\": \"k\", "
        "\"grid\": [1], \"block\": [1], \"args\": [\"s\"]}}]}}\n*/\n",
        dtype_name(d));
    EXPECT_NO_THROW(parse_candidate(plan, "c.cu")) << plan;
  }
  EXPECT_EQ(skill.at("scratch_dtypes"), names);
  EXPECT_EQ(dtype_choices(), names);
}

// system.md and the skills are filled with the values kagent has; braces of any other kind (a
// user's skill with code in it) stay as written.
TEST(FillKnown, ReplacesKnownNamesOnly) {
  EXPECT_EQ(agent::fill_known("a {{x}} b {{unknown}} c {{ {{x}}", {{"x", "1"}}), "a 1 b {{unknown}} c {{ 1");
  EXPECT_EQ(agent::fill_known("int a[1][1] = {{0}};", {{"x", "1"}}), "int a[1][1] = {{0}};");
}

// A 0-d tensor is explained where there is one: how it appears and how a kernel writes it.
TEST_F(Prompts, ZeroDimensionalOutputIsExplained) {
  const Op loss =
      op_with({tensor("predictions", {128, 4096}), tensor("targets", {128, 4096})}, {tensor("out", {})}, ref);
  auto values = agent::task_values(loss, loss, timing(1, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  const std::string& sig = values.at("signature");
  EXPECT_NE(sig.find("[]"), std::string::npos) << sig;
  EXPECT_NE(sig.find("Shape [] is a 0-d tensor: one element"), std::string::npos) << sig;
  EXPECT_NE(sig.find("set it to 0 in an earlier launch"), std::string::npos) << sig;
  auto plain = agent::task_values(gelu(ref), gelu(ref), timing(1, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  EXPECT_EQ(plain.at("signature").find("0-d"), std::string::npos) << "said only where it applies";
}

// What forward draws (level2/66's dropout) is an input marked as drawn, with its meaning under the
// table; an operator without draws says nothing of them.
TEST_F(Prompts, DrawnInputsAreMarkedWithTheirMeaning) {
  TensorSpec mult = tensor("dropout_mult", {128, 16384});
  mult.drawn =
      "drawn by nn.Dropout(p=0.2) in forward, call 1: 0 or 1/(1-p) = 1.25 per element; multiply the "
      "dropout's input by this";
  const Op dropout = op_with({tensor("x", {128, 16384}), mult, tensor("matmul_weight", {16384, 16384})},
                             {tensor("out", {128, 16384})}, ref);
  auto values = agent::task_values(dropout, dropout, timing(1, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  const std::string& sig = values.at("signature");
  auto row = [&](const std::string& name) {
    for (size_t at = 0; at < sig.size();) {
      size_t end = sig.find('\n', at);
      std::string line = sig.substr(at, end == std::string::npos ? std::string::npos : end - at);
      if (line.rfind(name + " ", 0) == 0) return line;
      at = end == std::string::npos ? sig.size() : end + 1;
    }
    return std::string();
  };
  EXPECT_NE(row("dropout_mult").find("input (drawn)"), std::string::npos) << sig;
  EXPECT_EQ(row("x").find("(drawn)"), std::string::npos) << "only the drawn input is marked: " << sig;
  EXPECT_NE(sig.find("dropout_mult: drawn by nn.Dropout(p=0.2) in forward, call 1: 0 or 1/(1-p) = 1.25"),
            std::string::npos)
      << sig;
  EXPECT_NE(sig.find("draw nothing yourself"), std::string::npos) << sig;
  auto plain = agent::task_values(gelu(ref), gelu(ref), timing(1, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  EXPECT_EQ(plain.at("signature").find("drawn"), std::string::npos) << "said only where it applies";
}

// A real KernelBench problem's whole opening, as the model reads it.
TEST_F(Prompts, KernelBenchGeluReadsRight) {
  const auto py = test::kernelbench_dir() / "level1/88_MinGPTNewGelu.py";
  if (!std::filesystem::exists(py)) GTEST_SKIP() << py << " not here";
  const Op loaded = load_op(py);
  Op sig = loaded;
  sig.inputs = {tensor("x", {8192, 8192})};
  sig.outputs = {tensor("out", {8192, 8192})};
  const double floor = 2.0 * 8192 * 8192 * 4 / (kCopyGbs * 1e9) * 1e3;
  model_tools::Workspace ws(dir.path() / "ws");
  model_tools::ToolSet set = model_tools::make_file_tools(ws);
  model_tools::KernelToolContext ktx;
  for (auto& t : model_tools::make_kernel_tools(ws, ktx)) set.push_back(std::move(t));
  auto values = agent::task_values(loaded, sig, timing(1.27 * floor, floor / 0.96),
                                   "NVIDIA H100 80GB HBM3 (sm_90), 132 SMs, 50 MiB L2, 79 GiB memory.",
                                   agent::AgentOptions{}, set, "");
  auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
  const std::string& system = opening[0].content;
  const std::string& task = opening[1].content;
  if (const char* p = std::getenv("KAGENT_PRINT_PROMPTS"); p != nullptr && *p != '\0')
    std::cout << "===== system =====\n" << system << "\n===== task =====\n" << task << "\n";
  EXPECT_NE(task.find("40 turns, 60 minutes"), std::string::npos);
  EXPECT_NE(task.find("0.5 * x * (1.0 + torch.tanh"), std::string::npos) << "the reference source";
  EXPECT_NE(task.find("Notes on PyTorch references"), std::string::npos);
  EXPECT_NE(task.find("below it"), std::string::npos) << "tier 3 sits below the floor";
  EXPECT_NE(task.find("the gaps between\nlaunches count"), std::string::npos);
  EXPECT_NE(task.find("no two of them alias"), std::string::npos);
  EXPECT_NE(task.find("\"args\": [\"x\", \"partial\", \"out\", \"i64:numel(out)\"]"), std::string::npos) << task;
  // The guide is part of the system prompt, and the system prompt says so.
  EXPECT_NE(system.find("name: cuda-optimization"), std::string::npos);
  EXPECT_NE(system.find("It is part of this prompt, not a file"), std::string::npos);
  EXPECT_EQ(system.find("Read it when you need it"), std::string::npos);
  // No placeholder reaches the model; the clusters paragraph is the measured one.
  EXPECT_EQ(system.find("<!--"), std::string::npos) << "an HTML comment left in the guide";
  EXPECT_NE(system.find("__cluster_dims__(X, Y, Z)"), std::string::npos);

  // A native reference has no PyTorch notes and its own example names.
  const Op native = load_op(test::examples_dir() / "softmax/op.json");
  agent::TimingFacts nt;
  nt.native_reference = true;
  auto nv = agent::task_values(native, native, nt, "a GPU", agent::AgentOptions{}, set, "");
  auto nopen = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", nv);
  EXPECT_EQ(nopen[1].content.find("Notes on PyTorch references"), std::string::npos);
  EXPECT_NE(nopen[1].content.find("the native reference is timed at your first evaluation"), std::string::npos);
  EXPECT_NE(nopen[1].content.find("Memory floor: the operator's 134217728 bytes"), std::string::npos)
      << nopen[1].content;
}

namespace {

// An H100's measured roofs, as kagent's peaks would cache them (the figures are made up, of the
// right size: the text is what is under test).
DevicePeaks h100_peaks() {
  DevicePeaks p;
  p.gpu = "NVIDIA H100 80GB HBM3";
  p.method = "test";
  p.copy_bytes = int64_t(1) << 30;
  p.copy_gbs = kCopyGbs;
  p.gemm_n = 8192;
  p.fp32_gflops = 51000;
  p.gemm_by = "cuBLAS";
  p.tf32_mma_gflops = 360000;
  p.f16_mma_gflops = 700000;
  p.bf16_mma_gflops = 698000;
  p.measured_at = "2026-12-01T10:00:00Z";
  return p;
}

// level2/33_Gemm_Scale_BatchNorm: x [1024, 8192] through nn.Linear(8192, 8192), 2 x 1024 x 8192^2 FLOPs.
Op gemm_scale_bn(const std::filesystem::path& reference) {
  Op op = op_with({tensor("x", {1024, 8192}), tensor("gemm_weight", {8192, 8192}), tensor("gemm_bias", {8192}),
                   tensor("scale", {8192}), tensor("bn_weight", {8192}), tensor("bn_bias", {8192})},
                  {tensor("out", {1024, 8192})}, reference);
  op.flops = 2.0 * 1024 * 8192 * 8192;
  op.flops_source = "counted by PyTorch's FlopCounterMode on one forward call of the reference (aten.addmm 1.37e+11)";
  return op;
}

}  // namespace

// The compute floor beside the memory floor: the FLOPs, where they came from, each measured rate the
// precision allows (fp32: FP32 FFMA and 3xTF32, never plain TF32), the floor at the fastest, which
// floor binds, and tier 3 against it.
TEST_F(Prompts, ComputeFloorLineNextToTheMemoryFloor) {
  const Op op = gemm_scale_bn(ref);
  agent::TimingFacts t = timing(2.1, 1.9);
  t.peaks = h100_peaks();
  const std::string s = agent::baselines_text(op, t);
  EXPECT_NE(s.find("Memory floor:"), std::string::npos) << s;
  EXPECT_NE(s.find("Compute floor: the operator's 137 GFLOP (1.374e+11 FLOPs, counted by PyTorch's FlopCounterMode"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("at the rates fp32 accuracy allows (no plain TF32), each measured on this GPU"), std::string::npos)
      << s;
  // 3xTF32 = 360 / 3 = 120 TFLOP/s beats FP32's 51: 1.374e11 / 120e12 = 1.1453 ms.
  EXPECT_NE(s.find("3xTF32 mma.sync at 120.0 TFLOP/s (a third of the TF32 mma.sync m16n8k8 rate measured from "
                   "registers) 1.1453 ms"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("FP32 FFMA at 51.0 TFLOP/s (cuBLAS FP32 matrix product 8192^3, measured) 2.6949 ms"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("The compute floor is 1.1453 ms (3xTF32 mma.sync)."), std::string::npos) << s;
  EXPECT_NE(s.find("the operator is compute-bound, and the compute floor is its ideal time"), std::string::npos) << s;
  EXPECT_NE(s.find("torch eager takes 1.83x the compute floor, torch.compile 1.66x"), std::string::npos) << s;
  EXPECT_NE(s.find("Tier 3 (<= 1.8050 ms) is 1.58x the compute floor."), std::string::npos) << s;
  EXPECT_EQ(s.find("TF32 mma.sync at 360"), std::string::npos) << "plain TF32 is not an fp32 rate: " << s;

  // Under tf32 the plain TF32 rate is the floor's.
  const std::string tf32 = agent::compute_floor_text(with_precision(op, Precision::tf32), t);
  EXPECT_NE(tf32.find("TF32 mma.sync at 360.0 TFLOP/s"), std::string::npos) << tf32;
  EXPECT_EQ(tf32.find("3xTF32"), std::string::npos) << tf32;

  // Below the compute floor, tier 3 is said to be out of reach.
  const std::string fast = agent::compute_floor_text(op, timing(1.2, 1.0));
  EXPECT_NE(fast.find("no measured compute rate is known here"), std::string::npos) << fast;
  agent::TimingFacts quick = timing(1.2, 1.0);
  quick.peaks = h100_peaks();
  // Here torch.compile (1.0 ms) is under the floor (1.1453 ms): the floor is said to be no bound.
  const std::string beaten = agent::compute_floor_text(op, quick);
  EXPECT_NE(beaten.find("torch.compile is already at or under it"), std::string::npos) << beaten;
  EXPECT_NE(beaten.find("0.83x the compute floor."), std::string::npos) << beaten;
  EXPECT_EQ(beaten.find("out of reach"), std::string::npos) << beaten;
  agent::TimingFacts close = timing(2.0, 1.18);
  close.peaks = h100_peaks();
  const std::string below = agent::compute_floor_text(op, close);
  EXPECT_NE(below.find("0.98x the compute floor: below it, so tier 3 takes fewer FLOPs than this count"),
            std::string::npos)
      << below;

  // A memory-bound operator: its FLOPs are stated, the memory floor stays the ideal time.
  Op gelu_op = gelu(ref);
  gelu_op.flops = 1e6;
  gelu_op.flops_source = "given by the op.json";
  agent::TimingFacts g = timing(1.0, 0.5);
  g.peaks = h100_peaks();
  const std::string mem = agent::compute_floor_text(gelu_op, g);
  EXPECT_NE(mem.find("the operator is memory-bound, and the memory floor is its ideal time"), std::string::npos) << mem;
  EXPECT_EQ(mem.find("Tier 3"), std::string::npos) << mem;

  // No count: why, and what to do instead.
  Op none = gelu(ref);
  none.flops_source = "FlopCounterMode counted no matrix product, convolution or attention in the reference";
  const std::string why = agent::compute_floor_text(none, g);
  EXPECT_NE(why.find("Compute floor: no FLOP count here (FlopCounterMode counted no matrix product"), std::string::npos)
      << why;
  EXPECT_NE(why.find("Work the FLOPs out"), std::string::npos) << why;
}

// The GPU section states every measured roof beside the copy bandwidth, each said to be measured,
// and 3xTF32's third as derived; the skill points there instead of asking for a measurement.
TEST_F(Prompts, TensorCoreRatesAreStatedAsMeasured) {
  agent::TimingFacts t = timing(2.1, 1.9);
  t.peaks = h100_peaks();
  auto values = agent::task_values(gemm_scale_bn(ref), gemm_scale_bn(ref), t, "NVIDIA H100 80GB HBM3 (sm_90).", {},
                                   model_tools::ToolSet{}, "");
  const std::string& gpu = values.at("gpu");
  EXPECT_NE(gpu.find("NVIDIA H100 80GB HBM3 (sm_90).\nMeasured on this GPU by kagent (2026-12-01T10:00:00Z): memory "
                     "bandwidth 2975 GB/s (device-to-device copy) over 1024 MiB"),
            std::string::npos)
      << gpu;
  // No FP64 figures, no FP64 sentence; with them, both rates.
  EXPECT_EQ(gpu.find("FP64"), std::string::npos) << gpu;
  agent::TimingFacts fp64 = t;
  fp64.peaks->fp64_gflops = 33500;
  fp64.peaks->f64_mma_gflops = 66900;
  const std::string dgpu =
      agent::task_values(gemm_scale_bn(ref), gemm_scale_bn(ref), fp64, "a GPU", {}, model_tools::ToolSet{}, "")
          .at("gpu");
  EXPECT_NE(dgpu.find("; FP64 (for accumulation where an operator is ill-conditioned): DFMA 33.5 TFLOP/s, mma.sync "
                      "m8n8k4 .f64 on the tensor cores 66.9 TFLOP/s."),
            std::string::npos)
      << dgpu;
  // With the streaming kernels' figures, the best of them is the memory roof, each named.
  agent::TimingFacts streamed = t;
  streamed.peaks->read_gbs = 3310;
  streamed.peaks->write_gbs = 3190;
  streamed.peaks->copy_kernel_gbs = 3080;
  const std::string sgpu =
      agent::task_values(gemm_scale_bn(ref), gemm_scale_bn(ref), streamed, "a GPU", {}, model_tools::ToolSet{}, "")
          .at("gpu");
  EXPECT_NE(sgpu.find("memory bandwidth 3310 GB/s (streaming read; write 3190, copy 3080, device-to-device copy 2975 "
                      "GB/s) over 1024 MiB"),
            std::string::npos)
      << sgpu;
  EXPECT_NE(gpu.find("FP32 51.0 TFLOP/s (cuBLAS FP32 matrix product 8192^3, measured)"), std::string::npos) << gpu;
  EXPECT_NE(gpu.find("TF32 m16n8k8 360 TFLOP/s, so 3xTF32 (fp32-accurate) at most 120 TFLOP/s (a third, derived); "
                     "FP16 m16n8k16 700 TFLOP/s; BF16 m16n8k16 698 TFLOP/s."),
            std::string::npos)
      << gpu;
  auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
  const std::string& system = opening[0].content;
  const std::string& task = opening[1].content;
  EXPECT_NE(task.find("A measured rate is what kagent's own kernels reached on this GPU: a guide that a kernel can "
                      "pass"),
            std::string::npos)
      << task;
  EXPECT_EQ(system.find("measure yours"), std::string::npos) << "no measuring of what kagent measures";
  EXPECT_NE(system.find("The task's GPU section\n     gives both as kagent measured them"), std::string::npos);
  // The m16n8k8 TF32 fragments, as the PTX ISA gives them, and the 3xTF32 recipe.
  EXPECT_NE(system.find("a0 = A[g][t], a1 = A[g+8][t], a2 = A[g][t+4], a3 = A[g+8][t+4]"), std::string::npos);
  EXPECT_NE(system.find("b0 = B[t][g], b1 = B[t+4][g]"), std::string::npos);
  EXPECT_NE(system.find("c0 = C[g][2t], c1 = C[g][2t+1],\n     c2 = C[g+8][2t], c3 = C[g+8][2t+1]"), std::string::npos);
  EXPECT_NE(system.find("split in\n     registers after each fragment load"), std::string::npos);
  EXPECT_NE(system.find("Never pre-split into hi and lo planes in global\n     memory"), std::string::npos);
  EXPECT_NE(system.find("Accumulate each K slice"), std::string::npos);

  // Without measured peaks the GPU line is as given.
  auto plain = agent::task_values(gelu(ref), gelu(ref), timing(1, 1), "a GPU", {}, model_tools::ToolSet{}, "");
  EXPECT_EQ(plain.at("gpu"), "a GPU");
}

// With one turn there is nothing to iterate on: the task says the first candidate is the answer and
// what the one reply must hold; with more turns, the usual plan.
TEST_F(Prompts, OneTurnMeansTheFirstCandidateIsTheAnswer) {
  agent::AgentOptions one;
  one.max_turns = 1;
  one.max_minutes = 10;
  auto values = agent::task_values(gelu(ref), gelu(ref), timing(1.0, 0.5), "a GPU", one, model_tools::ToolSet{}, "");
  auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
  const std::string& task = opening[1].content;
  EXPECT_NE(task.find("the first candidate is the answer"), std::string::npos) << task;
  EXPECT_NE(task.find("write the candidate, compile it, evaluate it and call finish with its path"), std::string::npos);
  EXPECT_EQ(task.find("within the first few evaluations"), std::string::npos) << task;
  EXPECT_NE(opening[0].content.find("Iterate, when the budget has more than one turn"), std::string::npos);

  auto many = agent::task_values(gelu(ref), gelu(ref), timing(1.0, 0.5), "a GPU", agent::AgentOptions{},
                                 model_tools::ToolSet{}, "");
  auto mopen = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", many);
  EXPECT_NE(mopen[1].content.find("Plan for a correct candidate within the first few evaluations"), std::string::npos);
  EXPECT_EQ(mopen[1].content.find("the first candidate is the answer"), std::string::npos);
}

// What was unstated: scratch shapes may be integer literals; a convolution step's bias and ReLU are
// passes of their own that leave the algorithm choice alone, and fp32 algorithms are not screened
// for accuracy; library-step operands take offsets; how the reference's parameters and inputs are made.
TEST_F(Prompts, FormerlyUnstatedFactsAreStated) {
  auto values = agent::task_values(gelu(ref), gelu(ref), timing(1.0, 0.5), "a GPU", {}, model_tools::ToolSet{}, "");
  auto opening = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills", values);
  const std::string& system = opening[0].content;
  const std::string& task = opening[1].content;
  EXPECT_NE(system.find("an integer literal (`[256, 16384]`) or an expression"), std::string::npos);
  EXPECT_EQ(system.find("shapes may use\n  only the operator's tensors"), std::string::npos);
  EXPECT_NE(system.find("each a separate cuDNN\n  pass over `y` after the convolution (it does not change which "
                        "algorithm runs)"),
            std::string::npos);
  EXPECT_NE(system.find("they are not screened for accuracy: an FFT\n  or Winograd"), std::string::npos);
  EXPECT_NE(system.find("`offset_a` .. `offset_d`"), std::string::npos);
  EXPECT_NE(system.find("\"offset_b\": \"x.shape[1]\""), std::string::npos);
  // A reference that builds no layer: no layer notes.
  EXPECT_NE(
      task.find("PyTorch's\ndefault initialization.\nA tensor made in __init__ by torch.randn or torch.rand holds "
                "what was drawn."),
      std::string::npos)
      << task;
  // One that builds layers: the notes of those layers (agent/module_init.hpp), and no others.
  const auto layered =
      dir.write("layered.py",
                "import torch.nn as nn\nclass Model(nn.Module):\n  def __init__(self):\n"
                "    self.up = nn.ConvTranspose2d(64, 32, (3, 5))\n    self.n = nn.InstanceNorm2d(32)\n");
  const Op lop = gelu(layered);
  const std::string ltask = agent::opening_messages(test::source_dir() / "prompts", test::source_dir() / "skills",
                                                    agent::task_values(lop, lop, timing(1.0, 0.5), "a GPU", {},
                                                                       model_tools::ToolSet{}, ""))[1]
                                .content;
  EXPECT_NE(ltask.find("default initialization, for the layers this reference builds:\n- nn.ConvTranspose1d/2d/3d: "),
            std::string::npos)
      << ltask;
  EXPECT_NE(ltask.find("fan_in = out_channels/groups x the kernel's elements (not in_channels)"), std::string::npos);
  EXPECT_NE(ltask.find("- nn.InstanceNorm1d/2d/3d: affine=False and track_running_stats=False by default"),
            std::string::npos);
  EXPECT_EQ(ltask.find("- nn.Linear("), std::string::npos) << ltask;
  EXPECT_NE(task.find("a fresh seed at every trial"), std::string::npos) << task;
  // The skill's RNN example is a plan the checker accepts against an RNN cell's tensors.
  const size_t at = system.find("{\"gemm\": {\"a\": \"x\", \"b\": \"W\"");
  ASSERT_NE(at, std::string::npos);
  const size_t end = system.find("```", at);
  std::string steps = system.substr(at, end - at);
  for (size_t nl; (nl = steps.find("}}\n")) != std::string::npos;) steps.replace(nl, 3, "}}, ");
  while (!steps.empty() && (steps.back() == ' ' || steps.back() == ',')) steps.pop_back();
  Candidate c = parse_candidate("/*kagent\n{\"launch\": [" + steps + "]}\n*/\n", "skill.cu");
  Op rnn = op_with({tensor("x", {8, 16}), tensor("h", {8, 32}), tensor("W", {32, 48})}, {tensor("h1", {8, 32})}, ref);
  EXPECT_NO_THROW(check_plan_limits(c, rnn, launch_limits(90))) << steps;
}
