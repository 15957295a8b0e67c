// GPU evaluation end to end: the examples pass, wrong kernels fail with a mismatch report, faults
// and hangs are contained and the next evaluation works, reward hacks gain nothing. Every test
// skips, with the reason, on a machine without a GPU.
#include <gtest/gtest.h>

#include <fstream>

#include "kagent/common/error.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/eval/harness_source.hpp"
#include "kagent/gpu/devices.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

class GpuEval : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    opts.runner_path = (test::binary_dir() / "kagent-runner").string();
    opts.timeout = 60s;
    cache = std::make_shared<CompileCache>(cache_dir.path());
  }
  Evaluator& ev() {
    if (!ev_) ev_ = std::make_unique<Evaluator>(opts, cache);
    return *ev_;
  }
  EvalReport eval(const std::string& cand, const std::string& op_rel = "vector_add/op.json") {
    Op op = load_op(test::examples_dir() / op_rel);
    return ev().evaluate(op, load_candidate(cand));
  }
  static std::string fixture(const std::string& name) {
    return (test::source_dir() / "tests/gpu/kernels" / name).string();
  }
  static std::string example(const std::string& rel) { return (test::examples_dir() / rel).string(); }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

  test::TempDir cache_dir;
  std::shared_ptr<CompileCache> cache;
  EvalOptions opts;
  std::unique_ptr<Evaluator> ev_;
};

}  // namespace

TEST_F(GpuEval, ExamplesAreCorrectAndTimed) {
  for (auto [cand, op] :
       std::vector<std::pair<std::string, std::string>>{{"vector_add/cand_naive.cu", "vector_add/op.json"},
                                                        {"vector_add/cand_vec4.cu", "vector_add/op.json"},
                                                        {"softmax/cand_online.cu", "softmax/op.json"},
                                                        {"softmax/cand_scratch.cu", "softmax/op.json"},
                                                        {"softmax/cand_bf16_pipeline.cu", "softmax/op.json"}}) {
    SCOPED_TRACE(cand);
    EvalReport r = eval(example(cand), op);
    ASSERT_TRUE(r.outcome.correct) << r.outcome.message;
    EXPECT_GE(r.reward.tier, 1) << r.reward.reason;
    ASSERT_TRUE(r.outcome.candidate_time && r.outcome.reference_time);
    EXPECT_GE(r.outcome.candidate_time->n, 20);
    EXPECT_GT(r.outcome.candidate_time->median_ms, 0);
    EXPECT_GE(r.outcome.rechecks, 1);
    EXPECT_TRUE(r.reward.speedup_vs_eager.has_value());
    for (const auto& f : r.outcome.flags) EXPECT_NE(f.kind, FlagKind::degenerate_reference) << flag_text(f);
  }
}

TEST_F(GpuEval, PerLaunchTimesAddUpToThePlan) {
  // cand_scratch.cu: two launches (row_stats, row_normalize) through a scratch buffer.
  Op op = load_op(test::examples_dir() / "softmax/op.json");
  EvalReport r = ev().evaluate(op, load_candidate(example("softmax/cand_scratch.cu")), EvalMode::profile);
  ASSERT_TRUE(r.outcome.correct) << r.outcome.message;
  ASSERT_EQ(r.outcome.launch_times.size(), 2u);
  EXPECT_EQ(r.outcome.launch_times[0].kernel, "row_stats");
  EXPECT_EQ(r.outcome.launch_times[1].kernel, "row_normalize");
  double sum = 0, shares = 0;
  for (const auto& l : r.outcome.launch_times) {
    EXPECT_GT(l.median_ms, 0);
    sum += l.median_ms;
    shares += l.share;
  }
  EXPECT_NEAR(shares, 1.0, 1e-6);
  // Events between the launches add a little; the parts stay close to the whole.
  EXPECT_NEAR(sum / r.outcome.candidate_time->median_ms, 1.0, 0.3)
      << sum << " ms summed vs " << r.outcome.candidate_time->median_ms << " ms for the plan";
  EXPECT_TRUE(ev().evaluate(op, load_candidate(example("softmax/cand_scratch.cu"))).outcome.launch_times.empty())
      << "only on request";
}

