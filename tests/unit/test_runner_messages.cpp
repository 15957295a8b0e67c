// The typed, versioned messages between kagent and kagent-runner (runner_messages.hpp): each
// round-trips through its JSON, and a reader refuses a version it does not know, naming the
// message and both versions.
#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/protocol/runner_messages.hpp"

using namespace kagent;

namespace {

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// The EnvError's message when `j` (with its "version" replaced) is read as T.
template <typename T>
std::string refusal(nlohmann::json j, const nlohmann::json& version) {
  if (version.is_null())
    j.erase("version");
  else
    j["version"] = version;
  try {
    (void)j.get<T>();
  } catch (const EnvError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(RunnerMessages, AnEvaluateReplyRoundTrips) {
  RunnerResult r;
  r.ok = true;
  r.restart = true;
  r.outcome = EvalOutcome{};
  r.outcome->correct = true;
  r.outcome->failure_stage = FailureStage::none;
  r.outcome->trials_run = 5;
  nlohmann::json j = r;
  EXPECT_EQ(j.at("version"), kRunnerMessageVersion);
  EXPECT_EQ(j.at("restart"), true);  // child_client.cpp reads this key itself
  RunnerResult back = j.get<RunnerResult>();
  EXPECT_TRUE(back.ok);
  EXPECT_TRUE(back.restart);
  EXPECT_FALSE(back.environment);
  ASSERT_TRUE(back.outcome.has_value());
  EXPECT_TRUE(back.outcome->correct);
  EXPECT_EQ(back.outcome->trials_run, 5);
  EXPECT_FALSE(back.peaks.has_value());
}

TEST(RunnerMessages, AFailedAndAPeaksReplyRoundTrip) {
  RunnerResult failed;
  failed.error = "cuInit failed: no CUDA-capable device is detected";
  failed.environment = true;
  RunnerResult back = nlohmann::json(failed).get<RunnerResult>();
  EXPECT_FALSE(back.ok);
  EXPECT_TRUE(back.environment);
  EXPECT_EQ(back.error, failed.error);
  EXPECT_FALSE(back.outcome.has_value());

  RunnerResult peaks;
  peaks.ok = true;
  peaks.peaks = DevicePeaks{};
  peaks.peaks->copy_gbs = 2900;
  peaks.peaks->gemm_by = "cuBLAS";
  back = nlohmann::json(peaks).get<RunnerResult>();
  ASSERT_TRUE(back.peaks.has_value());
  EXPECT_EQ(back.peaks->copy_gbs, 2900);
  EXPECT_EQ(back.peaks->gemm_by, "cuBLAS");
}

TEST(RunnerMessages, TheTrialExchangeRoundTrips) {
  TrialNeed need;
  need.trial = 3;
  need.seed = 0xFEEDFACECAFEBEEFull;
  nlohmann::json j = need;
  EXPECT_EQ(j.at("need"), "trial");  // the enum by name: child_client.cpp finds "need" messages by this key
  TrialNeed nback = j.get<TrialNeed>();
  EXPECT_EQ(nback.need, RunnerNeed::trial);
  EXPECT_EQ(nback.trial, 3);
  EXPECT_EQ(nback.seed, 0xFEEDFACECAFEBEEFull);

  TrialAnswer answer;
  answer.tensors = {{"x", std::string(128, 'a'), 0, 4096}, {"y", std::string(128, 'b'), 4096, 4096}};
  answer.fp64_note = "fp64 does not fit";
  TrialAnswer aback = nlohmann::json(answer).get<TrialAnswer>();
  ASSERT_EQ(aback.tensors.size(), 2u);
  EXPECT_EQ(aback.tensors[1].name, "y");
  EXPECT_EQ(aback.tensors[1].offset, 4096u);
  EXPECT_EQ(aback.fp64_note, "fp64 does not fit");
  EXPECT_TRUE(aback.error.empty());

  TrialAnswer failed;
  failed.error = "the reference server died";
  aback = nlohmann::json(failed).get<TrialAnswer>();
  EXPECT_EQ(aback.error, "the reference server died");
  EXPECT_TRUE(aback.tensors.empty());
}

TEST(RunnerMessages, TheCompareRequestRoundTrips) {
  CompareRequest rq;
  rq.gpu = 1;
  rq.harness_cubin_path = "/tmp/h.cubin";
  rq.tolerance = {1e-5, 2e-5};
  TensorSpec x;
  x.name = "x";
  x.shape = {4, 8};
  rq.inputs = {x};
  TensorSpec out = x;
  out.name = "out";
  rq.outputs = {out};
  rq.reference = {{"x", std::string(128, 'a'), 0, 128},
                  {"out", std::string(128, 'a'), 512, 128},
                  {"out@f64", std::string(128, 'a'), 1024, 256}};
  rq.candidate = {{"out", std::string(128, 'c'), 0, 128}, {"x", std::string(128, 'c'), 512, 128}};
  rq.trial = 2;
  rq.when = "re-check after timing";
  rq.first_check = true;
  const nlohmann::json j = rq;
  EXPECT_EQ(j.at("cmd"), "compare");  // the runner dispatches on it
  CompareRequest back = j.get<CompareRequest>();
  EXPECT_EQ(back.gpu, 1);
  EXPECT_EQ(back.harness_cubin_path, "/tmp/h.cubin");
  EXPECT_DOUBLE_EQ(back.tolerance.rtol, 2e-5);
  ASSERT_EQ(back.outputs.size(), 1u);
  EXPECT_EQ(back.outputs[0].name, "out");
  EXPECT_EQ(back.inputs[0].shape, (std::vector<int64_t>{4, 8}));
  ASSERT_EQ(back.reference.size(), 3u);
  EXPECT_EQ(back.reference[2].name, "out@f64");
  EXPECT_EQ(back.candidate[1].offset, 512u);
  EXPECT_EQ(back.trial, 2);
  EXPECT_EQ(back.when, "re-check after timing");
  EXPECT_TRUE(back.first_check);
  nlohmann::json old = j;
  old["version"] = 99;
  EXPECT_THROW(old.get<CompareRequest>(), EnvError);
}

TEST(RunnerMessages, AnUnknownNeedIsRefused) {
  nlohmann::json j = TrialNeed{};
  j["need"] = "weights";
  EXPECT_THROW(j.get<TrialNeed>(), InputError);
}

TEST(RunnerMessages, AnotherVersionIsRefusedNamingTheMessageAndBothVersions) {
  const std::string reply = refusal<RunnerResult>(RunnerResult{}, 2);
  EXPECT_TRUE(has(reply, "kagent-runner's reply")) << reply;
  EXPECT_TRUE(has(reply, "version 2")) << reply;
  EXPECT_TRUE(has(reply, fmt::format("version {}", kRunnerMessageVersion))) << reply;

  const std::string need = refusal<TrialNeed>(TrialNeed{}, 7);
  EXPECT_TRUE(has(need, "request for a trial")) << need;
  EXPECT_TRUE(has(need, "version 7")) << need;

  const std::string answer = refusal<TrialAnswer>(TrialAnswer{}, 0);
  EXPECT_TRUE(has(answer, "answer with a trial's tensors")) << answer;
  EXPECT_TRUE(has(answer, "version 0")) << answer;

  const std::string unversioned = refusal<RunnerResult>(RunnerResult{}, nullptr);
  EXPECT_TRUE(has(unversioned, "no version")) << unversioned;
}

TEST(RunnerMessages, ALibraryStepsRequestAndItsReplyRoundTrip) {
  LibraryStepsRequest rq;
  rq.gpu = 1;
  rq.harness_cubin_path = "/tmp/h.cubin";
  rq.tf32 = true;
  rq.stop_rule.max_samples = 7;
  rq.plans = {{{"scratch", nlohmann::json::object()}, {"launch", {{{"gemm", {{"m", 4}}}}}}}};
  const nlohmann::json j = rq;
  EXPECT_EQ(j.at("cmd"), "library_steps");  // the runner dispatches on it
  const LibraryStepsRequest back = j.get<LibraryStepsRequest>();
  EXPECT_EQ(back.gpu, 1);
  EXPECT_EQ(back.harness_cubin_path, rq.harness_cubin_path);
  EXPECT_TRUE(back.tf32);
  EXPECT_EQ(back.stop_rule.max_samples, 7);
  EXPECT_EQ(back.plans, rq.plans);
  EXPECT_TRUE(has(refusal<LibraryStepsRequest>(j, 99), "kagent's library_steps request"));

  RunnerResult r;
  r.ok = true;
  r.step_times = std::vector<LibraryStepTime>{{0.125, 12, "cuBLASLt gemm 4x4x4 f32 (IEEE fp32)", ""},
                                              {std::nullopt, 0, "", "plan key launch[0].gemm.a: too small"}};
  const RunnerResult rb = nlohmann::json(r).get<RunnerResult>();
  ASSERT_TRUE(rb.step_times.has_value());
  ASSERT_EQ(rb.step_times->size(), 2u);
  EXPECT_EQ((*rb.step_times)[0].median_ms, 0.125);
  EXPECT_EQ((*rb.step_times)[0].samples, 12);
  EXPECT_EQ((*rb.step_times)[0].step, "cuBLASLt gemm 4x4x4 f32 (IEEE fp32)");
  EXPECT_FALSE((*rb.step_times)[1].median_ms.has_value());
  EXPECT_EQ((*rb.step_times)[1].error, "plan key launch[0].gemm.a: too small");
  EXPECT_FALSE(nlohmann::json(RunnerResult{}).get<RunnerResult>().step_times.has_value());
}
