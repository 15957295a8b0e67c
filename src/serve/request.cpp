// Reading a request's JSON: each field by name, with its type and range checked and any other
// field refused, so that a typo ("tolerence") is an error naming it rather than a default silently
// used.
#include "kagent/serve/request.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "json_fields.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/common/json_text.hpp"
#include "kagent/protocol/measure_preset.hpp"

namespace kagent::serve {

namespace {

using Json = nlohmann::json;

// The service's default preset (RequestLimits::default_preset), before a request's "measure".
void apply_default_preset(const RequestLimits& limits, judge::CandidateRequest& c) {
  c.torch_ops = limits.default_torch_ops;
  c.baselines = limits.baselines;
  if (const MeasurePreset* p = find_measure_preset(limits.default_preset)) {
    c.stop_rule = p->stop_rule;
    c.knobs = p->knobs;
    if (p->torch_ops) c.torch_ops = *p->torch_ops;
  }
}

void read_measure(const Json& j, const std::string& field, judge::CandidateRequest& c) {
  Fields f(j, field);
  StopRule& s = c.stop_rule;
  MeasureKnobs& k = c.knobs;
  constexpr int kMaxCount = 1000000;
  // Read first: the fields beside it override the preset's values one by one.
  if (const std::string p = f.string("preset", false, 64); !p.empty()) {
    const MeasurePreset* preset = find_measure_preset(p);
    if (!preset)
      bad(f.name("preset"), fmt::format("{}: expected one of {}", show_json(Json(p)), measure_preset_names()));
    s = preset->stop_rule;
    k = preset->knobs;
    if (preset->torch_ops) c.torch_ops = *preset->torch_ops;
  }
  if (auto v = f.integer("min_samples", 1, kMaxCount)) s.min_samples = *v;
  if (auto v = f.integer("max_samples", 1, kMaxCount)) s.max_samples = *v;
  if (auto v = f.number("min_gpu_s", 0, 3600)) s.min_gpu_s = *v;
  if (auto v = f.number("max_gpu_s", 0, 3600, true)) s.max_gpu_s = *v;
  if (auto v = f.number("max_wall_s", 0, 3600, true)) s.max_wall_s = *v;
  if (auto v = f.number("target_rse", 0, 1)) s.target_rse = *v;
  if (auto v = f.boolean("count_setup")) s.count_setup = *v;
  if (auto v = f.integer("warmup_samples", 0, kMaxCount)) k.warmup_runs = *v;
  if (auto v = f.number("warmup_ms", 0, 3.6e6)) k.warmup_ms = *v;
  if (auto v = f.number("warmup_credit_gap_ms", 0, 3.6e6)) k.warmup_credit_gap_ms = *v;
  if (auto v = f.integer("check_every", 1, kMaxCount)) k.check_every = *v;
  if (auto v = f.integer("cupti_samples", 1, kMaxCount)) k.cupti_samples = *v;
  if (auto v = f.integer("launch_samples", 1, kMaxCount)) k.per_launch_samples = *v;
  const std::string policy = f.string("torch_ops", false, 64);
  if (!policy.empty()) {
    auto p = parse_torch_ops(policy);
    if (!p) bad(f.name("torch_ops"), fmt::format("{}: expected one of {}", show_json(Json(policy)), kTorchOpsChoices));
    c.torch_ops = *p;
  }
  // The older form: true is "allow", false "cap".
  if (auto v = f.boolean("allow_torch_ops")) {
    if (!policy.empty()) bad(f.name("allow_torch_ops"), "give either torch_ops or allow_torch_ops, not both");
    c.torch_ops = *v ? TorchOps::allow : TorchOps::cap;
  }
  f.unknown();
  // The same contradictions `kagent eval`'s flags refuse (MeasureFlags::validate).
  if (s.max_samples < s.min_samples)
    bad(f.name("max_samples"), fmt::format("{} is below min_samples {}", s.max_samples, s.min_samples));
  if (s.max_gpu_s < s.min_gpu_s)
    bad(f.name("max_gpu_s"), fmt::format("{:g} is below min_gpu_s {:g}", s.max_gpu_s, s.min_gpu_s));
}

}  // namespace

void read_judging(Fields& f, const RequestLimits& limits, judge::CandidateRequest& c) {
  if (const std::string p = f.string("precision", false, 64); !p.empty()) {
    auto parsed = parse_precision(p);
    if (!parsed) bad(f.name("precision"), fmt::format("{}: expected one of {}", show_json(Json(p)), kPrecisionChoices));
    c.precision = *parsed;
  }
  const auto atol = f.number("atol", 0, 1e30);
  const auto rtol = f.number("rtol", 0, 1e30);
  const auto both = f.number("tolerance", 0, 1e30);
  if (both && (atol || rtol)) bad(f.name("tolerance"), "give either tolerance or atol/rtol, not both");
  c.overrides.atol = both ? both : atol;
  c.overrides.rtol = both ? both : rtol;
  if (auto v = f.integer("trials", 1, 100)) c.trials = *v;
  if (auto v = f.boolean("timing")) c.timing = *v;
  // At least a millisecond: the limit is kept in milliseconds, and 1e-300 is not a limit anyone means.
  const double timeout_s = f.number("timeout_s", 0.001, limits.max_timeout_s).value_or(limits.default_timeout_s);
  c.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  apply_default_preset(limits, c);
  if (const Json* m = f.get("measure")) read_measure(*m, f.name("measure"), c);
}

namespace {

EvaluateRequest read_request(const Json& j, const std::string& prefix, const RequestLimits& limits) {
  Fields f(j, prefix);
  EvaluateRequest r;
  judge::CandidateRequest& c = r.candidate;
  c.source = f.string("source", true, limits.max_source_bytes, 413);
  const std::string kind = f.string("kind", true, 64);
  if (kind.empty() ||
      (!limits.kinds.empty() && std::find(limits.kinds.begin(), limits.kinds.end(), kind) == limits.kinds.end())) {
    std::string known;
    for (const std::string& k : limits.kinds) known += fmt::format("{}\"{}\"", known.empty() ? "" : ", ", k);
    bad(f.name("kind"), fmt::format("{}: expected one of the candidate kinds ({})", show_json(Json(kind)),
                                    known.empty() ? "\"plan\", \"modelnew\"" : known));
  }
  c.kind = kind;
  r.problem = f.string("problem", true, 4096);
  if (r.problem.empty()) bad(f.name("problem"), "empty");
  c.name = f.string("name", false, 256);
  read_judging(f, limits, c);
  f.unknown();
  return r;
}

}  // namespace

EvaluateRequest parse_evaluate_request(std::string_view body, const RequestLimits& limits) {
  return read_request(parse_body(body, limits), "", limits);
}

std::vector<EvaluateRequest> parse_batch_request(std::string_view body, const RequestLimits& limits) {
  const Json j = parse_body(body, limits);
  Fields f(j, "");
  const Json* list = f.get("requests");
  f.unknown();
  if (!list) bad("requests", "missing (an array of evaluate requests is required)");
  if (!list->is_array()) bad("requests", fmt::format("expected an array, got {}", show_json(*list)));
  if (list->empty()) bad("requests", "empty");
  if (list->size() > limits.max_batch)
    throw RequestError(413, "requests",
                       fmt::format("{} requests, over the limit of {}", list->size(), limits.max_batch));
  std::vector<EvaluateRequest> out;
  for (size_t i = 0; i < list->size(); ++i)
    out.push_back(read_request((*list)[i], fmt::format("requests[{}]", i), limits));
  return out;
}

}  // namespace kagent::serve
