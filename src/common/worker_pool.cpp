#include "kagent/common/worker_pool.hpp"

#include <algorithm>
#include <thread>

namespace kagent {

std::optional<size_t> WorkQueue::take_locked() {
  if ((stop_ != nullptr && stop_->load()) || next_ >= count_) return std::nullopt;
  return next_++;
}

size_t WorkQueue::taken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return next_;
}

void run_workers(const std::vector<int>& gpus, int per_gpu, const std::function<void(int gpu)>& worker) {
  std::vector<std::thread> threads;
  for (int gpu : gpus)
    for (int j = 0; j < std::max(1, per_gpu); ++j) threads.emplace_back(worker, gpu);
  for (auto& t : threads) t.join();
}

}  // namespace kagent
