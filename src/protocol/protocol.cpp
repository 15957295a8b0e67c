#include "kagent/protocol/protocol.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

namespace kagent {

namespace {

std::string_view init_kind_name(InitSpec::Kind k) {
  switch (k) {
    case InitSpec::Kind::randn:
      return "randn";
    case InitSpec::Kind::rand:
      return "rand";
    case InitSpec::Kind::uniform:
      return "uniform";
    case InitSpec::Kind::normal:
      return "normal";
    case InitSpec::Kind::randint:
      return "randint";
  }
  return "randn";
}

InitSpec::Kind init_kind_from(const std::string& s) {
  for (auto k : {InitSpec::Kind::randn, InitSpec::Kind::rand, InitSpec::Kind::uniform, InitSpec::Kind::normal,
                 InitSpec::Kind::randint})
    if (init_kind_name(k) == s) return k;
  throw std::invalid_argument("unknown init kind '" + s + "'");
}

template <typename T>
void opt_to(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  if (v)
    j[key] = *v;
  else
    j[key] = nullptr;
}
template <typename T>
void opt_from(const nlohmann::json& j, const char* key, std::optional<T>& v) {
  if (j.contains(key) && !j.at(key).is_null())
    v = j.at(key).get<T>();
  else
    v.reset();
}

}  // namespace

void to_json(nlohmann::json& j, const TensorSpec& t) {
  j = {{"name", t.name},
       {"shape", t.shape},
       {"dtype", dtype_name(t.dtype)},
       {"init", {{"kind", init_kind_name(t.init.kind)}, {"a", t.init.a}, {"b", t.init.b}, {"text", t.init.text}}}};
  if (t.unread) j["unread"] = true;
}
void from_json(const nlohmann::json& j, TensorSpec& t) {
  j.at("name").get_to(t.name);
  j.at("shape").get_to(t.shape);
  auto dt = parse_dtype(j.at("dtype").get<std::string>());
  if (!dt) throw std::invalid_argument("unknown dtype " + j.at("dtype").dump());
  t.dtype = *dt;
  const auto& init = j.at("init");
  t.init.kind = init_kind_from(init.at("kind").get<std::string>());
  init.at("a").get_to(t.init.a);
  init.at("b").get_to(t.init.b);
  t.init.text = init.value("text", "");
  t.unread = j.value("unread", false);
}

void to_json(nlohmann::json& j, const EvalRequest& r) {
  auto plan = [](const PlanSource& p) {
    return nlohmann::json{{"name", p.name}, {"source", p.source}, {"cubin_path", p.cubin_path}};
  };
  // Integers stay JSON integers, so an int scalar cannot turn into a float on the way.
  nlohmann::json scalars = nlohmann::json::array();
  for (const auto& s : r.scalars)
    scalars.push_back(
        {{"name", s.name}, {"value", s.value.is_int ? nlohmann::json(s.value.i) : nlohmann::json(s.value.f)}});
  j = {{"cmd", "evaluate"},
       {"gpu", r.gpu},
       {"seed", r.seed},
       {"trials", r.trials},
       {"tolerance", r.tolerance},
       {"inputs", r.inputs},
       {"outputs", r.outputs},
       {"scalars", scalars},
       {"reference_kind", r.reference_kind == ReferenceKind::cuda ? "cuda" : "pytorch"},
       {"reference", plan(r.reference)},
       {"candidate", plan(r.candidate)},
       {"harness_cubin_path", r.harness_cubin_path},
       {"timing", r.timing},
       {"time_reference", r.time_reference},
       {"stop_rule", r.stop_rule},
       {"knobs", r.knobs},
       {"per_launch", r.per_launch},
       {"ab_rule", r.ab_rule},
       {"cupti_check", r.cupti_check},
       {"metrics", r.metrics},
       {"guard_checks", r.guard_checks}};
  if (r.baseline) j["baseline"] = plan(*r.baseline);
}
void from_json(const nlohmann::json& j, EvalRequest& r) {
  auto plan = [](const nlohmann::json& p) {
    return PlanSource{p.at("name").get<std::string>(), p.at("source").get<std::string>(),
                      p.at("cubin_path").get<std::string>()};
  };
  j.at("gpu").get_to(r.gpu);
  j.at("seed").get_to(r.seed);
  j.at("trials").get_to(r.trials);
  j.at("tolerance").get_to(r.tolerance);
  j.at("inputs").get_to(r.inputs);
  j.at("outputs").get_to(r.outputs);
  r.scalars.clear();
  for (const auto& s : j.at("scalars")) r.scalars.push_back(ScalarArg::from_json(s.at("name"), s.at("value")));
  const std::string kind = j.at("reference_kind").get<std::string>();
  if (kind != "cuda" && kind != "pytorch") throw std::invalid_argument("reference_kind '" + kind + "'");
  r.reference_kind = kind == "cuda" ? ReferenceKind::cuda : ReferenceKind::pytorch;
  r.reference = plan(j.at("reference"));
  r.candidate = plan(j.at("candidate"));
  j.at("harness_cubin_path").get_to(r.harness_cubin_path);
  j.at("timing").get_to(r.timing);
  j.at("time_reference").get_to(r.time_reference);
  j.at("stop_rule").get_to(r.stop_rule);
  j.at("knobs").get_to(r.knobs);
  r.per_launch = j.value("per_launch", false);
  if (j.contains("ab_rule")) j.at("ab_rule").get_to(r.ab_rule);
  r.cupti_check = j.value("cupti_check", true);
  r.metrics = j.value("metrics", false);
  r.guard_checks = j.value("guard_checks", true);
  r.baseline.reset();
  if (j.contains("baseline")) r.baseline = plan(j.at("baseline"));
}

void to_json(nlohmann::json& j, const MismatchReport& m) {
  j = {{"tensor", m.tensor},
       {"trial", m.trial},
       {"when", m.when},
       {"first_index", m.first_index},
       {"candidate_value", m.candidate_value},
       {"reference_value", m.reference_value},
       {"count", m.count},
       {"nan_count", m.nan_count},
       {"numel", m.numel},
       {"max_abs", m.max_abs},
       {"max_rel", m.max_rel}};
  opt_to(j, "reference_fp64_value", m.reference_fp64_value);
  opt_to(j, "max_abs_fp64", m.max_abs_fp64);
  opt_to(j, "ref_error_fp64", m.ref_error_fp64);
}
void from_json(const nlohmann::json& j, MismatchReport& m) {
  j.at("tensor").get_to(m.tensor);
  j.at("trial").get_to(m.trial);
  j.at("when").get_to(m.when);
  j.at("first_index").get_to(m.first_index);
  // NaN and infinities travel as null in JSON.
  m.candidate_value = j.at("candidate_value").is_null() ? std::nan("") : j.at("candidate_value").get<double>();
  m.reference_value = j.at("reference_value").is_null() ? std::nan("") : j.at("reference_value").get<double>();
  j.at("count").get_to(m.count);
  j.at("nan_count").get_to(m.nan_count);
  j.at("numel").get_to(m.numel);
  m.max_abs = j.at("max_abs").is_null() ? INFINITY : j.at("max_abs").get<double>();
  m.max_rel = j.at("max_rel").is_null() ? INFINITY : j.at("max_rel").get<double>();
  opt_from(j, "reference_fp64_value", m.reference_fp64_value);
  opt_from(j, "max_abs_fp64", m.max_abs_fp64);
  opt_from(j, "ref_error_fp64", m.ref_error_fp64);
}

void to_json(nlohmann::json& j, const OutputErrors& e) {
  j = {
      {"tensor", e.tensor}, {"max_abs", e.max_abs}, {"passed_by_fp64", e.passed_by_fp64}, {"zero_share", e.zero_share}};
  opt_to(j, "max_abs_fp64", e.max_abs_fp64);
  opt_to(j, "ref_error_fp64", e.ref_error_fp64);
  opt_to(j, "rel_l2", e.rel_l2);
  opt_to(j, "ref_rel_l2_fp64", e.ref_rel_l2_fp64);
  opt_to(j, "precision_limit", e.precision_limit);
  if (!e.precision_nearest.empty()) j["precision_nearest"] = e.precision_nearest;
  if (!e.precision_note.empty()) j["precision_note"] = e.precision_note;
}
void from_json(const nlohmann::json& j, OutputErrors& e) {
  j.at("tensor").get_to(e.tensor);
  e.max_abs = j.at("max_abs").is_null() ? INFINITY : j.at("max_abs").get<double>();
  e.passed_by_fp64 = j.value("passed_by_fp64", uint64_t{0});
  e.zero_share = j.value("zero_share", 0.0);
  opt_from(j, "max_abs_fp64", e.max_abs_fp64);
  opt_from(j, "ref_error_fp64", e.ref_error_fp64);
  opt_from(j, "rel_l2", e.rel_l2);
  opt_from(j, "ref_rel_l2_fp64", e.ref_rel_l2_fp64);
  opt_from(j, "precision_limit", e.precision_limit);
  e.precision_nearest = j.value("precision_nearest", "");
  e.precision_note = j.value("precision_note", "");
}

namespace {
constexpr std::pair<FailureStage, std::string_view> kFailureStages[] = {{FailureStage::none, ""},
                                                                        {FailureStage::plan, "plan"},
                                                                        {FailureStage::launch, "launch"},
                                                                        {FailureStage::correctness, "correctness"},
                                                                        {FailureStage::recheck, "re-check"},
                                                                        {FailureStage::bounds, "bounds"},
                                                                        {FailureStage::reference, "reference"},
                                                                        {FailureStage::timeout, "timeout"},
                                                                        {FailureStage::crash, "crash"},
                                                                        {FailureStage::tamper, "tamper"},
                                                                        {FailureStage::inputs, "inputs"},
                                                                        {FailureStage::torch_ops, "torch_ops"},
                                                                        {FailureStage::precision, "precision"}};
}  // namespace

std::string_view failure_stage_name(FailureStage s) {
  for (const auto& [value, name] : kFailureStages)
    if (value == s) return name;
  return "?";
}

std::optional<FailureStage> parse_failure_stage(std::string_view name) {
  for (const auto& [value, name_of] : kFailureStages)
    if (name_of == name) return value;
  return std::nullopt;
}

void to_json(nlohmann::json& j, const EvalOutcome& o) {
  j = {{"correct", o.correct},
       {"failure_stage", failure_stage_name(o.failure_stage)},
       {"message", o.message},
       {"flags", o.flags},
       {"bytes_moved", o.bytes_moved},
       {"memory_floor_ms", o.memory_floor_ms},
       {"achieved_gbs", o.achieved_gbs},
       {"bandwidth_share", o.bandwidth_share},
       {"trials_run", o.trials_run},
       {"rechecks", o.rechecks},
       {"launch_times", o.launch_times},
       {"flush_bytes", o.flush_bytes},
       {"stop_rule", o.stop_rule},
       {"knobs", o.knobs},
       {"device", o.device}};
  opt_to(j, "mismatch", o.mismatch);
  opt_to(j, "candidate_time", o.candidate_time);
  opt_to(j, "reference_time", o.reference_time);
  opt_to(j, "ab", o.ab);
  opt_to(j, "cupti", o.cupti);
  if (!o.errors.empty()) j["errors"] = o.errors;
  if (!o.fp64_note.empty()) j["fp64_note"] = o.fp64_note;
  if (!o.metrics.empty()) j["metrics"] = o.metrics;
  if (!o.metrics_note.empty()) j["metrics_note"] = o.metrics_note;
  if (!o.metrics_replay.empty()) j["metrics_replay"] = o.metrics_replay;
  if (o.out_of_memory) j["out_of_memory"] = true;
}
void from_json(const nlohmann::json& j, EvalOutcome& o) {
  j.at("correct").get_to(o.correct);
  const std::string stage = j.at("failure_stage").get<std::string>();
  const auto parsed = parse_failure_stage(stage);
  if (!parsed) throw std::invalid_argument(fmt::format("unknown failure_stage '{}'", stage));
  o.failure_stage = *parsed;
  j.at("message").get_to(o.message);
  j.at("flags").get_to(o.flags);
  j.at("bytes_moved").get_to(o.bytes_moved);
  j.at("memory_floor_ms").get_to(o.memory_floor_ms);
  j.at("achieved_gbs").get_to(o.achieved_gbs);
  j.at("bandwidth_share").get_to(o.bandwidth_share);
  j.at("trials_run").get_to(o.trials_run);
  j.at("rechecks").get_to(o.rechecks);
  o.launch_times = j.value("launch_times", std::vector<LaunchTime>{});
  j.at("flush_bytes").get_to(o.flush_bytes);
  j.at("stop_rule").get_to(o.stop_rule);
  if (j.contains("knobs")) j.at("knobs").get_to(o.knobs);  // absent in transcripts of older versions
  j.at("device").get_to(o.device);
  o.out_of_memory = j.value("out_of_memory", false);
  opt_from(j, "mismatch", o.mismatch);
  opt_from(j, "candidate_time", o.candidate_time);
  opt_from(j, "reference_time", o.reference_time);
  opt_from(j, "ab", o.ab);
  opt_from(j, "cupti", o.cupti);
  o.errors = j.value("errors", std::vector<OutputErrors>{});
  o.fp64_note = j.value("fp64_note", "");
  o.metrics = j.value("metrics", std::vector<KernelMetrics>{});
  o.metrics_note = j.value("metrics_note", "");
  o.metrics_replay = j.value("metrics_replay", "");
}

void to_json(nlohmann::json& j, const StopRule& r) {
  j = {{"min_samples", r.min_samples}, {"min_gpu_s", r.min_gpu_s}, {"target_rse", r.target_rse},
       {"max_samples", r.max_samples}, {"max_gpu_s", r.max_gpu_s}, {"max_wall_s", r.max_wall_s},
       {"count_setup", r.count_setup}};
}

void from_json(const nlohmann::json& j, StopRule& r) {
  j.at("min_samples").get_to(r.min_samples);
  j.at("min_gpu_s").get_to(r.min_gpu_s);
  j.at("target_rse").get_to(r.target_rse);
  j.at("max_samples").get_to(r.max_samples);
  j.at("max_gpu_s").get_to(r.max_gpu_s);
  j.at("max_wall_s").get_to(r.max_wall_s);
  r.count_setup = j.value("count_setup", false);
}

std::string stop_rule_text(const StopRule& r) {
  return fmt::format(">= {} samples and >= {} s GPU time{}, RSE <= {:.2f}%; caps {} samples, {} s GPU, {} s wall",
                     r.min_samples, r.min_gpu_s, r.count_setup ? " (each sample's set-up included)" : "",
                     100 * r.target_rse, r.max_samples, r.max_gpu_s, r.max_wall_s);
}

void note_bandwidth(EvalOutcome& o, const std::vector<TensorSpec>& inputs, const std::vector<TensorSpec>& outputs) {
  for (const auto& t : inputs)
    if (!t.unread) o.bytes_moved += t.bytes();  // what forward never reads, no kernel need read
  for (const auto& t : outputs) o.bytes_moved += t.bytes();
  const double med_s = o.candidate_time->median_ms * 1e-3;
  if (med_s > 0) o.achieved_gbs = static_cast<double>(o.bytes_moved) / med_s / 1e9;
  if (o.device.peak_gbs > 0) {
    o.bandwidth_share = o.achieved_gbs / o.device.peak_gbs;
    o.memory_floor_ms = static_cast<double>(o.bytes_moved) / (o.device.peak_gbs * 1e9) * 1e3;
    // Advisory: the floor uses the theoretical bandwidth, which no kernel quite reaches.
    if (o.candidate_time->median_ms < o.memory_floor_ms)
      o.flags.push_back({FlagKind::below_memory_floor, "", o.candidate_time->median_ms, o.memory_floor_ms,
                         fmt::format("{} bytes at {:.0f} GB/s peak", o.bytes_moved, o.device.peak_gbs)});
  }
}

}  // namespace kagent
