#include "kagent/eval/modelnew_worker.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/compile/cache.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* kExecWarning = "kagent-sandbox-exec: warning: ";

RunnerOptions worker_options(const ModelNewWorkerOptions& o, std::string& warning) {
  RunnerOptions r;
  r.gpu = o.gpu;
  r.hello_name = "kagent-modelnew";
  r.policy = sandbox::modelnew_worker_policy();
  r.start_timeout = 120s;  // importing torch (and Triton) on a cold machine
  const fs::path exec = (o.exec_dir.empty() ? fs::path(self_dir()) : o.exec_dir) / "kagent-sandbox-exec";
  std::error_code ec;
  if (fs::exists(exec, ec)) {
    r.runner_path = exec.string();
    r.args = {"--write", o.build_dir.string(),    "--write", o.triton_dir.string(), "--", "python3",
              "-m",      "kagent_modelnew.worker"};
  } else {
    warning = fmt::format(
        "{} is missing: the ModelNew worker runs without its network namespace and write "
        "confinement",
        exec.string());
    r.runner_path = "python3";
    r.args = {"-m", "kagent_modelnew.worker"};
  }
  const fs::path tmp = o.build_dir / "tmp";
  r.env = {"PYTHONPATH=" + RefServer::tools_dir(),
           "TORCH_EXTENSIONS_DIR=" + (o.build_dir / "torch_extensions").string(),
           "TRITON_CACHE_DIR=" + o.triton_dir.string(),
           "TRITON_HOME=" + o.triton_dir.string(),
           "TMPDIR=" + tmp.string(),
           "XDG_CACHE_HOME=" + (o.build_dir / "cache").string(),
           "PYTHONDONTWRITEBYTECODE=1"};
  return r;
}

std::string traceback_tail(const nlohmann::json& body) {
  std::string out;
  if (auto tb = body.find("traceback"); tb != body.end() && tb->is_array())
    for (const auto& line : *tb) out += "\n  " + line.get<std::string>();
  return out;
}

}  // namespace

fs::path ModelNewWorker::build_dir_for(const std::string& source) {
  return CompileCache::default_dir() / "modelnew" / Hasher().add(source).hex().substr(0, 24);
}

fs::path ModelNewWorker::triton_dir() {
  return CompileCache::default_dir() / "modelnew" / "triton";
}

ModelNewWorker::ModelNewWorker(ModelNewWorkerOptions o)
    : opt_(std::move(o)), client_([&] {
        for (const fs::path& d : {opt_.build_dir, opt_.build_dir / "tmp", opt_.build_dir / "cache", opt_.triton_dir})
          fs::create_directories(d);
        return worker_options(opt_, warning_);
      }()) {}

WorkerReply ModelNewWorker::request(nlohmann::json req, std::chrono::milliseconds timeout, const std::string& what) {
  WorkerReply out;
  RunnerReply r = client_.request(std::move(req), timeout);
  // kagent-sandbox-exec's warnings (no Landlock, no network namespace) reach its stderr once.
  for (size_t at = r.stderr_tail.find(kExecWarning); at != std::string::npos;
       at = r.stderr_tail.find(kExecWarning, at + 1)) {
    std::string line = r.stderr_tail.substr(at, r.stderr_tail.find('\n', at) - at);
    if (warning_.find(line) == std::string::npos) warning_ += (warning_.empty() ? "" : "; ") + line;
  }
  if (const auto& hello = client_.hello(); hello.contains("torch") && hello["torch"].is_null())
    throw EnvError(fmt::format("python3 cannot import torch ({}): ModelNew solutions need it",
                               hello.value("error", std::string("unknown"))));
  if (!r.ok()) {
    if (r.failure == RunnerReply::Failure::start) throw EnvError("the ModelNew worker did not start: " + r.message);
    out.failure.kind =
        r.failure == RunnerReply::Failure::timeout ? WorkerFailure::Kind::timeout : WorkerFailure::Kind::crash;
    out.failure.message = fmt::format("{}: {}", what, r.message);
    return out;
  }
  if (r.body.value("ok", false)) {
    out.body = std::move(r.body);
    return out;
  }
  out.failure.message =
      fmt::format("{}: {}{}", what, r.body.value("error", std::string("unknown error")), traceback_tail(r.body));
  if (auto t = r.body.find("tamper"); t != r.body.end() && t->is_array()) {
    out.failure.kind = WorkerFailure::Kind::tamper;
    out.failure.tamper = t->get<std::vector<std::string>>();
  } else if (r.body.value("build_error", false)) {
    out.failure.kind = WorkerFailure::Kind::build;
  } else {
    out.failure.kind = WorkerFailure::Kind::raised;
  }
  return out;
}

}  // namespace kagent
