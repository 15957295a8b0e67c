#include "kagent/judge/prebuild.hpp"

#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/candidate_kinds.hpp"

namespace kagent::judge {

namespace fs = std::filesystem;

namespace {

// The process's folder of candidates given as text, made on first use and removed at exit.
class TextFolder {
 public:
  const fs::path& path() {
    std::lock_guard lock(mu_);
    if (dir_.empty()) {
      std::string templ = (fs::temp_directory_path() / "kagent-judge-XXXXXX").string();
      if (mkdtemp(templ.data()) == nullptr)
        throw EnvError(fmt::format("cannot create a temporary folder in {}", templ));
      dir_ = templ;
    }
    return dir_;
  }
  ~TextFolder() {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }

 private:
  std::mutex mu_;
  fs::path dir_;
};

TextFolder& text_folder() {
  static TextFolder folder;
  return folder;
}

// What names a request's candidate: its file, or its kind and text.
std::string request_key(const CandidateRequest& r) {
  if (!r.file.empty()) return "file\n" + fs::absolute(r.file).lexically_normal().string() + "\n" + r.arch;
  return Hasher().add_field("text").add_field(r.kind).add_field(r.source).add_field(r.arch).hex();
}

}  // namespace

fs::path text_candidate_path(const CandidateRequest& r) {
  const CandidateKind& kind = kind_named(r.kind, "kind");
  // The folder is the text's hash: the same text, the same path (the compile cache's key has it),
  // and two texts never share a file.
  const std::string hash = Hasher().add_field(r.kind).add_field(r.source).hex().substr(0, 24);
  return text_folder().path() / hash / ("candidate" + kind.extensions().front());
}

Candidate candidate_of_request(const CandidateRequest& r) {
  if (!r.file.empty()) return load_candidate(r.file);
  const CandidateKind& kind = kind_named(r.kind, "kind");
  const fs::path path = text_candidate_path(r);
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  // Rewritten with the same bytes when it exists: a writer beside it (a prebuild) renames the
  // same text into place, so a reader never sees a partial file.
  write_file_atomic(path, r.source);
  return kind.parse(r.source, path);
}

int default_prebuild_threads(int gpu_workers) {
  const int hw = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, hw - 2 * std::max(1, gpu_workers));
}

Prebuilder::Prebuilder(std::shared_ptr<CompileCache> cache, std::string arch, int threads) : arch_(std::move(arch)) {
  CudaPaths paths;
  try {
    paths = find_cuda_paths();
    nvrtc_ = true;
  } catch (const std::exception& e) {
    spdlog::debug("building ahead: no NVRTC compiles ({})", e.what());
  }
  compiler_ = std::make_unique<Compiler>(paths, std::move(cache));
  if (threads <= 0) threads = default_prebuild_threads(1);
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
}

Prebuilder::~Prebuilder() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    for (Work& w : queue_) w.done.set_value();  // dropped: its evaluation builds it itself
    queue_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

std::shared_future<void> Prebuilder::submit(const CandidateRequest& request) {
  const std::string key = request_key(request);
  std::lock_guard lock(mu_);
  if (auto it = submitted_.find(key); it != submitted_.end()) return it->second;
  Work w{request, {}};
  std::shared_future<void> f = w.done.get_future().share();
  if (stopping_) {
    w.done.set_value();
    return f;
  }
  submitted_[key] = f;
  queue_.push_back(std::move(w));
  cv_.notify_one();
  return f;
}

void Prebuilder::wait_for(const CandidateRequest& request) {
  const std::string key = request_key(request);
  std::shared_future<void> f;
  {
    std::lock_guard lock(mu_);
    auto it = submitted_.find(key);
    if (it == submitted_.end()) return;
    f = it->second;
  }
  f.wait();
  std::lock_guard lock(mu_);
  submitted_.erase(key);  // done: a later request of the same candidate finds its build in the caches
}

bool Prebuilder::ready_locked(const std::string& key) const {
  auto it = submitted_.find(key);
  return it == submitted_.end() || it->second.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

bool Prebuilder::ready(const CandidateRequest& request) const {
  const std::string key = request_key(request);
  std::lock_guard lock(mu_);
  return ready_locked(key);
}

size_t Prebuilder::first_ready(const std::vector<const CandidateRequest*>& pending) const {
  std::vector<std::string> keys;
  for (const CandidateRequest* r : pending) keys.push_back(request_key(*r));
  std::unique_lock lock(mu_);
  for (;;) {
    for (size_t i = 0; i < keys.size(); ++i)
      if (ready_locked(keys[i])) return i;
    done_cv_.wait(lock);
  }
}

void Prebuilder::wait_for_progress(std::chrono::milliseconds at_most) const {
  std::unique_lock lock(mu_);
  done_cv_.wait_for(lock, at_most);
}

Prebuilder::Stats Prebuilder::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

void Prebuilder::work() {
  // Below the GPU workers and their runners: a timed plan's launches keep their core.
  setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 10);
  for (;;) {
    Work w;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      w = std::move(queue_.front());
      queue_.pop_front();
      if (!first_start_) first_start_ = std::chrono::steady_clock::now();
    }
    bool failed = false;
    try {
      build(w.request);
    } catch (const std::exception& e) {
      failed = true;
      spdlog::debug("building {} ahead: {}", w.request.name.empty() ? w.request.file.string() : w.request.name,
                    e.what());
    }
    {
      std::lock_guard lock(mu_);
      ++stats_.built;
      if (failed) ++stats_.failed;
      stats_.span_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - *first_start_).count();
      w.done.set_value();  // under the lock: first_ready() sees it ready when woken
    }
    done_cv_.notify_all();
  }
}

void Prebuilder::build(const CandidateRequest& r) {
  const Candidate cand = candidate_of_request(r);
  const CandidateKind& kind = kind_of(cand);
  const std::string& arch = r.arch.empty() ? arch_ : r.arch;
  if (kind.compiles_before_evaluation() && !nvrtc_) return;  // its evaluation says what is missing
  kind.prebuild(cand, *compiler_, arch);
}

}  // namespace kagent::judge
