#include "kagent/eval/warm_problems.hpp"

#include <dirent.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "kagent/common/error.hpp"
#include "kagent/eval/gpu_lock.hpp"
#include "kagent/gpu/memory_users.hpp"

#include "fresh_seed.hpp"

namespace kagent {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// A CUDA context's own memory, beside what torch reserves, where NVML cannot say per process.
constexpr uint64_t kContextBytes = uint64_t{512} << 20;

// Pools alive in this process: the host's share is divided among them (one per GPU worker).
std::atomic<int> g_pools{0};

uint64_t meminfo_kib(const std::string& field) {
  std::ifstream in("/proc/meminfo");
  std::string name;
  uint64_t kib = 0;
  std::string unit;
  while (in >> name >> kib) {
    std::getline(in, unit);
    if (name == field + ":") return kib;
  }
  return 0;
}

// Private memory (anonymous and shared-memory pages) of `root` and every process below it: what
// the process costs the host beyond the libraries every Python child maps from the page cache.
uint64_t private_bytes_of_tree(pid_t root) {
  uint64_t kib = 0;
  DIR* d = opendir("/proc");
  if (d == nullptr) return 0;
  while (dirent* ent = readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(ent->d_name[0]))) continue;
    const pid_t pid = static_cast<pid_t>(std::atol(ent->d_name));
    if (!descends_from(pid, {root})) continue;
    std::ifstream in(fmt::format("/proc/{}/status", pid));
    std::string line;
    while (std::getline(in, line))
      if (line.rfind("RssAnon:", 0) == 0 || line.rfind("RssShmem:", 0) == 0)
        kib += std::strtoull(line.c_str() + line.find(':') + 1, nullptr, 10);
  }
  closedir(d);
  return kib << 10;
}

// The process an entry's server runs as (0 for a test's entry without one).
pid_t pid_of(const WarmEntry& e) {
  return e.server ? e.server->pid() : 0;
}

// The GPU bytes an idle entry holds, for the memory bound.
uint64_t idle_gpu_bytes(const WarmEntry& e) {
  return std::max(e.gpu_bytes, e.reserved_bytes + kContextBytes);
}

// The op as candidates see it, from a server's signature.
PyTorchReference reference_of(const Op& op, RefSignature sig, uint64_t seed) {
  PyTorchReference r;
  r.op = op;
  r.seed = seed;
  r.signature = std::move(sig);
  r.op.inputs = r.signature.inputs;
  // What forward draws is an input of a native candidate like forward's own (a ModelNew solution
  // draws it itself: modelnew_kind.cpp passes forward's tensors only).
  r.op.inputs.insert(r.op.inputs.end(), r.signature.draws.begin(), r.signature.draws.end());
  r.op.inputs.insert(r.op.inputs.end(), r.signature.params.begin(), r.signature.params.end());
  r.op.outputs = r.signature.outputs;
  r.op.scalars.clear();
  for (const auto& s : r.signature.scalars) r.op.scalars.push_back(ScalarArg::from_json(s.name, s.value));
  r.op.flops = r.signature.flops;  // the compute floor's FLOPs (task prompt, profile)
  r.op.flops_source = r.signature.flops ? flops_source_text(r.signature) : r.signature.flops_note;
  return r;
}

}  // namespace

std::string warm_key(const fs::path& problem) {
  return fs::absolute(problem).lexically_normal().string();
}

std::string baselines_key(const StopRule& rule) {
  return nlohmann::json(rule).dump();
}

