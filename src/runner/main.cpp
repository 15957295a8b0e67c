// kagent-runner: the sandboxed GPU evaluator. kagent starts one per GPU and talks to it in JSON
// lines (include/kagent/protocol/child_client.hpp has the protocol). Only kagent's own host code
// runs here; candidates are device code loaded from cubins.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compare_request.hpp"
#include "copy_request.hpp"
#include "evaluation.hpp"
#include "kagent/common/files.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/protocol/runner_messages.hpp"
#include "kagent/sandbox/network.hpp"
#include "library_step_times.hpp"
#include "peaks.hpp"

using namespace kagent;
using namespace kagent::runner;

namespace {

// The protocol's own copy of stdout. fd 1 itself is pointed at stderr before any CUDA call, so
// that a candidate's device printf (flushed by the driver to fd 1) cannot corrupt the replies;
// it shows up in the stderr tail kagent reports instead.
int g_protocol_fd = 1;

void reply(const nlohmann::json& j) {
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  for (size_t done = 0; done < line.size();) {
    ssize_t n = write(g_protocol_fd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(0);  // kagent is gone
    done += static_cast<size_t>(n);
  }
}

int gpu_ordinal() {
  const char* g = std::getenv("KAGENT_GPU");
  return g ? std::atoi(g) : 0;
}

struct State {
  std::unique_ptr<Device> device;
  std::unique_ptr<Harness> harness;
  std::string harness_path;
  // The last evaluation's buffers, for the next evaluation of the same tensors (evaluation.hpp);
  // freed by any other request and by "release" (kagent sends it before loading another problem,
  // whose reference needs the memory).
  std::vector<GuardedBuffer> kept;
};

// In the middle of request `id`: asks kagent for a trial's tensors and reads its answer line.
TrialAnswer ask_kagent(const nlohmann::json& id, const TrialNeed& need) {
  nlohmann::json msg = need;
  msg["id"] = id;
  reply(msg);
  std::string line;
  if (!std::getline(std::cin, line)) std::_Exit(0);  // kagent is gone: nobody to answer to
  nlohmann::json answer = nlohmann::json::parse(line, nullptr, false);
  TrialAnswer out;
  if (!answer.is_object() || answer.value("id", nlohmann::json()) != id) {
    out.error = "kagent's answer to a runner request is malformed or for another request";
    return out;
  }
  try {
    out = answer.get<TrialAnswer>();
  } catch (const std::exception& e) {
    out = TrialAnswer{};
    out.error = fmt::format("kagent's answer to a runner request: {}", e.what());
  }
  return out;
}

// The GPU and kagent's harness kernels, set up on first use. False (with the error in `out`) when
// they cannot be; `keep_going` false when the runner must exit after replying (a sticky error).
bool prepare(State& s, int gpu, const std::string& harness_cubin_path, RunnerResult& out, bool& keep_going) {
  keep_going = true;
  if (gpu != gpu_ordinal()) {
    out.ok = false;
    out.error = fmt::format("this runner serves GPU {}, the request is for GPU {}", gpu_ordinal(), gpu);
    return false;
  }
  try {
    if (!s.device) s.device = std::make_unique<Device>(gpu_ordinal());
    if (!s.harness || s.harness_path != harness_cubin_path) {
      s.harness.reset();
      s.harness = std::make_unique<Harness>(*s.device, read_text_file(harness_cubin_path));
      s.harness_path = harness_cubin_path;
    }
    return true;
  } catch (const CudaError& e) {
    out.ok = false;
    out.environment = true;  // no GPU or no driver: kagent exits 3
    out.error = e.what();
    keep_going = !e.sticky();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = e.what();
  }
  return false;
}

// Returns false when the runner must exit after replying (a sticky CUDA error).
bool handle_evaluate(State& s, const nlohmann::json& req, RunnerResult& out) {
  EvalRequest rq;
  try {
    rq = req.get<EvalRequest>();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("bad evaluate request: {}", e.what());
    return true;
  }
  bool keep_going = true;
  if (!prepare(s, rq.gpu, rq.harness_cubin_path, out, keep_going)) return keep_going;
  const nlohmann::json id = req.value("id", nlohmann::json());
  EvaluationResult r = evaluate(
      *s.device, *s.harness, rq, [&](const TrialNeed& need) { return ask_kagent(id, need); }, &s.kept);
  out.ok = true;
  out.outcome = r.outcome;
  out.restart = r.restart;
  return !r.restart;
}

// {"cmd": "compare", ...}: a ModelNew solution's tensors against the reference server's
// (compare_request.hpp). An IPC handle that does not open is the solution's worker's failure, not
// the environment's: the reply says so and the runner goes on.
bool handle_compare(State& s, const nlohmann::json& req, RunnerResult& out) {
  CompareRequest rq;
  try {
    rq = req.get<CompareRequest>();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("bad compare request: {}", e.what());
    return true;
  }
  bool keep_going = true;
  if (!prepare(s, rq.gpu, rq.harness_cubin_path, out, keep_going)) return keep_going;
  try {
    out.outcome = compare_solution(*s.device, *s.harness, rq);
    out.ok = true;
  } catch (const CudaError& e) {
    out.ok = false;
    out.error = fmt::format("comparing the solution's tensors: {}", e.what());
    out.restart = e.sticky();
    return !e.sticky();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("comparing the solution's tensors: {}", e.what());
  }
  return true;
}

// {"cmd": "copy", ...}: the reference server's trial inputs into a ModelNew worker's buffers
// (runner_messages.hpp, CopyRequest). A handle that does not open is the worker's failure (its
// process is the solution's), said in the reply; the runner goes on.
bool handle_copy(State& s, const nlohmann::json& req, RunnerResult& out) {
  CopyRequest rq;
  try {
    rq = req.get<CopyRequest>();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("bad copy request: {}", e.what());
    return true;
  }
  if (rq.gpu != gpu_ordinal()) {
    out.ok = false;
    out.error = fmt::format("this runner serves GPU {}, the request is for GPU {}", gpu_ordinal(), rq.gpu);
    return true;
  }
  try {
    if (!s.device) s.device = std::make_unique<Device>(gpu_ordinal());
    copy_tensors(*s.device, rq);
    out.ok = true;
  } catch (const CudaError& e) {
    out.ok = false;
    out.error = fmt::format("copying the trial's inputs: {}", e.what());
    out.restart = e.sticky();
    return !e.sticky();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("copying the trial's inputs: {}", e.what());
  }
  return true;
}

// {"cmd": "peaks", "gpu": N, "harness_cubin_path": "..."}: this GPU's copy bandwidth and FP32
// matrix-product throughput (peaks.hpp). Only kagent's own kernels run, so a CUDA error here is
// the environment's.
bool handle_peaks(State& s, const nlohmann::json& req, RunnerResult& out) {
  bool keep_going = true;
  if (!prepare(s, req.value("gpu", -1), req.value("harness_cubin_path", ""), out, keep_going)) return keep_going;
  try {
    out.peaks = measure_peaks(*s.device, *s.harness);
    out.ok = true;
  } catch (const CudaError& e) {
    out.ok = false;
    out.error = fmt::format("measuring the GPU's peaks: {}", e.what());
    out.restart = e.sticky();
    return !e.sticky();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("measuring the GPU's peaks: {}", e.what());
  }
  return true;
}

// {"cmd": "library_steps", ...}: a reference's library calls as kagent's plan steps, each timed
// alone (library_step_times.hpp). A step's own failure is its entry's error; a sticky CUDA error
// ends the runner.
bool handle_library_steps(State& s, const nlohmann::json& req, RunnerResult& out) {
  LibraryStepsRequest rq;
  try {
    rq = req.get<LibraryStepsRequest>();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("bad library_steps request: {}", e.what());
    return true;
  }
  bool keep_going = true;
  if (!prepare(s, rq.gpu, rq.harness_cubin_path, out, keep_going)) return keep_going;
  try {
    out.step_times = time_library_steps(*s.device, *s.harness, rq);
    out.ok = true;
  } catch (const CudaError& e) {
    out.ok = false;
    out.error = fmt::format("timing library steps: {}", e.what());
    out.restart = e.sticky();
    return !e.sticky();
  } catch (const std::exception& e) {
    out.ok = false;
    out.error = fmt::format("timing library steps: {}", e.what());
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    fmt::print("kagent-runner {}\n", KAGENT_VERSION);
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "--probe") == 0) {
    GpuInventory inv = query_gpus();
    nlohmann::json j = {{"driver_loaded", inv.driver_loaded}, {"problem", inv.problem}, {"gpus", inv.gpus.size()}};
    fmt::print("{}\n", j.dump());
    return inv.gpus.empty() ? 3 : 0;
  }
  if (argc > 1) {
    fmt::print(stderr,
               "usage: kagent-runner [--version | --probe]\n(started by kagent; speaks JSON lines on stdin/stdout)\n");
    return 2;
  }

  g_protocol_fd = dup(1);
  if (g_protocol_fd < 0 || dup2(2, 1) < 0) {
    fmt::print(stderr, "kagent-runner: cannot set up the protocol channel: {}\n", std::strerror(errno));
    return 3;
  }
  // Before any CUDA call (the driver starts threads): its own network namespace where allowed.
  using namespace sandbox;
  NetnsResult ns = cuda_tool_attached() ? NetnsResult{false, kCudaToolNetnsWarning} : enter_network_namespace();
  reply({{"hello", "kagent-runner"},
         {"version", KAGENT_VERSION},
         {"pid", static_cast<int>(getpid())},
         {"sandbox", {{"netns", ns.entered}, {"warning", ns.warning}}}});

  State state;
  std::string line;
  while (std::getline(std::cin, line)) {
    nlohmann::json req = nlohmann::json::parse(line, nullptr, false);
    nlohmann::json out = {{"id", req.is_object() ? req.value("id", nlohmann::json()) : nlohmann::json()}};
    if (!req.is_object() || !req.contains("cmd")) {
      out["ok"] = false;
      out["error"] = "request is not a JSON object with a \"cmd\"";
      reply(out);
      continue;
    }
    const std::string cmd = req.value("cmd", "");
    bool keep_going = true;
    if (cmd != "evaluate" && cmd != "ping") state.kept.clear();
    if (cmd == "ping" || cmd == "release") {
      out["ok"] = true;
    } else if (cmd == "exit") {
      out["ok"] = true;
      reply(out);
      break;
    } else if (cmd == "evaluate" || cmd == "peaks" || cmd == "compare" || cmd == "copy" || cmd == "library_steps") {
      RunnerResult result;
      keep_going = cmd == "evaluate"        ? handle_evaluate(state, req, result)
                   : cmd == "peaks"         ? handle_peaks(state, req, result)
                   : cmd == "copy"          ? handle_copy(state, req, result)
                   : cmd == "library_steps" ? handle_library_steps(state, req, result)
                                            : handle_compare(state, req, result);
      out.update(nlohmann::json(result));
    } else {
      out["ok"] = false;
      out["error"] = fmt::format("unknown cmd '{}'", cmd);
    }
    reply(out);
    if (!keep_going) {
      // A sticky error poisoned the context; freeing anything now could hang. Leave at once.
      std::_Exit(0);
    }
  }
  return 0;
}
