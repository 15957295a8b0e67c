// kagent serve's request parser and problem paths: every refusal is a RequestError with its HTTP
// status and the field it is about; nothing else escapes.
#include <gtest/gtest.h>

#include <filesystem>

#include "kagent/protocol/measure_preset.hpp"
#include "kagent/protocol/protocol.hpp"
#include "kagent/serve/problem_path.hpp"
#include "kagent/serve/request.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::serve;

namespace {

// Limits as kagent serve fills them in: the candidate kinds by name.
RequestLimits served() {
  RequestLimits l;
  l.kinds = {"plan", "modelnew"};
  return l;
}

// The status and field of the refusal, or {0, ""} when the body is accepted.
std::pair<int, std::string> refusal(const std::string& body, const RequestLimits& limits = served()) {
  try {
    parse_evaluate_request(body, limits);
    return {0, ""};
  } catch (const RequestError& e) {
    return {e.status(), e.field()};
  }
}

std::pair<int, std::string> batch_refusal(const std::string& body, const RequestLimits& limits = {}) {
  try {
    parse_batch_request(body, limits);
    return {0, ""};
  } catch (const RequestError& e) {
    return {e.status(), e.field()};
  }
}

const std::string kOk = R"("source": "__global__ void k() {}", "kind": "plan", "problem": "level1/19")";

std::string with(const std::string& extra) {
  return "{" + kOk + ", " + extra + "}";
}

}  // namespace

TEST(ServeRequest, ReadsEveryField) {
  const auto r = parse_evaluate_request(
      with(R"("name": "s3.cu", "precision": "bf16", "atol": 0.01, "rtol": 0.02, "trials": 3, "timing": false,
              "timeout_s": 30, "measure": {"min_samples": 5, "max_samples": 50, "min_gpu_s": 0.01, "max_gpu_s": 1,
              "max_wall_s": 5, "target_rse": 0.01, "warmup_samples": 2, "warmup_ms": 10, "check_every": 8, "warmup_credit_gap_ms": 0,
              "cupti_samples": 3, "launch_samples": 7, "allow_torch_ops": true})"),
      {});
  const judge::CandidateRequest& c = r.candidate;
  EXPECT_EQ(r.problem, "level1/19");
  EXPECT_EQ(c.kind, "plan");
  EXPECT_EQ(c.name, "s3.cu");
  ASSERT_TRUE(c.precision.has_value());
  EXPECT_EQ(*c.precision, Precision::bf16);
  EXPECT_DOUBLE_EQ(*c.overrides.atol, 0.01);
  EXPECT_DOUBLE_EQ(*c.overrides.rtol, 0.02);
  EXPECT_EQ(c.trials, 3);
  EXPECT_FALSE(c.timing);
  EXPECT_EQ(c.timeout.count(), 30000);
  EXPECT_EQ(c.stop_rule.min_samples, 5);
  EXPECT_EQ(c.stop_rule.max_samples, 50);
  EXPECT_DOUBLE_EQ(c.stop_rule.target_rse, 0.01);
  EXPECT_EQ(c.knobs.warmup_runs, 2);
  EXPECT_EQ(c.knobs.check_every, 8);
  EXPECT_DOUBLE_EQ(c.knobs.warmup_credit_gap_ms, 0);
  EXPECT_EQ(c.knobs.per_launch_samples, 7);
  EXPECT_EQ(c.torch_ops, TorchOps::allow);  // the older boolean
  // Defaults: the op's precision and tolerance, the service's timeout.
  RequestLimits limits;
  limits.default_timeout_s = 42;
  const auto d = parse_evaluate_request("{" + kOk + "}", limits);
  EXPECT_FALSE(d.candidate.precision.has_value());
  EXPECT_TRUE(d.candidate.overrides.empty());
  EXPECT_EQ(d.candidate.timeout.count(), 42000);
  EXPECT_EQ(d.candidate.torch_ops, TorchOps::fail);  // the service's: no reward for calling PyTorch
  EXPECT_EQ(parse_evaluate_request(with(R"("tolerance": 0.01)"), {}).candidate.overrides.rtol, 0.01);
  EXPECT_EQ(parse_evaluate_request(R"({"source": "class ModelNew: pass", "kind": "modelnew", "problem": "x"})", {})
                .candidate.kind,
            "modelnew");
}

