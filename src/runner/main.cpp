// kagent-runner: the sandboxed GPU evaluator. kagent starts one per GPU and talks to it in JSON
// lines (include/kagent/eval/runner_client.hpp has the protocol). Only kagent's own host code
// runs here; candidates are device code loaded from cubins.
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "evaluation.hpp"
#include "kagent/common/files.hpp"
#include "kagent/eval/sandbox.hpp"
#include "kagent/gpu/devices.hpp"

using namespace kagent;
using namespace kagent::runner;

namespace {

void reply(const nlohmann::json& j) {
  // One line per reply; stdout is the protocol channel and nothing else writes to it.
  std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::cout << line << '\n' << std::flush;
}

int gpu_ordinal() {
  const char* g = std::getenv("KAGENT_GPU");
  return g ? std::atoi(g) : 0;
}

struct State {
  std::unique_ptr<Device> device;
  std::unique_ptr<Harness> harness;
  std::string harness_path;
};

// Returns false when the runner must exit after replying (a sticky CUDA error).
bool handle_evaluate(State& s, const nlohmann::json& req, nlohmann::json& out) {
  EvalRequest rq;
  try {
    rq = req.get<EvalRequest>();
  } catch (const std::exception& e) {
    out["ok"] = false;
    out["error"] = fmt::format("bad evaluate request: {}", e.what());
    return true;
  }
  if (rq.gpu != gpu_ordinal()) {
    out["ok"] = false;
    out["error"] = fmt::format("this runner serves GPU {}, the request is for GPU {}", gpu_ordinal(), rq.gpu);
    return true;
  }
  try {
    if (!s.device) s.device = std::make_unique<Device>(gpu_ordinal());
    if (!s.harness || s.harness_path != rq.harness_cubin_path) {
      s.harness.reset();
      s.harness = std::make_unique<Harness>(*s.device, read_text_file(rq.harness_cubin_path));
      s.harness_path = rq.harness_cubin_path;
    }
  } catch (const CudaError& e) {
    out["ok"] = false;
    out["environment"] = true;  // no GPU or no driver: kagent exits 3
    out["error"] = e.what();
    return !e.sticky();
  } catch (const std::exception& e) {
    out["ok"] = false;
    out["error"] = e.what();
    return true;
  }
  EvaluationResult r = evaluate(*s.device, *s.harness, rq);
  out["ok"] = true;
  out["outcome"] = r.outcome;
  out["restart"] = r.restart;
  return !r.restart;
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
    fmt::print(stderr, "usage: kagent-runner [--version | --probe]\n(started by kagent; speaks JSON lines on stdin/stdout)\n");
    return 2;
  }

  // Before any CUDA call (the driver starts threads): its own network namespace where allowed.
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
    if (cmd == "ping") {
      out["ok"] = true;
    } else if (cmd == "exit") {
      out["ok"] = true;
      reply(out);
      break;
    } else if (cmd == "evaluate") {
      keep_going = handle_evaluate(state, req, out);
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