WarmProblems::WarmProblems(int gpu, WarmLimits limits, WarmHooks hooks)
    : gpu_(gpu), limits_(limits), hooks_(std::move(hooks)) {
  limits_.max_problems = std::max<size_t>(1, limits_.max_problems);
  // Spares are the reference server's: a test's own hooks have them only where it gives them.
  if (!hooks_.spawn && !hooks_.spare) {
    hooks_.spare = [this](const fs::path& gpu_lock) {
      auto e = std::make_unique<WarmEntry>();
      e->server = RefServer::spare(gpu_);
      e->server->warm();  // the context beside whatever runs; the kernels below with the GPU to itself
      std::optional<GpuLock> lock;
      if (!gpu_lock.empty()) lock.emplace(gpu_lock);
      e->server->warm_libraries();
      return e;
    };
    hooks_.adopt = [](WarmEntry& e, const WarmStart& s) { e.server->adopt(s.op.reference); };
  }
  if (!hooks_.spawn)
    hooks_.spawn = [this](const WarmStart& s) {
      auto e = std::make_unique<WarmEntry>();
      e->server = std::make_unique<RefServer>(gpu_, s.op.reference);
      if (s.ahead) e->server->warm();  // its CUDA context now, before it waits for the GPU
      return e;
    };
  if (!hooks_.load)
    hooks_.load = [](WarmEntry& e, const WarmStart& s) {
      const std::string precision(precision_name(s.op.precision));
      const bool load = e.loaded != precision;
      const bool baselines = s.baselines && e.baselines.count(baselines_key(*s.baselines)) == 0;
      if (!load && !baselines) return;
      // A start ahead runs the problem's kernels only with the GPU to itself: never during another
      // candidate's timing.
      std::optional<GpuLock> lock;
      if (s.ahead && !s.gpu_lock.empty()) lock.emplace(s.gpu_lock);
      if (load) {
        if (s.before_load) s.before_load();
        e.loaded.clear();
        // The model's weights are drawn under a fresh seed per load, so a candidate cannot carry
        // constants precomputed from them; each trial's inputs get a fresh seed of their own.
        const uint64_t seed = fresh_seed();
        e.ref = reference_of(s.op, e.server->load(s.op, s.op.precision, seed), seed);
        e.loaded = precision;
      }
      if (baselines) e.baselines[baselines_key(*s.baselines)] = e.server->baselines(false, *s.baselines);
    };
  if (!hooks_.idle) hooks_.idle = [](WarmEntry& e) { return e.server->release(); };
  if (!hooks_.measure)
    hooks_.measure = [this](pid_t root) -> std::pair<uint64_t, uint64_t> {
      uint64_t gpu = 0;
      std::string uuid;
      {
        std::lock_guard lock(mu_);
        uuid = uuid_;
      }
      if (!uuid.empty())
        if (auto users = gpu_memory_users(uuid))
          for (const auto& u : *users)
            if (descends_from(u.pid, {root})) gpu += u.bytes;
      return {gpu, private_bytes_of_tree(root)};
    };
  if (!hooks_.alive) hooks_.alive = [](WarmEntry& e) { return e.server->alive(); };
  ++g_pools;
  for (size_t i = 0; i < kThreads; ++i) threads_.emplace_back([this] { run(); });
}

WarmProblems::~WarmProblems() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    jobs_.clear();  // not started: nothing to undo
  }
  // A spare's start under way ends first (the join below); the ready ones are let go with the rest.
  cv_.notify_all();
  done_cv_.notify_all();
  for (auto& t : threads_) t.join();  // the starts under way end first: no child they start is orphaned
  warm_.clear();
  spares_.clear();
  --g_pools;
}

void WarmProblems::set_device(const std::string& uuid, uint64_t gpu_bytes) {
  std::lock_guard lock(mu_);
  uuid_ = uuid;
  gpu_total_ = gpu_bytes;
}

void WarmProblems::run() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
  }
}

uint64_t WarmProblems::host_share_bytes() const {
  const double total = static_cast<double>(meminfo_kib("MemTotal")) * 1024.0;
  return static_cast<uint64_t>(limits_.memory_share * total / std::max(1, g_pools.load()));
}