TEST_F(GpuEval, WrongKernelFailsWithAMismatchReport) {
  EvalReport r = eval(fixture("wrong.cu"));
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(failure_stage_name(r.outcome.failure_stage), "correctness");
  EXPECT_EQ(r.reward.tier, -1);
  ASSERT_TRUE(r.outcome.mismatch);
  const auto& m = *r.outcome.mismatch;
  EXPECT_EQ(m.tensor, "out");
  EXPECT_GT(m.count, m.numel / 2);
  EXPECT_LT(m.first_index, 16u);
  EXPECT_NE(m.candidate_value, m.reference_value);
  EXPECT_GT(m.max_abs, 0);
  EXPECT_TRUE(has(r.outcome.message, "first at index")) << r.outcome.message;
}

TEST_F(GpuEval, DevicePrintfDoesNotCorruptTheProtocol) {
  EvalReport r = eval(fixture("printf_add.cu"));
  EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
  EXPECT_GE(r.reward.tier, 1);
  EXPECT_EQ(ev().runner().starts(), 1) << "the runner was never out of step";
}

TEST_F(GpuEval, HalfWrittenOutputFails) {
  EvalReport r = eval(fixture("half_output.cu"));
  EXPECT_FALSE(r.outcome.correct);
  ASSERT_TRUE(r.outcome.mismatch);
  // The unwritten half holds the poison (NaN): exactly half the elements fail, all as NaN mismatches.
  EXPECT_EQ(r.outcome.mismatch->count, r.outcome.mismatch->numel / 2);
  EXPECT_EQ(r.outcome.mismatch->nan_count, r.outcome.mismatch->numel / 2);
  EXPECT_EQ(r.outcome.mismatch->first_index, r.outcome.mismatch->numel / 2);
}

TEST_F(GpuEval, WritingInputsFails) {
  // Correct in each trial (fresh inputs each), but the timed samples share one sealed copy of the
  // inputs: the zeroed inputs are found after the timing, stage "inputs", whatever the re-checks saw.
  EvalReport r = eval(fixture("zero_inputs.cu"));
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(r.outcome.failure_stage, FailureStage::inputs) << r.outcome.message;
  EXPECT_NE(r.outcome.message.find("wrote its input 'a'"), std::string::npos) << r.outcome.message;
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(GpuEval, IllegalAddressIsContainedAndTheNextEvaluationWorks) {
  EvalReport r = eval(fixture("illegal_address.cu"));
  EXPECT_EQ(r.reward.tier, -1);
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_TRUE(has(r.outcome.message, "ILLEGAL_ADDRESS")) << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "launch[0]")) << r.outcome.message;
  const int starts = ev().runner().starts();
  EvalReport next = eval(example("vector_add/cand_naive.cu"));
  EXPECT_TRUE(next.outcome.correct) << next.outcome.message;
  EXPECT_EQ(ev().runner().starts(), starts + 1) << "the runner restarts after a sticky error";
}

TEST_F(GpuEval, TrapIsContainedAndTheNextEvaluationWorks) {
  EvalReport r = eval(fixture("trap.cu"));
  EXPECT_EQ(r.reward.tier, -1);
  EXPECT_FALSE(r.outcome.message.empty());
  EvalReport next = eval(example("vector_add/cand_naive.cu"));
  EXPECT_TRUE(next.outcome.correct) << next.outcome.message;
}

TEST_F(GpuEval, EndlessLoopTimesOutNamingTheLaunch) {
  opts.timeout = 8s;
  auto t0 = std::chrono::steady_clock::now();
  EvalReport r = eval(fixture("endless_loop.cu"));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 20s);
  EXPECT_EQ(failure_stage_name(r.outcome.failure_stage), "timeout");
  EXPECT_EQ(r.reward.tier, -1);
  EXPECT_TRUE(has(r.outcome.message, "launch[0]")) << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "candidate")) << r.outcome.message;
  EvalReport next = eval(example("vector_add/cand_naive.cu"));
  EXPECT_TRUE(next.outcome.correct) << next.outcome.message;
}

