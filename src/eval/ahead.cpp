#include "kagent/eval/ahead.hpp"

#include <algorithm>

#include <spdlog/spdlog.h>

namespace kagent {

AheadSlot::AheadSlot() {
  for (size_t i = 0; i < kThreads; ++i) threads_.emplace_back([this] { run(); });
}

AheadSlot::~AheadSlot() {
  {
    std::lock_guard lock(mu_);
    closing_ = true;
    jobs_.clear();  // not started: nothing to undo
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();  // the jobs under way end first: no child they start is orphaned
  held_.clear();                      // what was not taken is discarded here
}

void AheadSlot::run() {
  for (;;) {
    std::packaged_task<std::unique_ptr<AheadWork>()> job;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return closing_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();  // an exception lands in the job's future
  }
}

void AheadSlot::discard_locked(Result r) {
  // Waited for and dropped on a helper thread, once the job that makes it is over: start() does not
  // wait. (The job that makes it was queued earlier, so it has started by the time this one runs.)
  auto old = std::make_shared<Result>(std::move(r));
  jobs_.emplace_back([old]() -> std::unique_ptr<AheadWork> {
    try {
      old->get();
    } catch (...) {
    }
    return nullptr;
  });
}

void AheadSlot::start(const std::string& key, std::function<std::unique_ptr<AheadWork>()> make, size_t count) {
  {
    std::lock_guard lock(mu_);
    if (closing_) return;
    size_t held = 0;
    for (const auto& h : held_) held += h.first == key ? 1 : 0;
    for (; held < count; ++held) {
      std::packaged_task<std::unique_ptr<AheadWork>()> job(make);
      held_.emplace_back(key, job.get_future());
      jobs_.push_back(std::move(job));
    }
    while (held_.size() > kHeld) {
      discard_locked(std::move(held_.front().second));
      held_.pop_front();
    }
  }
  cv_.notify_all();
}

std::unique_ptr<AheadWork> AheadSlot::take(const std::string& key) {
  Result f;
  {
    std::lock_guard lock(mu_);
    auto it = std::find_if(held_.begin(), held_.end(), [&](const auto& h) { return h.first == key; });
    if (it == held_.end()) return nullptr;
    f = std::move(it->second);
    held_.erase(it);
  }
  try {
    return f.get();
  } catch (const std::exception& e) {
    spdlog::debug("work started ahead failed, done in its turn instead: {}", e.what());
  } catch (...) {
  }
  return nullptr;
}

std::vector<std::string> AheadSlot::held() const {
  std::lock_guard lock(mu_);
  std::vector<std::string> keys;
  for (const auto& h : held_) keys.push_back(h.first);
  return keys;
}

}  // namespace kagent