void WarmProblems::enforce_locked(size_t room, std::vector<std::unique_ptr<WarmEntry>>& gone) {
  // The least recently used idle entry; with room to make for a start ahead, not one started ahead
  // and not yet used (two announced problems would otherwise push each other out).
  auto oldest_idle = [&](bool spare_unused) {
    auto best = warm_.end();
    for (auto it = warm_.begin(); it != warm_.end(); ++it) {
      if (it->first == current_ || pinned_.count(it->first) != 0 || (spare_unused && it->second->ahead_unused))
        continue;
      if (best == warm_.end() || it->second->used < best->second->used) best = it;
    }
    return best;
  };
  auto evict = [&](std::map<std::string, std::unique_ptr<WarmEntry>>::iterator it, const char* why) {
    spdlog::debug("GPU {}: letting {} go ({})", gpu_, it->first, why);
    gone.push_back(std::move(it->second));
    warm_.erase(it);
    ++counts_.evicted;
  };
  while (warm_.size() + starting_.size() + room > limits_.max_problems) {
    auto it = oldest_idle(room > 0);
    if (it == warm_.end()) break;
    evict(it, "the most problems kept");
  }
  auto idle_sum = [&](auto bytes) {
    uint64_t sum = 0;
    for (const auto& [k, e] : warm_)
      if (k != current_) sum += bytes(*e);
    return sum;
  };
  if (gpu_total_ > 0) {
    const auto bound = static_cast<uint64_t>(limits_.memory_share * static_cast<double>(gpu_total_));
    while (idle_sum(idle_gpu_bytes) > bound) {
      auto it = oldest_idle(false);
      if (it == warm_.end()) break;
      evict(it, "the idle problems' GPU memory");
    }
  }
  const uint64_t host_bound = host_share_bytes();
  while (host_bound > 0 && idle_sum([](const WarmEntry& e) { return e.host_bytes; }) > host_bound) {
    auto it = oldest_idle(false);
    if (it == warm_.end()) break;
    evict(it, "the idle problems' host memory");
  }
}

std::unique_ptr<WarmEntry> WarmProblems::start_now(const WarmStart& s) {
  {
    std::lock_guard lock(mu_);
    if (!s.gpu_lock.empty()) gpu_lock_ = s.gpu_lock;
    seen_.insert(warm_key(s.op.reference));
  }
  std::unique_ptr<WarmEntry> e = take_spare();
  if (e)
    hooks_.adopt(*e, s);  // throws for an unreadable file: the spare is let go
  else
    e = hooks_.spawn(s);
  e->key = warm_key(s.op.reference);
  hooks_.load(*e, s);
  return e;
}

std::unique_ptr<WarmEntry> WarmProblems::take_spare() {
  for (;;) {
    std::unique_ptr<WarmEntry> e;
    {
      std::lock_guard lock(mu_);
      if (!spares_.empty()) {
        e = std::move(spares_.front());
        spares_.erase(spares_.begin());
      }
      refill_spares_locked();
      if (!e) return nullptr;
    }
    if (hooks_.alive(*e)) {
      std::lock_guard lock(mu_);
      ++counts_.spares_used;
      return e;
    }
    spdlog::debug("GPU {}: a spare reference server is gone; trying the next", gpu_);
  }
}

void WarmProblems::refill_spares_locked() {
  // Three spares that did not start: the machine cannot give them (no torch, no memory); problems
  // start from nothing as before.
  if (closing_ || !hooks_.spare || limits_.spares == 0 || seen_.size() < 2 || spare_failures_ >= 3) return;
  while (spares_.size() + spares_starting_ < limits_.spares) {
    ++spares_starting_;
    jobs_.emplace_back([this, gpu_lock = gpu_lock_] {
      std::unique_ptr<WarmEntry> e;
      try {
        e = hooks_.spare(gpu_lock);
      } catch (const std::exception& ex) {
        spdlog::info("GPU {}: a spare reference server did not start: {}", gpu_, ex.what());
      }
      std::unique_ptr<WarmEntry> unused;
      {
        std::lock_guard lock(mu_);
        --spares_starting_;
        if (!e) ++spare_failures_;
        if (e && !closing_)
          spares_.push_back(std::move(e));
        else
          unused = std::move(e);
      }
      // `unused` (when closing) ends here, outside the lock
    });
    cv_.notify_one();
  }
}

