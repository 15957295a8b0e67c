// Evaluator::time_library_steps: the reference's library calls as kagent's own plan steps, timed by
// the runner and cached per GPU, driver, kagent version and numerics.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/protocol/runner_messages.hpp"

namespace kagent {

namespace {

// The same short rule as the reference server's timing of the calls themselves
// (tools/kagent_ref/library_times.py, RULE): guidance for a choice, not a baseline a reward uses.
StopRule library_step_rule() {
  StopRule r;
  r.min_samples = 10;
  r.min_gpu_s = 0.02;
  r.target_rse = 0.01;
  r.max_samples = 200;
  r.max_gpu_s = 0.2;
  r.max_wall_s = 1.0;
  return r;
}

void take_times(const std::vector<RefLibraryCall*>& calls, const std::vector<LibraryStepTime>& times) {
  for (size_t i = 0; i < calls.size() && i < times.size(); ++i) {
    calls[i]->step_ms = times[i].median_ms;
    calls[i]->step = times[i].step;
    calls[i]->step_error = times[i].error;
  }
}

}  // namespace

void Evaluator::time_library_steps(RefLibraryTimes& t, bool tf32) {
  LibraryStepsRequest rq;
  std::vector<RefLibraryCall*> calls;
  // A call PyTorch's timing left out (its budget spent) is left out here too.
  for (auto& c : t.calls)
    if (c.plan.is_object() && c.median_ms) {
      rq.plans.push_back(c.plan);
      calls.push_back(&c);
    }
  if (calls.empty()) return;
  require_gpu();
  rq.gpu = opt_.gpu;
  rq.tf32 = tf32;
  rq.stop_rule = library_step_rule();

  Hasher key;
  key.add_field(gpu_uuid_).add_field(std::to_string(driver_version_)).add_field(KAGENT_VERSION);
  key.add_field(tf32 ? "tf32" : "ieee").add_field(nlohmann::json(rq.stop_rule).dump());
  for (const auto& p : rq.plans) key.add_field(p.dump());
  const std::filesystem::path file = cache_dir_ / "library_steps" / (key.hex() + ".json");
  std::error_code ec;
  if (!opt_.refresh_baselines && std::filesystem::exists(file, ec)) {
    try {
      const auto cached = nlohmann::json::parse(read_text_file(file)).get<std::vector<LibraryStepTime>>();
      if (cached.size() == calls.size()) {
        take_times(calls, cached);
        return;
      }
    } catch (const std::exception& e) {  // a damaged file is measured again and overwritten
      spdlog::debug("{}: {}", file.string(), e.what());
    }
  }

  GpuLock lock = lock_gpu("timing kagent's library steps for the reference's calls");
  rq.harness_cubin_path = harness_cubin();
  // Each plan: at most the rule's second of samples, plus a convolution's algorithm search.
  const auto timeout = std::chrono::seconds(60 + 15 * static_cast<int64_t>(calls.size()));
  ChildReply reply = runner().request(nlohmann::json(rq), timeout);
  RunnerResult result;
  if (reply.ok()) result = reply.body.get<RunnerResult>();
  if (!reply.ok() || !result.ok || !result.step_times) {
    const std::string why = !reply.ok() ? reply.message : result.error;
    spdlog::warn("kagent's library steps for the reference's calls were not timed: {}", why);
    for (RefLibraryCall* c : calls) c->step_error = "not timed: " + why;
    return;
  }
  take_times(calls, *result.step_times);
  try {
    std::filesystem::create_directories(file.parent_path());
    write_file_atomic(file, nlohmann::json(*result.step_times).dump(1) + "\n");
  } catch (const std::exception& e) {
    spdlog::warn("kagent's library step times are measured but cannot be cached: {}", e.what());
  }
}

}  // namespace kagent