TEST(ServeRequest, APresetThenTheMeasureFieldsBesideIt) {
  const MeasurePreset& t = measure_preset("training");
  const auto p = parse_evaluate_request(with(R"("measure": {"preset": "training"})"), {});
  EXPECT_EQ(nlohmann::json(p.candidate.stop_rule), nlohmann::json(t.stop_rule));
  EXPECT_EQ(nlohmann::json(p.candidate.knobs), nlohmann::json(t.knobs));
  // A field beside the preset overrides its value, wherever it stands in the object.
  const auto o = parse_evaluate_request(with(R"("measure": {"min_gpu_s": 0.05, "preset": "training"})"), {});
  EXPECT_DOUBLE_EQ(o.candidate.stop_rule.min_gpu_s, 0.05);
  EXPECT_EQ(o.candidate.stop_rule.max_samples, t.stop_rule.max_samples);
  EXPECT_DOUBLE_EQ(o.candidate.knobs.warmup_ms, t.knobs.warmup_ms);
  // The training preset counts each sample's set-up toward its GPU time; a request may say otherwise.
  EXPECT_TRUE(t.stop_rule.count_setup);
  EXPECT_FALSE(parse_evaluate_request(with(R"("measure": {"preset": "training", "count_setup": false})"), {})
                   .candidate.stop_rule.count_setup);
  EXPECT_TRUE(parse_evaluate_request(with(R"("measure": {"count_setup": true})"), {}).candidate.stop_rule.count_setup);
  // The service's default preset (kagent serve --preset) for requests that name none.
  RequestLimits training;
  training.default_preset = "training";
  EXPECT_EQ(nlohmann::json(parse_evaluate_request("{" + kOk + "}", training).candidate.stop_rule),
            nlohmann::json(t.stop_rule));
  EXPECT_EQ(
      nlohmann::json(
          parse_evaluate_request(with(R"("measure": {"min_samples": 30})"), training).candidate.stop_rule.min_gpu_s),
      nlohmann::json(t.stop_rule.min_gpu_s));
  EXPECT_EQ(
      nlohmann::json(parse_evaluate_request(with(R"("measure": {"preset": "default"})"), training).candidate.stop_rule),
      nlohmann::json(StopRule{}));
}

TEST(ServeRequest, TheTorchOpsPolicyFromTheServiceThePresetAndTheRequest) {
  auto policy = [](const std::string& measure, RequestLimits limits = {}) {
    return parse_evaluate_request(measure.empty() ? "{" + kOk + "}" : with(R"("measure": )" + measure), limits)
        .candidate.torch_ops;
  };
  EXPECT_EQ(policy(""), TorchOps::fail);
  EXPECT_EQ(policy(R"({"preset": "training"})"), TorchOps::fail);
  EXPECT_EQ(policy(R"({"torch_ops": "cap"})"), TorchOps::cap);
  EXPECT_EQ(policy(R"({"preset": "training", "torch_ops": "allow"})"), TorchOps::allow);
  EXPECT_EQ(policy(R"({"allow_torch_ops": false})"), TorchOps::cap);
  // kagent serve --torch-ops cap: the default of requests that do not say; the training preset still fails.
  RequestLimits cap;
  cap.default_torch_ops = TorchOps::cap;
  EXPECT_EQ(policy("", cap), TorchOps::cap);
  EXPECT_EQ(policy(R"({"preset": "training"})", cap), TorchOps::fail);
  EXPECT_EQ(policy(R"({"torch_ops": "fail"})", cap), TorchOps::fail);
}

TEST(ServeRequest, EveryRequestTakesTheServicesSharedBaselines) {
  RequestLimits shared;
  shared.baselines = std::make_shared<const BaselinesFile>();
  EXPECT_EQ(parse_evaluate_request("{" + kOk + "}", shared).candidate.baselines, shared.baselines);
  EXPECT_EQ(parse_evaluate_request(with(R"("measure": {"preset": "training"})"), shared).candidate.baselines,
            shared.baselines);
  EXPECT_EQ(parse_evaluate_request("{" + kOk + "}", RequestLimits{}).candidate.baselines, nullptr);
}