WarmProblems::Use WarmProblems::use(const WarmStart& s) {
  const std::string key = warm_key(s.op.reference);
  const auto t0 = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  std::vector<std::unique_ptr<WarmEntry>> gone;
  struct Unpin {
    WarmProblems* pool;
    ~Unpin() {
      std::lock_guard lock(pool->mu_);
      pool->pinned_.clear();
    }
  } unpin{this};
  Use u{nullptr, "", 0};
  WarmEntry* previous = nullptr;
  {
    std::unique_lock lock(mu_);
    if (starting_.count(key) != 0) {
      done_cv_.wait(lock, [&] { return closing_ || starting_.count(key) == 0; });
      u.waited_s = since();
    }
    if (auto it = warm_.find(key); it != warm_.end()) {
      u.entry = it->second.get();
      u.state = key == current_ ? "current" : it->second->ahead_unused ? "started_ahead" : "warm";
    } else if (auto f = ahead_failed_.find(key); f != ahead_failed_.end()) {
      spdlog::debug("GPU {}: {} started ahead failed ({}); starting it in its turn", gpu_, key, f->second);
      ahead_failed_.erase(f);
    }
    if (key != current_)
      if (auto it = warm_.find(current_); it != warm_.end()) previous = it->second.get();
    // Neither is let go by a start ahead that ends meanwhile (enforce_locked skips them).
    pinned_ = {key, current_};
  }
  if (u.entry != nullptr && !hooks_.alive(*u.entry)) {
    spdlog::info("GPU {}: the reference server of {} is gone; starting it again", gpu_, key);
    std::lock_guard lock(mu_);
    gone.push_back(std::move(warm_[key]));
    warm_.erase(key);
    u.entry = nullptr;
  }
  // The one in use goes idle: it lets go of its trial's tensors before another problem's are made.
  // (Only this thread changes the current one, and the pool never lets it go.) From here it is an
  // idle problem like the others: should the new one not fit beside it, evict_idle() lets it go.
  if (previous != nullptr) {
    const std::string left = previous->key;
    bool idle = true;
    try {
      previous->reserved_bytes = hooks_.idle(*previous);
    } catch (const std::exception& e) {
      spdlog::info("GPU {}: {} is let go: {}", gpu_, left, e.what());
      idle = false;
      std::lock_guard lock(mu_);
      if (auto it = warm_.find(left); it != warm_.end()) {
        gone.push_back(std::move(it->second));
        warm_.erase(it);
      }
    }
    std::lock_guard lock(mu_);
    current_.clear();
    // Its memory is measured on a helper thread (NVML and /proc take a while): not on this path.
    if (idle) measure_later_locked(left, pid_of(*previous));
  }
  if (u.entry == nullptr) {
    const auto start = Clock::now();
    std::unique_ptr<WarmEntry> fresh = start_now(s);  // throws the server's errors: nothing kept
    u.waited_s += std::chrono::duration<double>(Clock::now() - start).count();
    u.state = "started";
    std::lock_guard lock(mu_);
    ++counts_.started;
    u.entry = fresh.get();
    warm_[key] = std::move(fresh);
  } else {
    try {
      hooks_.load(*u.entry, s);  // another precision: loaded again in the same server
    } catch (...) {
      std::lock_guard lock(mu_);
      gone.push_back(std::move(warm_[key]));
      warm_.erase(key);
      if (current_ == key) current_.clear();
      throw;
    }
  }
  {
    std::lock_guard lock(mu_);
    current_ = key;
    pinned_.clear();
    u.entry->used = Clock::now();
    u.entry->ahead_unused = false;
    enforce_locked(0, gone);
  }
  return u;  // `gone` is destroyed here, outside the lock: their servers are killed
}

void WarmProblems::measure_later_locked(const std::string& key, pid_t pid) {
  jobs_.emplace_back([this, key, pid] {
    const auto [gpu, host] = hooks_.measure(pid);
    std::vector<std::unique_ptr<WarmEntry>> dropped;
    std::lock_guard lock(mu_);
    auto it = warm_.find(key);
    if (it == warm_.end() || pid_of(*it->second) != pid) return;  // let go, or started again, meanwhile
    it->second->gpu_bytes = gpu;
    it->second->host_bytes = host;
    enforce_locked(0, dropped);
  });  // `dropped` ends after the lock is released: its servers are killed outside it
  cv_.notify_one();
}

