// The runner's request survives its JSON round trip: what kagent sends is what the runner reads.
#include <gtest/gtest.h>

#include "kagent/protocol/protocol.hpp"

namespace kagent {
namespace {

EvalRequest sample_request() {
  EvalRequest r;
  r.gpu = 1;
  r.seed = 0xFFFFFFFFFFFFFFFFull;  // all 64 bits survive
  r.trials = 3;
  r.tolerance = {1e-3, 2e-3};
  TensorSpec x;
  x.name = "x";
  x.shape = {4096, 393216};
  r.inputs = {x};
  TensorSpec out = x;
  out.name = "out";
  r.outputs = {out};
  r.scalars = {{"s", ExprValue{false, 0, 3.14}}, {"k", ExprValue{true, 7, 0.0}}};
  r.reference_kind = ReferenceKind::pytorch;
  r.candidate = {"cand.cu", "/*kagent {} */", "/tmp/c.cubin"};
  r.harness_cubin_path = "/tmp/h.cubin";
  return r;
}

TEST(Protocol, EvalRequestRoundTrips) {
  EvalRequest a = sample_request();
  EvalRequest b = nlohmann::json(a).get<EvalRequest>();
  EXPECT_EQ(b.gpu, 1);
  EXPECT_EQ(b.seed, a.seed);
  EXPECT_EQ(b.trials, 3);
  EXPECT_DOUBLE_EQ(b.tolerance.rtol, 2e-3);
  ASSERT_EQ(b.inputs.size(), 1u);
  EXPECT_EQ(b.inputs[0].shape, a.inputs[0].shape);
  EXPECT_EQ(b.reference_kind, ReferenceKind::pytorch);
  EXPECT_EQ(b.candidate.cubin_path, "/tmp/c.cubin");
}

// The measurement knobs travel to the runner and come back in the outcome (the report echoes them).
TEST(Protocol, MeasureKnobsRoundTripAndReadAsWords) {
  EvalRequest a = sample_request();
  a.knobs = MeasureKnobs{7, 12.5, 3, 9, 31, 20};
  EvalRequest b = nlohmann::json(a).get<EvalRequest>();
  EXPECT_EQ(b.knobs.warmup_runs, 7);
  EXPECT_DOUBLE_EQ(b.knobs.warmup_ms, 12.5);
  EXPECT_EQ(b.knobs.check_every, 3);
  EXPECT_EQ(b.knobs.cupti_samples, 9);
  EXPECT_EQ(b.knobs.per_launch_samples, 31);
  EXPECT_DOUBLE_EQ(b.knobs.warmup_credit_gap_ms, 20);
  EvalOutcome o;
  o.knobs = a.knobs;
  EXPECT_EQ(nlohmann::json(o).get<EvalOutcome>().knobs.per_launch_samples, 31);
  nlohmann::json old = nlohmann::json(EvalOutcome{});
  old.erase("knobs");  // transcripts of older versions
  EXPECT_EQ(old.get<EvalOutcome>().knobs.check_every, 4);
  nlohmann::json older = nlohmann::json(MeasureKnobs{});
  older.erase("warmup_credit_gap_ms");  // records from before the credit
  EXPECT_DOUBLE_EQ(older.get<MeasureKnobs>().warmup_credit_gap_ms, 50);
  EXPECT_EQ(knobs_text(MeasureKnobs{}),
            "warm-up >= 3 samples and >= 50 ms GPU busy (the previous pass's busy time counted when it ended "
            "within 50 ms); outputs re-checked every 4 sample(s); CUPTI cross-check 5 samples; per-launch timing 21 "
            "samples");
  EXPECT_FALSE(warmup_done(6, 100.0, a.knobs));
  EXPECT_TRUE(warmup_done(7, 12.5, a.knobs));
}

TEST(Protocol, BaselineAndAbComparisonRoundTrip) {
  EvalRequest a = sample_request();
  EXPECT_FALSE(nlohmann::json(a).get<EvalRequest>().baseline.has_value());
  a.baseline = PlanSource{"old.cu", "/*kagent {} */", "/tmp/old.cubin"};
  a.ab_rule.max_pairs = 77;
  EvalRequest b = nlohmann::json(a).get<EvalRequest>();
  ASSERT_TRUE(b.baseline.has_value());
  EXPECT_EQ(b.baseline->cubin_path, "/tmp/old.cubin");
  EXPECT_EQ(b.ab_rule.max_pairs, 77);

  EvalOutcome o;
  o.ab = AbComparison{{40, 1.1, 1.09, 1.11}, 0.55, 0.5, false, "out differs", "converged"};
  EvalOutcome back = nlohmann::json(o).get<EvalOutcome>();
  ASSERT_TRUE(back.ab.has_value());
  EXPECT_EQ(back.ab->ratio.n, 40);
  EXPECT_DOUBLE_EQ(back.ab->ratio.low, 1.09);
  EXPECT_FALSE(back.ab->baseline_correct);
  EXPECT_EQ(back.ab->baseline_message, "out differs");
  EXPECT_FALSE(nlohmann::json(EvalOutcome{}).get<EvalOutcome>().ab.has_value());
}

TEST(Protocol, CuptiCrossCheckRoundTrips) {
  EvalRequest a = sample_request();
  EXPECT_TRUE(nlohmann::json(a).get<EvalRequest>().cupti_check);  // on unless asked otherwise
  a.cupti_check = false;
  EXPECT_FALSE(nlohmann::json(a).get<EvalRequest>().cupti_check);
  EvalOutcome o;
  o.cupti = CuptiCheck{true, "", 5, 250, 249, 1, 0, 1.25, 0.74, 0.148, "one missing", 3};
  o.launch_times = {{"add_range", 0.006, 0.02, 0.003, {}}, {"cuDNN conv2d", 0.006, 0.02, -1, {"fprop", "splitk"}}};
  EvalOutcome back = nlohmann::json(o).get<EvalOutcome>();
  ASSERT_TRUE(back.cupti.has_value());
  EXPECT_EQ(back.cupti->launches_seen, 249);
  EXPECT_EQ(back.cupti->library_side_kernels, 3);
  EXPECT_EQ(back.launch_times[1].library_kernels, (std::vector<std::string>{"fprop", "splitk"}));
  EXPECT_DOUBLE_EQ(back.cupti->kernel_median_ms, 0.148);
  EXPECT_EQ(back.cupti->problem, "one missing");
  EXPECT_DOUBLE_EQ(back.launch_times[0].cupti_ms, 0.003);
  EXPECT_DOUBLE_EQ(back.launch_times[1].cupti_ms, -1);
  // A launch time written before CUPTI existed reads back as "no CUPTI time".
  nlohmann::json old = {{"kernel", "k"}, {"median_ms", 1.0}, {"share", 1.0}};
  EXPECT_DOUBLE_EQ(old.get<LaunchTime>().cupti_ms, -1);
}

// Flags travel as objects with their kind by name; kagent reads back what the runner wrote.
TEST(Protocol, FlagsRoundTripWithTheirKinds) {
  EvalOutcome o;
  o.flags = {{FlagKind::weak_reference, "out", 0, 0, "is 97.0% exact zeros"},
             {FlagKind::timing_untrusted, "", 249, 250, "one missing"},
             {FlagKind::below_memory_floor, "", 0.001, 0.002, "8 bytes at 3352 GB/s peak"}};
  const nlohmann::json j = o;
  ASSERT_TRUE(j["flags"].is_array());
  EXPECT_EQ(j["flags"][0]["kind"], "weak_reference");
  EXPECT_EQ(j["flags"][0]["subject"], "out");
  EXPECT_EQ(j["flags"][1]["text"], "cupti: one missing");
  const EvalOutcome back = j.get<EvalOutcome>();
  ASSERT_EQ(back.flags.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.flags[i].kind, o.flags[i].kind);
    EXPECT_EQ(back.flags[i].subject, o.flags[i].subject);
    EXPECT_EQ(flag_text(back.flags[i]), flag_text(o.flags[i]));
  }
  EXPECT_DOUBLE_EQ(back.flags[1].value, 249);
  EXPECT_DOUBLE_EQ(back.flags[2].limit, 0.002);
}

TEST(Protocol, GuardChecksAreOnUnlessTurnedOff) {
  EvalRequest a = sample_request();
  EXPECT_TRUE(nlohmann::json(a).get<EvalRequest>().guard_checks);
  a.guard_checks = false;
  EXPECT_FALSE(nlohmann::json(a).get<EvalRequest>().guard_checks);
  // A request from a kagent that predates the field gets them.
  nlohmann::json old = nlohmann::json(sample_request());
  old.erase("guard_checks");
  EXPECT_TRUE(old.get<EvalRequest>().guard_checks);
}

TEST(Protocol, KernelMetricsRoundTrip) {
  EvalRequest a = sample_request();
  EXPECT_FALSE(nlohmann::json(a).get<EvalRequest>().metrics);
  a.metrics = true;
  EXPECT_TRUE(nlohmann::json(a).get<EvalRequest>().metrics);
  EvalOutcome o;
  o.metrics = {{"k", 0.5, 91.5, 12.0, 80.0, 40.0, 0.0}};
  EvalOutcome back = nlohmann::json(o).get<EvalOutcome>();
  ASSERT_EQ(back.metrics.size(), 1u);
  EXPECT_DOUBLE_EQ(back.metrics[0].dram_pct, 91.5);
  o.metrics.clear();
  o.metrics_note = "cuptiProfilerInitialize: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES";
  back = nlohmann::json(o).get<EvalOutcome>();
  EXPECT_TRUE(back.metrics.empty());
  EXPECT_EQ(back.metrics_note, o.metrics_note);
  // How a graph plan's counters were taken travels with them; absent, it reads as "as timed".
  o.metrics_replay = "this pass ran the plan's launches one by one, not as its CUDA graph";
  EXPECT_EQ(nlohmann::json(o).get<EvalOutcome>().metrics_replay, o.metrics_replay);
  EXPECT_FALSE(nlohmann::json(EvalOutcome{}).contains("metrics_replay"));
}

TEST(Protocol, TensorCoreRoofsTravelWithThePeaks) {
  DevicePeaks p;
  p.tf32_mma_gflops = 360000;
  p.f16_mma_gflops = 700000;
  p.bf16_mma_gflops = 698000;
  p.mma_note = "";
  DevicePeaks back = nlohmann::json(p).get<DevicePeaks>();
  EXPECT_EQ(back.tf32_mma_gflops, 360000);
  EXPECT_EQ(back.f16_mma_gflops, 700000);
  EXPECT_EQ(back.bf16_mma_gflops, 698000);
  // A runner of an earlier version sends none: zero, not an error.
  nlohmann::json old = nlohmann::json(DevicePeaks{});
  old.erase("tf32_mma_gflops");
  EXPECT_EQ(old.get<DevicePeaks>().tf32_mma_gflops, 0);
}

TEST(Protocol, ScalarsKeepTheirKind) {
  nlohmann::json j = sample_request();
  EXPECT_TRUE(j["scalars"][0]["value"].is_number_float());
  EXPECT_TRUE(j["scalars"][1]["value"].is_number_integer());  // an int never becomes 7.0
  EvalRequest b = j.get<EvalRequest>();
  ASSERT_EQ(b.scalars.size(), 2u);
  EXPECT_FALSE(b.scalars[0].value.is_int);
  EXPECT_DOUBLE_EQ(b.scalars[0].value.f, 3.14);
  EXPECT_TRUE(b.scalars[1].value.is_int);
  EXPECT_EQ(b.scalars[1].value.i, 7);
}

TEST(Protocol, BooleanScalarIsAnInteger) {
  nlohmann::json j = sample_request();
  j["scalars"] = {{{"name", "flag"}, {"value", true}}};
  EvalRequest b = j.get<EvalRequest>();
  EXPECT_TRUE(b.scalars[0].value.is_int);
  EXPECT_EQ(b.scalars[0].value.i, 1);
}

TEST(Protocol, UnknownReferenceKindIsRejected) {
  nlohmann::json j = sample_request();
  j["reference_kind"] = "triton";
  EXPECT_ANY_THROW(j.get<EvalRequest>());
}

TEST(Protocol, IpcTensorRefRoundTrips) {
  IpcTensorRef r{"x", std::string(128, 'a'), 512, 6442450944ull};
  IpcTensorRef b = nlohmann::json(r).get<IpcTensorRef>();
  EXPECT_EQ(b.name, "x");
  EXPECT_EQ(b.handle, r.handle);
  EXPECT_EQ(b.offset, 512u);
  EXPECT_EQ(b.bytes, 6442450944ull);
}

// The fp64 reference's figures travel with a mismatch and with every output's error record; an
// outcome without them (a native reference, or none fitted) reads back without them.
TEST(Protocol, Fp64ErrorsRoundTrip) {
  EvalOutcome o;
  MismatchReport m;
  m.tensor = "out";
  m.count = 1;
  m.numel = 1024;
  m.max_abs = 1.65e-4;
  m.reference_fp64_value = 0.25;
  m.max_abs_fp64 = 3e-4;
  m.ref_error_fp64 = 1.2e-4;
  o.mismatch = m;
  o.errors = {{"out", 1.65e-4, 2e-6, 1.6e-4, 3, 0.75, 2e-7, 1e-7, 5e-6, "tf32", ""},
              {"out1", 0.0, std::nullopt, std::nullopt, 0, 0.0, std::nullopt, std::nullopt, std::nullopt, "",
               "no fp64 reference"}};
  o.fp64_note = "the fp64 forward failed (RuntimeError: not implemented for 'Double')";
  const nlohmann::json j = o;
  EXPECT_TRUE(j["errors"][1]["max_abs_fp64"].is_null());
  EvalOutcome b = j.get<EvalOutcome>();
  ASSERT_TRUE(b.mismatch.has_value());
  EXPECT_DOUBLE_EQ(*b.mismatch->reference_fp64_value, 0.25);
  EXPECT_DOUBLE_EQ(*b.mismatch->max_abs_fp64, 3e-4);
  EXPECT_DOUBLE_EQ(*b.mismatch->ref_error_fp64, 1.2e-4);
  ASSERT_EQ(b.errors.size(), 2u);
  EXPECT_EQ(b.errors[0].tensor, "out");
  EXPECT_DOUBLE_EQ(b.errors[0].max_abs, 1.65e-4);
  EXPECT_DOUBLE_EQ(*b.errors[0].max_abs_fp64, 2e-6);
  EXPECT_DOUBLE_EQ(*b.errors[0].ref_error_fp64, 1.6e-4);
  EXPECT_EQ(b.errors[0].passed_by_fp64, 3u);
  EXPECT_DOUBLE_EQ(*b.errors[0].rel_l2, 2e-7);
  EXPECT_DOUBLE_EQ(*b.errors[0].ref_rel_l2_fp64, 1e-7);
  EXPECT_DOUBLE_EQ(*b.errors[0].precision_limit, 5e-6);
  EXPECT_EQ(b.errors[0].precision_nearest, "tf32");
  EXPECT_FALSE(b.errors[1].precision_limit);
  EXPECT_EQ(b.errors[1].precision_note, "no fp64 reference");
  EXPECT_DOUBLE_EQ(b.errors[0].zero_share, 0.75);
  EXPECT_FALSE(b.errors[1].max_abs_fp64.has_value());
  EXPECT_FALSE(b.errors[1].ref_error_fp64.has_value());
  EXPECT_EQ(b.fp64_note, o.fp64_note);

  EvalOutcome plain = nlohmann::json(EvalOutcome{}).get<EvalOutcome>();
  EXPECT_TRUE(plain.errors.empty());
  EXPECT_TRUE(plain.fp64_note.empty());
  MismatchReport no64 = nlohmann::json(MismatchReport{}).get<MismatchReport>();
  EXPECT_FALSE(no64.reference_fp64_value.has_value());
  EXPECT_FALSE(no64.max_abs_fp64.has_value());
}

// Failure stages travel by name; every stage reads back as itself and an unknown name is refused.
TEST(Protocol, FailureStagesTravelByName) {
  for (FailureStage s :
       {FailureStage::none, FailureStage::plan, FailureStage::launch, FailureStage::correctness, FailureStage::recheck,
        FailureStage::bounds, FailureStage::reference, FailureStage::timeout, FailureStage::crash, FailureStage::tamper,
        FailureStage::inputs, FailureStage::torch_ops, FailureStage::precision}) {
    EvalOutcome o;
    o.failure_stage = s;
    const nlohmann::json j = o;
    EXPECT_EQ(j.at("failure_stage"), std::string(failure_stage_name(s)));
    EXPECT_EQ(j.get<EvalOutcome>().failure_stage, s) << failure_stage_name(s);
  }
  EXPECT_EQ(failure_stage_name(FailureStage::recheck), "re-check");
  nlohmann::json bad = EvalOutcome{};
  bad["failure_stage"] = "exploded";
  EXPECT_THROW(bad.get<EvalOutcome>(), std::exception);
}

}  // namespace
}  // namespace kagent