TEST(ServeRequest, BadRequestsNameTheField) {
  using P = std::pair<int, std::string>;
  EXPECT_EQ(refusal("{" + kOk + "}"), P(0, ""));
  EXPECT_EQ(refusal("{\"source\": "), P(400, "body"));  // malformed JSON
  EXPECT_EQ(refusal(""), P(400, "body"));
  EXPECT_EQ(refusal("[1, 2]"), P(400, "body"));                                 // not an object
  EXPECT_EQ(refusal(with(R"("tolerence": 0.1)")), P(400, "tolerence"));         // unknown field
  EXPECT_EQ(refusal(R"({"kind": "plan", "problem": "x"})"), P(400, "source"));  // missing
  EXPECT_EQ(refusal(R"({"source": "x", "problem": "x"})"), P(400, "kind"));
  EXPECT_EQ(refusal(R"({"source": "x", "kind": "plan"})"), P(400, "problem"));
  EXPECT_EQ(refusal(R"({"source": 7, "kind": "plan", "problem": "x"})"), P(400, "source"));  // wrong types
  EXPECT_EQ(refusal(R"({"source": "x", "kind": "cuda", "problem": "x"})"), P(400, "kind"));
  EXPECT_EQ(refusal(R"({"source": "x", "kind": "", "problem": "x"})", {}), P(400, "kind"));
  EXPECT_EQ(refusal(R"({"source": "x", "kind": "toy", "problem": "x"})", {}), P(0, ""));  // the backend judges it
  EXPECT_EQ(refusal(R"({"source": "x", "kind": "plan", "problem": ""})"), P(400, "problem"));
  EXPECT_EQ(refusal(with(R"("precision": "fp8")")), P(400, "precision"));
  EXPECT_EQ(refusal(with(R"("precision": 16)")), P(400, "precision"));
  EXPECT_EQ(refusal(with(R"("atol": "1e-3")")), P(400, "atol"));
  EXPECT_EQ(refusal(with(R"("atol": -1)")), P(400, "atol"));
  EXPECT_EQ(refusal(with(R"("tolerance": 0.1, "atol": 0.1)")), P(400, "tolerance"));
  EXPECT_EQ(refusal(with(R"("trials": 0)")), P(400, "trials"));
  EXPECT_EQ(refusal(with(R"("trials": 2.5)")), P(400, "trials"));
  EXPECT_EQ(refusal(with(R"("trials": 18446744073709551615)")), P(400, "trials"));
  EXPECT_EQ(refusal(with(R"("trials": -9223372036854775808)")), P(400, "trials"));
  EXPECT_EQ(refusal(with(R"("timing": "yes")")), P(400, "timing"));
  EXPECT_EQ(refusal(with(R"("timeout_s": 0)")), P(400, "timeout_s"));
  EXPECT_EQ(refusal(with(R"("timeout_s": 1e-300)")), P(400, "timeout_s"));
  EXPECT_EQ(refusal(with(R"("timeout_s": 1e9)")), P(400, "timeout_s"));
  EXPECT_EQ(refusal(with(R"("measure": [])")), P(400, "measure"));
  EXPECT_EQ(refusal(with(R"("measure": {"min_sample": 3})")), P(400, "measure.min_sample"));
  EXPECT_EQ(refusal(with(R"("measure": {"min_samples": "3"})")), P(400, "measure.min_samples"));
  EXPECT_EQ(refusal(with(R"("measure": {"min_samples": 30, "max_samples": 20})")), P(400, "measure.max_samples"));
  EXPECT_EQ(refusal(with(R"("measure": {"min_gpu_s": 3, "max_gpu_s": 2})")), P(400, "measure.max_gpu_s"));
  EXPECT_EQ(refusal(with(R"("measure": {"target_rse": 2})")), P(400, "measure.target_rse"));
  EXPECT_EQ(refusal(with(R"("measure": {"allow_torch_ops": 1})")), P(400, "measure.allow_torch_ops"));
  EXPECT_EQ(refusal(with(R"("measure": {"torch_ops": "permit"})")), P(400, "measure.torch_ops"));
  EXPECT_EQ(refusal(with(R"("measure": {"torch_ops": "cap", "allow_torch_ops": true})")),
            P(400, "measure.allow_torch_ops"));
  EXPECT_EQ(refusal(with(R"("measure": {"preset": "fast"})")), P(400, "measure.preset"));
  EXPECT_EQ(refusal(with(R"("measure": {"preset": 1})")), P(400, "measure.preset"));
  EXPECT_EQ(refusal(with(R"("name": "a", "name": "b")")).first, 400);            // duplicate key
  EXPECT_EQ(refusal(std::string(100, '[') + std::string(100, ']')).first, 400);  // too deep
  // A null is the field left out.
  EXPECT_EQ(refusal(with(R"("precision": null)")), P(0, ""));
}

