#pragma once
// The worker pool behind `kagent bench` and `kagent check`: a shared queue of item indices and
// worker threads (one or more per GPU). Each worker owns what it builds in its thread (a runner,
// a reference server, an evaluator) and takes items in order until none is left or `stop` turns
// true. The queue's mutex is the callers' too: what they do under it (progress lines, writing
// records) is serialized with taking items.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <vector>

namespace kagent {

class WorkQueue {
 public:
  // `count` items, 0..count-1; `stop` (may be null) ends the handing out early.
  WorkQueue(size_t count, const std::atomic<bool>* stop) : count_(count), taken_(count, false), stop_(stop) {}
  // The next item's index, or nullopt when the queue is done or stopped. Call with mutex() held.
  std::optional<size_t> take_locked();
  // The first item not yet taken for which `prefer` is true, among the first `window` not taken
  // (items are taken out of order then); nullopt when none is, or the queue is done or stopped
  // (done_locked() tells which). Call with mutex() held.
  std::optional<size_t> take_preferred_locked(const std::function<bool(size_t)>& prefer, size_t window = SIZE_MAX);
  // Up to `count` items not taken, without taking them, in the order they would likely be handed
  // out: those `prefer` is true for (among the first `window` not taken) first, then the others in
  // order. A hint of what comes next. Call with mutex() held.
  std::vector<size_t> peek_locked(const std::function<bool(size_t)>& prefer, size_t window, size_t count) const;
  // The first `window` items not taken, in order (none when the queue is done or stopped): what a
  // scheduler chooses among (judge/affinity.hpp). Call with mutex() held.
  std::vector<size_t> pending_locked(size_t window) const;
  // Takes item `i`; false when it was taken already or the queue is done or stopped. Call with
  // mutex() held.
  bool take_item_locked(size_t i);
  // Every item taken, or the queue stopped. Call with mutex() held.
  bool done_locked() const;
  std::mutex& mutex() { return mu_; }
  // Items handed out so far (the rest were never started).
  size_t taken() const;

 private:
  mutable std::mutex mu_;
  size_t count_;
  size_t next_ = 0;          // the first item not yet taken
  std::vector<bool> taken_;  // by item: handed out
  size_t taken_count_ = 0;
  const std::atomic<bool>* stop_;
};

// Runs `worker(gpu)` on `per_gpu` threads (at least one) for each GPU of `gpus`; returns when all
// have returned. Each worker takes items from its caller's WorkQueue.
void run_workers(const std::vector<int>& gpus, int per_gpu, const std::function<void(int gpu)>& worker);

}  // namespace kagent
