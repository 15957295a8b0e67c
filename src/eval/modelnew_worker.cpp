#include "kagent/eval/modelnew_worker.hpp"

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/compile/cache.hpp"
#include "kagent/reference/python_child.hpp"
#include "kagent/reference/ref_server.hpp"
#include "kagent/sandbox/policy.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

constexpr const char* kExecWarning = "kagent-sandbox-exec: warning: ";

ChildOptions worker_options(const ModelNewWorkerOptions& o) {
  ChildOptions r;
  r.gpu = o.gpu;
  r.hello_name = "kagent-modelnew";
  r.policy = sandbox::modelnew_worker_policy();
  r.start_timeout = 120s;  // importing torch (and Triton) on a cold machine
  r.runner_path = "python3";
  r.args = {"-m", "kagent_modelnew.worker"};
  const fs::path tmp = o.build_dir / "tmp";
  r.env = {"PYTHONPATH=" + RefServer::tools_dir(),
           "TORCH_EXTENSIONS_DIR=" + (o.build_dir / "torch_extensions").string(),
           "TRITON_CACHE_DIR=" + (o.build_dir / "triton").string(),
           "TRITON_HOME=" + (o.build_dir / "triton").string(),
           "TMPDIR=" + tmp.string(),
           "HOME=" + (o.build_dir / "home").string(),
           "XDG_CACHE_HOME=" + (o.build_dir / "cache").string(),
           "PYTHONDONTWRITEBYTECODE=1"};
  if (const std::string list = torch_arch_list(o.arch); !list.empty()) r.env.push_back("TORCH_CUDA_ARCH_LIST=" + list);
  if (!o.gpu_access) r.env.push_back("CUDA_VISIBLE_DEVICES=");
  PythonChild child{
      "ModelNew worker", {RefServer::tools_dir()}, {o.build_dir.string()}, o.exec_dir.string(), o.gpu_access};
  for (const auto& p : o.read_only) child.read_only.push_back(p.string());
  r.launch = python_child_launcher(std::move(child));
  return r;
}

std::string traceback_tail(const nlohmann::json& body) {
  std::string out;
  if (auto tb = body.find("traceback"); tb != body.end() && tb->is_array())
    for (const auto& line : *tb) out += "\n  " + line.get<std::string>();
  return out;
}

}  // namespace

std::string torch_arch_list(const std::string& arch) {
  if (!arch.starts_with("sm_")) return {};
  std::string digits;
  for (char c : arch.substr(3)) {
    if (c < '0' || c > '9') break;
    digits += c;
  }
  if (digits.size() < 2) return {};
  return digits.substr(0, digits.size() - 1) + "." + digits.back();
}

fs::path ModelNewWorker::build_dir_for(const std::string& source) {
  return CompileCache::default_dir() / "modelnew" / Hasher().add(source).hex().substr(0, 24);
}

ModelNewWorker::ModelNewWorker(ModelNewWorkerOptions o)
    : opt_(std::move(o)), client_([&] {
        for (const char* d : {"tmp", "cache", "home", "triton"}) fs::create_directories(opt_.build_dir / d);
        return worker_options(opt_);
      }()) {}

ModelNewWorker::~ModelNewWorker() {
  client_.end_now();
}

WorkerReply ModelNewWorker::request(nlohmann::json req, std::chrono::milliseconds timeout, const std::string& what) {
  WorkerReply out;
  ChildReply r = client_.request(std::move(req), timeout);
  if (const std::string& w = client_.sandbox_warning(); !w.empty() && warning_.find(w) == std::string::npos)
    warning_ += (warning_.empty() ? "" : "; ") + w;
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
    if (r.failure == ChildReply::Failure::start) throw EnvError("the ModelNew worker did not start: " + r.message);
    out.failure.kind =
        r.failure == ChildReply::Failure::timeout ? WorkerFailure::Kind::timeout : WorkerFailure::Kind::crash;
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