TEST(ServeRequest, TooLargeIs413) {
  RequestLimits limits;
  limits.max_body_bytes = 1000;
  limits.max_source_bytes = 100;
  EXPECT_EQ(refusal(with("\"name\": \"" + std::string(2000, 'x') + "\""), limits),
            std::make_pair(413, std::string("body")));
  EXPECT_EQ(refusal(R"({"source": ")" + std::string(200, 'x') + R"(", "kind": "plan", "problem": "x"})", limits),
            std::make_pair(413, std::string("source")));
  limits.max_batch = 2;
  const std::string one = "{" + kOk + "}";
  EXPECT_EQ(batch_refusal("{\"requests\": [" + one + "," + one + "]}", limits).first, 0);
  EXPECT_EQ(batch_refusal("{\"requests\": [" + one + "," + one + "," + one + "]}", limits),
            std::make_pair(413, std::string("requests")));
}

TEST(ServeRequest, BatchFieldsAreNumbered) {
  const std::string one = "{" + kOk + "}";
  auto rs = parse_batch_request("{\"requests\": [" + one + "," + one + "]}", {});
  EXPECT_EQ(rs.size(), 2u);
  using P = std::pair<int, std::string>;
  EXPECT_EQ(batch_refusal("{\"requests\": [" + one + ", {\"source\": \"x\", \"kind\": 1, \"problem\": \"x\"}]}"),
            P(400, "requests[1].kind"));
  EXPECT_EQ(batch_refusal("{\"requests\": [" + with(R"("measure": {"x": 1})") + "]}"), P(400, "requests[0].measure.x"));
  EXPECT_EQ(batch_refusal(R"({"requests": []})"), P(400, "requests"));
  EXPECT_EQ(batch_refusal(R"({"requests": {}})"), P(400, "requests"));
  EXPECT_EQ(batch_refusal(R"({})"), P(400, "requests"));
  EXPECT_EQ(batch_refusal(R"({"requests": [], "extra": 1})"), P(400, "extra"));
}

TEST(ServeProblemPath, ConfinedToTheRoot) {
  test::TempDir tmp;
  const auto root = tmp.path() / "root";
  tmp.write("root/level1/19_ReLU.py", "# problem\n");
  tmp.write("root/level1/190_Other.py", "# problem\n");
  tmp.write("root/level2/1_A.py", "# a\n");
  tmp.write("root/level2/1_B.py", "# b\n");
  tmp.write("root/ops/softmax/op.json", "{}");
  tmp.write("secret.py", "# outside\n");
  std::filesystem::create_directory_symlink(tmp.path(), root / "escape");
  const auto canon = std::filesystem::canonical(root);
  EXPECT_EQ(resolve_problem(root, "level1/19"), canon / "level1/19_ReLU.py");
  EXPECT_EQ(resolve_problem(root, "level1/19_ReLU"), canon / "level1/19_ReLU.py");
  EXPECT_EQ(resolve_problem(root, "level1/19_ReLU.py"), canon / "level1/19_ReLU.py");
  EXPECT_EQ(resolve_problem(root, "ops/softmax"), canon / "ops/softmax/op.json");
  EXPECT_EQ(resolve_problem(root, "ops/softmax/op.json"), canon / "ops/softmax/op.json");
  auto code = [&](const std::string& name) {
    try {
      resolve_problem(root, name, "requests[2].problem");
      return std::make_pair(0, std::string());
    } catch (const RequestError& e) {
      return std::make_pair(e.status(), e.field());
    }
  };
  const auto traversal = std::make_pair(400, std::string("requests[2].problem"));
  EXPECT_EQ(code("../secret.py"), traversal);
  EXPECT_EQ(code("level1/../../secret.py"), traversal);
  EXPECT_EQ(code((tmp.path() / "secret.py").string()), traversal);  // absolute
  EXPECT_EQ(code("escape/secret.py"), traversal);                   // a symlink out
  EXPECT_EQ(code("~/secret.py"), traversal);
  EXPECT_EQ(code(std::string("level1/19\0x", 11)), traversal);
  EXPECT_EQ(code("level2/1").first, 400);  // two files match
  EXPECT_EQ(code("level1/7").first, 404);
  EXPECT_EQ(code("level9/nothing.py").first, 404);
  EXPECT_EQ(code("ops").first, 404);  // a folder without op.json
}