bool WarmProblems::start_ahead(WarmStart s) {
  const std::string key = warm_key(s.op.reference);
  std::vector<std::unique_ptr<WarmEntry>> gone;
  {
    std::lock_guard lock(mu_);
    if (closing_ || starting_.count(key) != 0) return false;
    if (auto it = warm_.find(key); it != warm_.end()) {
      // Announced again: as good as used now, so that the problems started ahead after it do not
      // push it out before its turn.
      it->second->used = Clock::now();
      return false;
    }
    if (warm_.size() + starting_.size() >= limits_.max_problems) {
      enforce_locked(1, gone);
      if (warm_.size() + starting_.size() >= limits_.max_problems) return false;  // no idle one to let go
    }
    s.ahead = true;
    s.before_load = nullptr;  // the runner belongs to the worker's thread
    starting_.insert(key);
    jobs_.emplace_back([this, s, key] {
      std::unique_ptr<WarmEntry> e;
      std::string why;
      try {
        e = start_now(s);
        e->reserved_bytes = hooks_.idle(*e);
        std::tie(e->gpu_bytes, e->host_bytes) = hooks_.measure(pid_of(*e));
      } catch (const std::exception& ex) {
        why = ex.what();
        e.reset();
      }
      std::vector<std::unique_ptr<WarmEntry>> dropped;
      {
        std::lock_guard lock(mu_);
        starting_.erase(key);
        if (e && !closing_) {
          e->used = Clock::now();
          e->ahead_unused = true;
          warm_[key] = std::move(e);
          ++counts_.started;
          ++counts_.started_ahead;
          enforce_locked(0, dropped);
        } else if (!e) {
          ahead_failed_[key] = why;
        }
      }
      done_cv_.notify_all();
      // `e` (when closing) and `dropped` end here, outside the lock
    });
  }
  cv_.notify_one();
  return true;
}

bool WarmProblems::holds(const std::string& key) const {
  std::lock_guard lock(mu_);
  return warm_.count(key) != 0 || starting_.count(key) != 0;
}

size_t WarmProblems::evict_idle() {
  std::vector<std::unique_ptr<WarmEntry>> gone, spares;
  {
    std::lock_guard lock(mu_);
    spares.swap(spares_);  // a CUDA context each: the next start makes them again
    for (auto it = warm_.begin(); it != warm_.end();) {
      if (it->first == current_) {
        ++it;
        continue;
      }
      gone.push_back(std::move(it->second));
      it = warm_.erase(it);
      ++counts_.evicted;
    }
  }
  return gone.size();
}

void WarmProblems::drop_current() {
  std::unique_ptr<WarmEntry> gone;
  std::lock_guard lock(mu_);
  if (auto it = warm_.find(current_); it != warm_.end()) {
    gone = std::move(it->second);
    warm_.erase(it);
  }
  current_.clear();
}

WarmEntry* WarmProblems::current() {
  std::lock_guard lock(mu_);
  auto it = warm_.find(current_);
  return it == warm_.end() ? nullptr : it->second.get();
}

std::vector<pid_t> WarmProblems::pids() const {
  std::lock_guard lock(mu_);
  std::vector<pid_t> out;
  for (const auto& [k, e] : warm_)
    if (e->server) out.push_back(e->server->pid());
  for (const auto& e : spares_)
    if (e->server) out.push_back(e->server->pid());
  return out;
}

WarmStats WarmProblems::stats() const {
  std::lock_guard lock(mu_);
  WarmStats s = counts_;
  s.spares = spares_.size();
  s.warm = warm_.size();
  s.starting = starting_.size();
  s.current = current_;
  std::vector<const WarmEntry*> by_use;
  for (const auto& [k, e] : warm_) by_use.push_back(e.get());
  std::sort(by_use.begin(), by_use.end(), [](const WarmEntry* a, const WarmEntry* b) { return a->used < b->used; });
  for (const WarmEntry* e : by_use) {
    s.problems.push_back(e->key);
    if (e->key != current_) {
      s.gpu_bytes += idle_gpu_bytes(*e);
      s.host_bytes += e->host_bytes;
    }
  }
  for (const auto& k : starting_) s.problems.push_back(k);
  return s;
}

}  // namespace kagent
