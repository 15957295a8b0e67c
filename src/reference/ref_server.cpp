#include "kagent/reference/ref_server.hpp"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <mutex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/compile/cache.hpp"
#include "kagent/protocol/protocol.hpp"
#include "kagent/reference/python_child.hpp"
#include "kagent/sandbox/process.hpp"

namespace kagent {

namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

// `shown`: the problem file, or a spare's empty folder its problem file will be copied into.
ChildOptions server_options(int gpu, const fs::path& shown, const fs::path& cache) {
  for (const char* sub : {"tmp", "home"}) fs::create_directories(cache / sub);
  ChildOptions o;
  o.runner_path = "python3";
  o.args = {"-m", "kagent_ref"};
  o.gpu = gpu;
  o.hello_name = "kagent-ref";
  o.policy = sandbox::reference_server_policy();
  o.start_timeout = 120s;  // importing torch can take a while on a cold machine
  // Every cache the server and torch.compile keep, in the one folder it may write.
  o.env = {"PYTHONPATH=" + RefServer::tools_dir(),
           "HOME=" + (cache / "home").string(),
           "TMPDIR=" + (cache / "tmp").string(),
           "XDG_CACHE_HOME=" + cache.string(),
           "TORCHINDUCTOR_CACHE_DIR=" + (cache / "inductor").string(),
           "TRITON_CACHE_DIR=" + (cache / "triton").string(),
           "TRITON_HOME=" + cache.string(),
           "PYTHONDONTWRITEBYTECODE=1"};
  o.launch =
      python_child_launcher({"reference server", {RefServer::tools_dir(), shown.string()}, {cache.string()}, ""});
  return o;
}

std::string traceback_tail(const nlohmann::json& body) {
  std::string out;
  if (auto tb = body.find("traceback"); tb != body.end() && tb->is_array())
    for (const auto& line : *tb) out += "\n  " + line.get<std::string>();
  return out;
}

// Spare folders of processes that are gone (a crash leaves them): <pid>-<n>.
void remove_stale_spares(const fs::path& root) {
  std::error_code ec;
  std::vector<fs::path> stale;
  for (const auto& d : fs::directory_iterator(root, ec)) {
    const long pid = std::atol(d.path().filename().string().c_str());
    if (pid <= 0 || (pid != getpid() && kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH))
      stale.push_back(d.path());
  }
  for (const auto& p : stale) fs::remove_all(p, ec);
}

fs::path new_spare_dir() {
  static std::atomic<unsigned> counter{0};
  static std::once_flag cleaned;
  const fs::path root = CompileCache::default_dir() / "reference" / "spares";
  fs::create_directories(root);
  std::call_once(cleaned, [&] { remove_stale_spares(root); });
  const fs::path dir = root / fmt::format("{}-{}", getpid(), counter++);
  fs::remove_all(dir);
  fs::create_directories(dir / "problem");
  fs::create_directories(dir / "cache");
  return dir;
}

// A baselines file's name as the server made it (numerics.baseline_key: hex), nothing else.
bool plain_key(const std::string& key) {
  if (key.empty() || key.size() > 128) return false;
  for (char c : key)
    if (!std::isalnum(static_cast<unsigned char>(c))) return false;
  return true;
}

void copy_json_files(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  if (!fs::is_directory(from, ec)) return;
  fs::create_directories(to);
  for (const auto& f : fs::directory_iterator(from, ec))
    if (f.path().extension() == ".json" && f.is_regular_file(ec))
      fs::copy_file(f.path(), to / f.path().filename(), fs::copy_options::overwrite_existing, ec);
}

std::vector<TensorSpec> tensors(const nlohmann::json& arr) {
  std::vector<TensorSpec> out;
  for (const auto& t : arr) {
    TensorSpec s;
    s.name = t.at("name").get<std::string>();
    s.shape = t.at("shape").get<std::vector<int64_t>>();
    auto dt = parse_dtype(t.at("dtype").get<std::string>());
    if (!dt) throw Error(ExitCode::environment, "reference server sent an unknown dtype " + t.at("dtype").dump());
    s.dtype = *dt;
    s.unread = t.value("unread", false);
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace

std::string RefServer::tools_dir() {
  if (const char* d = std::getenv("KAGENT_TOOLS_DIR"); d != nullptr && *d != '\0') return d;
  return data_dir("tools").string();
}

fs::path RefServer::cache_dir_for(const fs::path& problem) {
  std::string text;
  try {
    text = read_text_file(problem);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("{}: cannot read the problem file ({})", problem.string(), e.what()));
  }
  return CompileCache::default_dir() / "reference" / Hasher().add(text).hex().substr(0, 24);
}

namespace {

void check_started(ChildClient& client) {
  if (find_in_path("python3").empty()) throw EnvError("python3 not found: PyTorch references need python3 with torch");
  ChildReply r = client.request({{"cmd", "ping"}}, 120s);
  if (!r.ok()) throw EnvError("the reference server (python3 -m kagent_ref) did not start: " + r.message);
  const auto& hello = client.hello();
  if (hello.value("torch", nlohmann::json()).is_null())
    throw EnvError(fmt::format("python3 cannot import torch ({}): PyTorch references need it",
                               hello.value("error", std::string("unknown"))));
}

}  // namespace

RefServer::RefServer(int gpu, const fs::path& problem)
    : gpu_(gpu),
      problem_(fs::absolute(problem)),
      cache_dir_(cache_dir_for(problem_)),
      client_(server_options(gpu, problem_, cache_dir_)) {
  check_started(client_);
}

RefServer::RefServer(int gpu, SpareTag)
    : gpu_(gpu), owned_{new_spare_dir()}, client_(server_options(gpu, owned_.path / "problem", owned_.path / "cache")) {
  cache_dir_ = owned_.path / "cache";
  check_started(client_);
}

RefServer::~RefServer() = default;

RefServer::OwnedDir::~OwnedDir() {
  if (path.empty()) return;
  std::error_code ec;
  fs::remove_all(path, ec);
}

std::unique_ptr<RefServer> RefServer::spare(int gpu) {
  return std::unique_ptr<RefServer>(new RefServer(gpu, SpareTag{}));
}

void RefServer::adopt(const fs::path& problem) {
  if (owned_.path.empty() || adopted())
    throw Error(ExitCode::environment,
                fmt::format("a reference server already serving {} was given {}", problem_.string(), problem.string()));
  const fs::path abs = fs::absolute(problem);
  home_cache_ = cache_dir_for(abs);  // reads the file: InputError when it cannot
  const fs::path copy = owned_.path / "problem" / abs.filename();
  std::error_code ec;
  fs::copy_file(abs, copy, fs::copy_options::overwrite_existing, ec);
  if (ec)
    throw InputError(fmt::format("{}: cannot copy the problem file for its server ({})", abs.string(), ec.message()));
  for (const char* kind : {"baselines", "library_times"}) copy_json_files(home_cache_ / kind, cache_dir_ / kind);
  slot_file_ = copy;
  problem_ = abs;
}

std::string RefServer::problem_in_jail() const {
  return slot_file_.empty() ? problem_.string() : slot_file_.string();
}

std::string RefServer::as_problem(std::string text) const {
  if (slot_file_.empty()) return text;
  const std::string from = slot_file_.string(), to = problem_.string();
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

nlohmann::json RefServer::call(nlohmann::json req, std::chrono::milliseconds timeout, const std::string& what) {
  ChildReply r = client_.request(std::move(req), timeout);
  if (!r.ok()) throw EnvError(fmt::format("reference server failed {}: {}", what, r.message));
  if (r.body.value("ok", false)) return r.body;
  std::string err = r.body.value("error", std::string("unknown error"));
  std::string msg = as_problem(fmt::format("{}: {}{}", what, err, traceback_tail(r.body)));
  // The problem's tensors did not fit beside what else holds the GPU's memory: not the candidate's.
  if (err.find("OutOfMemoryError") != std::string::npos) throw GpuBusyError(msg);
  throw InputError(msg);
}

RefSignature RefServer::load(const Op& op, Precision precision, uint64_t seed) {
  if (!adopted()) adopt(op.reference);
  if (fs::absolute(op.reference) != problem_)
    throw Error(ExitCode::environment, fmt::format("the reference server of {} was asked to load {}", problem_.string(),
                                                   op.reference.string()));
  nlohmann::json body = call({{"cmd", "load"},
                              {"problem", problem_in_jail()},
                              {"precision", precision_name(precision)},
                              {"seed", seed},
                              {"gpu", gpu_}},
                             600s, op.reference.string());
  const auto& sig = body.at("signature");
  RefSignature s;
  s.inputs = tensors(sig.at("inputs"));
  if (auto d = sig.find("draws"); d != sig.end() && d->is_array()) {
    s.draws = tensors(*d);
    for (size_t i = 0; i < s.draws.size(); ++i) s.draws[i].drawn = (*d)[i].value("meaning", std::string());
  }
  s.params = tensors(sig.at("params"));
  s.outputs = tensors(sig.at("outputs"));
  for (const auto& sc : sig.at("scalars"))
    s.scalars.push_back({sc.at("name").get<std::string>(), sc.at("value"), sc.at("type").get<std::string>()});
  if (body.contains("degenerate") && body["degenerate"].is_string())
    s.degenerate = body["degenerate"].get<std::string>();
  if (auto st = body.find("output_stats"); st != body.end() && st->is_array())
    for (const auto& o : *st) {
      RefOutputStats r;
      r.numel = o.value("numel", uint64_t{0});
      r.zeros = o.value("zeros", uint64_t{0});
      r.zero_share = o.value("zero_share", 0.0);
      auto number = [&](const char* k) {
        return o.contains(k) && o[k].is_number() ? std::optional<double>(o[k].get<double>()) : std::nullopt;
      };
      r.min = number("min");
      r.max = number("max");
      r.min_abs = number("min_abs");
      s.output_stats.push_back(r);
    }
  if (auto n = body.find("numerics"); n != body.end() && n->is_object()) s.allow_tf32 = n->value("allow_tf32", false);
  if (auto f = body.find("flops"); f != body.end() && f->is_object()) {
    if (auto t = f->find("total"); t != f->end() && t->is_number() && t->get<double>() > 0) s.flops = t->get<double>();
    if (auto by = f->find("by_op"); by != f->end() && by->is_object())
      for (const auto& [name, n] : by->items())
        if (n.is_number()) s.flops_by_op.emplace_back(name, n.get<double>());
  }
  if (auto n = body.find("flops_note"); n != body.end() && n->is_string()) s.flops_note = n->get<std::string>();
  s.source_hash = body.value("source_hash", "");
  s.gpu_name = body.value("gpu_name", "");
  s.torch_version = body.value("torch", "");
  s.baselines_protocol = body.value("baselines_protocol", "");
  return s;
}

nlohmann::json RefServer::trial(uint64_t seed) {
  nlohmann::json body = call({{"cmd", "trial"}, {"seed", seed}}, 600s, "making a trial's reference tensors");
  nlohmann::json out = {{"tensors", body.at("tensors")}};
  if (auto n = body.find("fp64_note"); n != body.end() && n->is_string()) out["fp64_note"] = *n;
  if (auto d = body.find("draws"); d != body.end() && d->is_object()) out["draws"] = *d;
  if (auto f = body.find("precision_figures"); f != body.end() && f->is_object()) out["precision_figures"] = *f;
  return out;
}

void RefServer::warm() {
  call({{"cmd", "warm"}, {"gpu", gpu_}}, 120s, "making its CUDA context");
}

void RefServer::warm_libraries() {
  call({{"cmd", "warm"}, {"gpu", gpu_}, {"libraries", true}}, 300s, "running its libraries' first kernels");
}

uint64_t RefServer::release() {
  return call({{"cmd", "release"}}, 60s, "releasing a trial's tensors").value("reserved_bytes", uint64_t{0});
}

RefBaselines RefServer::baselines(bool refresh, const StopRule& rule) {
  nlohmann::json body =
      call({{"cmd", "baselines"}, {"refresh", refresh}, {"cache_dir", cache_dir_.string()}, {"stop_rule", rule}}, 1800s,
           "timing the PyTorch baselines");
  RefBaselines b;
  b.eager = body.at("eager").get<TimingSummary>();
  if (!body.at("compile").is_null()) b.compile = body.at("compile").get<TimingSummary>();
  if (body.contains("compile_error") && body["compile_error"].is_string()) b.compile_error = body["compile_error"];
  b.cached = body.value("cached", false);
  b.source = b.cached ? "cache" : "measured";
  b.key = body.value("key", "");
  b.gpu_name = body.value("gpu_name", "");
  b.torch_version = body.value("torch", "");
  b.protocol = body.value("protocol", "");
  b.precision = body.value("precision", "");
  if (auto n = body.find("numerics"); n != body.end() && n->is_object()) b.allow_tf32 = n->value("allow_tf32", false);
  // A spare measured them into its own cache folder: the problem's cache gets them.
  if (!b.cached) keep_in_problem_cache("baselines", b.key);
  return b;
}

RefLibraryTimes RefServer::library_times(bool refresh) {
  nlohmann::json body = call({{"cmd", "library_times"}, {"refresh", refresh}, {"cache_dir", cache_dir_.string()}}, 900s,
                             "timing the reference's library calls");
  RefLibraryTimes t = body.get<RefLibraryTimes>();
  if (!t.cached) keep_in_problem_cache("library_times", body.value("key", ""));
  return t;
}

void RefServer::keep_in_problem_cache(const std::string& kind, const std::string& key) const {
  if (home_cache_.empty() || !plain_key(key)) return;
  const fs::path from = cache_dir_ / kind / (key + ".json");
  const fs::path to = home_cache_ / kind / (key + ".json");
  try {
    fs::create_directories(to.parent_path());
    write_file_atomic(to, read_text_file(from));  // another server never reads half a file
  } catch (const std::exception& e) {
    spdlog::warn("the {} of {} are measured but not cached: {}", kind, problem_.string(), e.what());
  }
}

std::string flops_source_text(const RefSignature& s) {
  std::string ops;
  size_t shown = 0;
  for (const auto& [name, n] : s.flops_by_op) {
    if (shown++ == 4) {
      ops += ", ...";
      break;
    }
    ops += fmt::format("{}{} {:.3g}", ops.empty() ? "" : ", ", name, n);
  }
  return fmt::format(
      "counted by PyTorch's FlopCounterMode on one forward call of the reference{}: matrix products, "
      "convolutions and attention at 2 per multiply-add; elementwise work is not counted",
      ops.empty() ? "" : fmt::format(" ({})", ops));
}

}  // namespace kagent