// A re-check is queued behind its group's last sample and read while the next group runs: the
// candidate's value it reports is the one that sample wrote (the fixture writes its launch number
// into out[0]: 5 trials, the warm-up runs, then the samples up to the one the re-check names).
TEST_F(GpuEval, AQueuedRecheckReportsTheValueOfTheSampleItChecked) {
  EvalReport r = eval(fixture("numbered_after_warmup.cu"));
  ASSERT_EQ(failure_stage_name(r.outcome.failure_stage), "re-check") << r.outcome.message;
  ASSERT_TRUE(r.outcome.mismatch);
  ASSERT_TRUE(r.outcome.candidate_time);
  EXPECT_EQ(r.outcome.mismatch->first_index, 0u);
  const std::string& when = r.outcome.mismatch->when;
  const std::string prefix = "re-check after timing sample ";
  ASSERT_EQ(when.rfind(prefix, 0), 0u) << when;
  const int sample = std::stoi(when.substr(prefix.size()));
  EXPECT_EQ(r.outcome.mismatch->candidate_value, 5 + r.outcome.candidate_time->warmup_n + sample - 1)
      << when << "; warm-up runs " << r.outcome.candidate_time->warmup_n;
}

TEST_F(GpuEval, RaceIsCaught) {
  EvalReport r = eval(fixture("race.cu"));
  EXPECT_FALSE(r.outcome.correct) << "a kernel that is right only sometimes must fail";
  EXPECT_TRUE(failure_stage_name(r.outcome.failure_stage) == "correctness" ||
              failure_stage_name(r.outcome.failure_stage) == "re-check")
      << failure_stage_name(r.outcome.failure_stage);
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(GpuEval, KernelThatGoesWrongAfterTheTrialsIsCaughtByTheRecheck) {
  EvalReport r = eval(fixture("wrong_after_warmup.cu"));
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(failure_stage_name(r.outcome.failure_stage), "re-check") << r.outcome.message;
  EXPECT_EQ(r.outcome.trials_run, 5) << "the correctness trials all passed";
  ASSERT_TRUE(r.outcome.mismatch);
  EXPECT_EQ(r.outcome.mismatch->first_index, 0u);
  EXPECT_TRUE(has(r.outcome.mismatch->when, "re-check")) << r.outcome.mismatch->when;
  EXPECT_EQ(r.reward.tier, -1);
}

TEST_F(GpuEval, WrongArgumentCountIsAClearErrorBeforeTheGpu) {
  try {
    eval(fixture("wrong_arg_count.cu"));
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_TRUE(has(e.what(), "launch[0]")) << e.what();
    EXPECT_TRUE(has(e.what(), "4 parameters")) << e.what();
  }
}

TEST_F(GpuEval, RunnerChecksArgumentsAgainstTheDriversParameterList) {
  // Bypass the offline check: send the runner a plan with one argument too few.
  Op op = load_op(test::examples_dir() / "vector_add/op.json");
  Candidate good = load_candidate(example("vector_add/cand_naive.cu"));
  Compiler compiler(find_cuda_paths(), cache);
  const std::string arch = ev().arch();
  auto write = [&](const CompileResult& c, const std::string& name) {
    auto p = cache_dir / name;
    std::ofstream(p, std::ios::binary) << c.cubin;
    return p.string();
  };
  std::string bad_source = good.source;
  auto at = bad_source.find(", \"i64:numel(out)\"");
  ASSERT_NE(at, std::string::npos) << "cand_naive.cu's plan changed";
  bad_source.erase(at, std::string(", \"i64:numel(out)\"").size());
  EvalRequest rq;
  rq.gpu = opts.gpu;
  rq.seed = 1;
  rq.trials = 1;
  rq.inputs = op.inputs;
  rq.outputs = op.outputs;
  rq.reference = {op.reference.string(), load_candidate(op.reference).source,
                  write(compiler.compile(load_candidate(op.reference), arch), "ref.cubin")};
  rq.candidate = {"bad.cu", bad_source, write(compiler.compile(good, arch), "cand.cubin")};
  rq.harness_cubin_path = write(compiler.compile(harness_kernels(), arch), "harness.cubin");
  rq.timing = false;
  ChildReply reply = ev().runner().request(rq, 60s);
  ASSERT_TRUE(reply.ok()) << reply.message;
  auto o = reply.body.at("outcome").get<EvalOutcome>();
  EXPECT_EQ(failure_stage_name(o.failure_stage), "plan");
  EXPECT_TRUE(has(o.message, "launch[0]")) << o.message;
  EXPECT_TRUE(has(o.message, "3 argument(s)")) << o.message;
  EXPECT_TRUE(has(o.message, "4 parameter(s)")) << o.message;
}

TEST_F(GpuEval, RunnerRefusesARequestForAnotherGpu) {
  Op op = load_op(test::examples_dir() / "vector_add/op.json");
  EvalRequest rq;
  rq.gpu = opts.gpu + 1;
  rq.inputs = op.inputs;
  rq.outputs = op.outputs;
  ChildReply reply = ev().runner().request(rq, 60s);
  ASSERT_TRUE(reply.ok()) << reply.message;
  EXPECT_FALSE(reply.body.value("ok", true));
  EXPECT_TRUE(has(reply.body.value("error", ""), "serves GPU")) << reply.body.dump();
}

// The warm-up is about clocks: a timing pass right after another of the same runner counts the
// previous pass's busy time toward warmup_ms and runs only warmup_runs runs of its own; with the
// credit off it warms up in full.
TEST_F(GpuEval, AWarmUpRightAfterAnotherPassCountsItsBusyTime) {
  opts.knobs.warmup_credit_gap_ms = 60000;  // "right after", whatever the host does between two requests here
  Op op = load_op(test::examples_dir() / "vector_add/op.json");
  const Candidate cand = load_candidate(example("vector_add/cand_naive.cu"));
  EvalReport first = ev().evaluate(op, cand);
  ASSERT_TRUE(first.outcome.correct) << first.outcome.message;
  EvalReport second = ev().evaluate(op, cand);
  ASSERT_TRUE(second.outcome.correct) << second.outcome.message;
  ASSERT_TRUE(second.outcome.candidate_time.has_value());
  const TimingSummary& t = *second.outcome.candidate_time;
  EXPECT_DOUBLE_EQ(t.warmup_credit_ms, opts.knobs.warmup_ms) << "the previous pass was busy for >= 0.1 s";
  EXPECT_EQ(t.warmup_n, opts.knobs.warmup_runs);
  EXPECT_TRUE(has(render_report(second), "clocks up")) << render_report(second);
  opts.knobs.warmup_credit_gap_ms = 0;
  ev_.reset();
  ev().evaluate(op, cand);
  EvalReport without = ev().evaluate(op, cand);
  ASSERT_TRUE(without.outcome.candidate_time.has_value());
  EXPECT_DOUBLE_EQ(without.outcome.candidate_time->warmup_credit_ms, 0);
  EXPECT_GT(without.outcome.candidate_time->warmup_n, opts.knobs.warmup_runs) << "50 ms of a 0.1 ms kernel";
}

// The measurement knobs are what the runner measures with: a re-check after every 2nd sample, 3
// CUPTI samples, 4 per-launch samples, echoed in the outcome and the report's "knobs:" line.
TEST_F(GpuEval, MeasureKnobsReachTheRunnerAndAreEchoed) {
  opts.knobs = MeasureKnobs{1, 0.0, 2, 3, 4};
  Op op = load_op(test::examples_dir() / "vector_add/op.json");
  EvalReport r = ev().evaluate(op, load_candidate(example("vector_add/cand_naive.cu")), EvalMode::profile);
  ASSERT_TRUE(r.outcome.correct) << r.outcome.message;
  EXPECT_EQ(r.outcome.knobs.check_every, 2);
  ASSERT_TRUE(r.outcome.candidate_time.has_value());
  // One re-check per group of 2 samples begun (a group the stop rule ends early was re-checked
  // all the same: its check was queued behind it), and one after the last.
  EXPECT_EQ(r.outcome.rechecks, (r.outcome.candidate_time->n + 1) / 2 + 1) << r.outcome.candidate_time->n;
  if (r.outcome.cupti && r.outcome.cupti->ran) {
    EXPECT_EQ(r.outcome.cupti->samples, 3);
  }
  EXPECT_TRUE(has(render_report(r),
                  "knobs: warm-up >= 1 samples and >= 0 ms GPU busy (the previous pass's busy time counted when it "
                  "ended within 50 ms); outputs re-checked every 2 sample(s); CUPTI cross-check 3 samples; "
                  "per-launch timing 4 samples"))
      << render_report(r);
}
