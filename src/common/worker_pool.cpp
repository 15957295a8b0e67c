#include "kagent/common/worker_pool.hpp"

#include <algorithm>
#include <thread>

namespace kagent {

bool WorkQueue::done_locked() const {
  return (stop_ != nullptr && stop_->load()) || next_ >= count_;
}

std::optional<size_t> WorkQueue::take_locked() {
  return take_preferred_locked([](size_t) { return true; });
}

std::optional<size_t> WorkQueue::take_preferred_locked(const std::function<bool(size_t)>& prefer, size_t window) {
  if (done_locked()) return std::nullopt;
  size_t looked = 0;
  for (size_t i = next_; i < count_ && looked < window; ++i) {
    if (taken_[i]) continue;
    ++looked;
    if (prefer(i) && take_item_locked(i)) return i;
  }
  return std::nullopt;
}

std::vector<size_t> WorkQueue::pending_locked(size_t window) const {
  std::vector<size_t> out;
  if (done_locked()) return out;
  for (size_t i = next_; i < count_ && out.size() < window; ++i)
    if (!taken_[i]) out.push_back(i);
  return out;
}

bool WorkQueue::take_item_locked(size_t i) {
  if (done_locked() || i >= count_ || taken_[i]) return false;
  taken_[i] = true;
  ++taken_count_;
  while (next_ < count_ && taken_[next_]) ++next_;
  return true;
}

std::vector<size_t> WorkQueue::peek_locked(const std::function<bool(size_t)>& prefer, size_t window,
                                           size_t count) const {
  std::vector<size_t> preferred, others;
  if (done_locked()) return {};
  size_t looked = 0;
  for (size_t i = next_; i < count_ && looked < window && preferred.size() < count; ++i) {
    if (taken_[i]) continue;
    ++looked;
    (prefer(i) ? preferred : others).push_back(i);
  }
  for (size_t i : others) {
    if (preferred.size() >= count) break;
    preferred.push_back(i);
  }
  return preferred;
}

size_t WorkQueue::taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return taken_count_;
}

void run_workers(const std::vector<int>& gpus, int per_gpu, const std::function<void(int gpu)>& worker) {
  std::vector<std::thread> threads;
  for (int gpu : gpus)
    for (int j = 0; j < std::max(1, per_gpu); ++j) threads.emplace_back(worker, gpu);
  for (auto& t : threads) t.join();
}

}  // namespace kagent
