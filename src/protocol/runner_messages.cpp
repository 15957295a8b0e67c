#include "kagent/protocol/runner_messages.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/versioned.hpp"

namespace kagent {

void to_json(nlohmann::json& j, const RunnerResult& r) {
  j = {{"version", r.version}, {"ok", r.ok}};
  if (!r.error.empty()) j["error"] = r.error;
  if (r.environment) j["environment"] = true;
  if (r.restart) j["restart"] = true;  // child_client.cpp reads this key itself
  if (r.outcome) j["outcome"] = *r.outcome;
  if (r.peaks) j["peaks"] = *r.peaks;
  if (r.step_times) j["step_times"] = *r.step_times;
}

void from_json(const nlohmann::json& j, RunnerResult& r) {
  require_version(j, kRunnerMessageVersion, "kagent-runner's reply", "kagent");
  r.version = kRunnerMessageVersion;
  r.ok = j.at("ok").get<bool>();
  r.error = j.value("error", "");
  r.environment = j.value("environment", false);
  r.restart = j.value("restart", false);
  r.outcome.reset();
  r.peaks.reset();
  r.step_times.reset();
  if (auto o = j.find("outcome"); o != j.end()) r.outcome = o->get<EvalOutcome>();
  if (auto p = j.find("peaks"); p != j.end()) r.peaks = p->get<DevicePeaks>();
  if (auto s = j.find("step_times"); s != j.end()) r.step_times = s->get<std::vector<LibraryStepTime>>();
}

void to_json(nlohmann::json& j, RunnerNeed n) {
  switch (n) {
    case RunnerNeed::trial:
      j = "trial";
      return;
  }
  j = "unknown";
}

void from_json(const nlohmann::json& j, RunnerNeed& n) {
  if (j.is_string() && j.get<std::string>() == "trial") {
    n = RunnerNeed::trial;
    return;
  }
  throw InputError(fmt::format("kagent-runner needs {}: kagent knows only \"trial\"", j.dump()));
}

void to_json(nlohmann::json& j, const TrialNeed& n) {
  j = {{"need", n.need}, {"version", n.version}, {"trial", n.trial}, {"seed", n.seed}};
}

void from_json(const nlohmann::json& j, TrialNeed& n) {
  require_version(j, kRunnerMessageVersion, "kagent-runner's request for a trial", "kagent");
  n.version = kRunnerMessageVersion;
  n.need = j.at("need").get<RunnerNeed>();
  n.trial = j.at("trial").get<int>();
  n.seed = j.at("seed").get<uint64_t>();
}

void to_json(nlohmann::json& j, const TrialAnswer& a) {
  j = {{"version", a.version}};
  if (!a.error.empty()) {
    j["error"] = a.error;
    return;
  }
  j["tensors"] = a.tensors;
  if (!a.fp64_note.empty()) j["fp64_note"] = a.fp64_note;
  if (a.precision_figures) j["precision_figures"] = *a.precision_figures;
}

void from_json(const nlohmann::json& j, TrialAnswer& a) {
  require_version(j, kRunnerMessageVersion, "kagent's answer with a trial's tensors", "kagent-runner");
  a = TrialAnswer{};
  if (auto e = j.find("error"); e != j.end()) {
    a.error = e->get<std::string>();
    return;
  }
  a.tensors = j.at("tensors").get<std::vector<IpcTensorRef>>();
  a.fp64_note = j.value("fp64_note", "");
  if (auto f = j.find("precision_figures"); f != j.end() && f->is_object())
    a.precision_figures = f->get<PrecisionFigures>();
}

void to_json(nlohmann::json& j, const CompareRequest& r) {
  j = {{"cmd", "compare"},
       {"version", r.version},
       {"gpu", r.gpu},
       {"harness_cubin_path", r.harness_cubin_path},
       {"tolerance", r.tolerance},
       {"inputs", r.inputs},
       {"outputs", r.outputs},
       {"reference", r.reference},
       {"candidate", r.candidate},
       {"trial", r.trial},
       {"when", r.when},
       {"first_check", r.first_check}};
  if (r.precision_figures) j["precision_figures"] = *r.precision_figures;
}

void from_json(const nlohmann::json& j, CompareRequest& r) {
  require_version(j, kRunnerMessageVersion, "kagent's compare request", "kagent-runner");
  r.version = kRunnerMessageVersion;
  r.gpu = j.at("gpu").get<int>();
  r.harness_cubin_path = j.at("harness_cubin_path").get<std::string>();
  r.tolerance = j.at("tolerance").get<Tolerance>();
  r.inputs = j.at("inputs").get<std::vector<TensorSpec>>();
  r.outputs = j.at("outputs").get<std::vector<TensorSpec>>();
  r.reference = j.at("reference").get<std::vector<IpcTensorRef>>();
  r.candidate = j.at("candidate").get<std::vector<IpcTensorRef>>();
  r.trial = j.at("trial").get<int>();
  r.when = j.at("when").get<std::string>();
  r.first_check = j.at("first_check").get<bool>();
  if (auto f = j.find("precision_figures"); f != j.end() && f->is_object())
    r.precision_figures = f->get<PrecisionFigures>();
}

void to_json(nlohmann::json& j, const CopyRequest& r) {
  j = {{"cmd", "copy"}, {"version", r.version}, {"gpu", r.gpu}, {"from", r.from}, {"to", r.to}};
}

void from_json(const nlohmann::json& j, CopyRequest& r) {
  require_version(j, kRunnerMessageVersion, "kagent's copy request", "kagent-runner");
  r.version = kRunnerMessageVersion;
  r.gpu = j.at("gpu").get<int>();
  r.from = j.at("from").get<std::vector<IpcTensorRef>>();
  r.to = j.at("to").get<std::vector<IpcTensorRef>>();
}

void to_json(nlohmann::json& j, const LibraryStepTime& t) {
  j = {{"median_ms", t.median_ms ? nlohmann::json(*t.median_ms) : nlohmann::json()},
       {"samples", t.samples},
       {"step", t.step},
       {"error", t.error}};
}

void from_json(const nlohmann::json& j, LibraryStepTime& t) {
  t.median_ms.reset();
  if (auto m = j.find("median_ms"); m != j.end() && m->is_number()) t.median_ms = m->get<double>();
  t.samples = j.value("samples", 0);
  t.step = j.value("step", "");
  t.error = j.value("error", "");
}

void to_json(nlohmann::json& j, const LibraryStepsRequest& r) {
  j = {{"cmd", "library_steps"}, {"version", r.version},
       {"gpu", r.gpu},           {"harness_cubin_path", r.harness_cubin_path},
       {"tf32", r.tf32},         {"stop_rule", r.stop_rule},
       {"plans", r.plans}};
}

void from_json(const nlohmann::json& j, LibraryStepsRequest& r) {
  require_version(j, kRunnerMessageVersion, "kagent's library_steps request", "kagent-runner");
  r.version = kRunnerMessageVersion;
  r.gpu = j.at("gpu").get<int>();
  r.harness_cubin_path = j.at("harness_cubin_path").get<std::string>();
  r.tf32 = j.at("tf32").get<bool>();
  j.at("stop_rule").get_to(r.stop_rule);
  r.plans = j.at("plans").get<std::vector<nlohmann::json>>();
}

}  // namespace kagent
