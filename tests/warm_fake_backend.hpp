#pragma once
// A judge backend for tests without a GPU whose problem switches cost time, as a real one's do:
// it keeps up to `limit` problems warm (least recently used let go first), an evaluation of a warm
// problem takes `warm_cost` and one of a cold problem `cold_cost` more (a start in turn), and a
// problem announced through expect() starts ahead on a thread of its own, so that its evaluation
// later finds it warm. It reports what it holds through warm(), and counts the starts in a state
// its tests share, so that a test asserts on counts rather than on wall time.
#include <chrono>
#include <future>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/judge/backend.hpp"

namespace kagent::test {

struct WarmFakeStats {
  std::mutex mu;
  int in_turn = 0;  // evaluations that started their problem (cold)
  int ahead = 0;    // problems started ahead
  int evicted = 0;
  int evaluations = 0;
  int starts() {
    std::lock_guard<std::mutex> lock(mu);
    return in_turn + ahead;
  }
};

class WarmFakeBackend : public judge::EvalBackend {
 public:
  WarmFakeBackend(WarmFakeStats* stats, size_t limit, std::chrono::milliseconds warm_cost,
                  std::chrono::milliseconds cold_cost)
      : stats_(stats), limit_(limit), warm_cost_(warm_cost), cold_cost_(cold_cost) {}

  std::string unavailable() override { return ""; }

  void expect(const std::vector<judge::CandidateRequest>& next) override {
    for (const auto& r : next) {
      const std::string key = judge::problem_key(r.problem);
      if (auto it = find(key); it != lru_.end()) {  // named as coming: recently used
        lru_.splice(lru_.end(), lru_, it);
        continue;
      }
      // Started on a thread beside the evaluation: ready after the cold cost.
      const auto cost = cold_cost_;
      insert({key, std::async(std::launch::async, [cost] { std::this_thread::sleep_for(cost); }).share()});
      ++started_ahead_;
      std::lock_guard<std::mutex> lock(stats_->mu);
      ++stats_->ahead;
    }
  }

  nlohmann::json evaluate(const judge::CandidateRequest& r) override {
    const std::string key = judge::problem_key(r.problem);
    auto it = find(key);
    if (it == lru_.end()) {
      std::this_thread::sleep_for(cold_cost_);  // a start in turn
      ++started_;
      {
        std::lock_guard<std::mutex> lock(stats_->mu);
        ++stats_->in_turn;
      }
      insert({key, {}});
    } else {
      if (it->started.valid()) it->started.wait();  // a start ahead not yet over
      lru_.splice(lru_.end(), lru_, it);            // the most recently used
    }
    current_ = key;
    std::this_thread::sleep_for(warm_cost_);
    {
      std::lock_guard<std::mutex> lock(stats_->mu);
      ++stats_->evaluations;
    }
    nlohmann::json rec = {{"candidate", r.name}, {"op", r.problem.string()}, {"tier", 1}};
    rec["compile"] = {{"ok", true}};
    rec["outcome"] = {{"correct", true}, {"failure_stage", "none"}, {"message", ""}};
    return rec;
  }

  judge::WarmState warm() override {
    judge::WarmState s;
    for (const auto& w : lru_) s.problems.push_back(w.key);
    s.current = current_;
    s.limit = limit_;
    s.memory_share = 0.5;
    s.started = started_ + started_ahead_;
    s.started_ahead = started_ahead_;
    s.evicted = evicted_;
    return s;
  }

 private:
  struct Warm {
    std::string key;
    std::shared_future<void> started;  // invalid: started in turn
  };
  std::list<Warm>::iterator find(const std::string& key) {
    for (auto it = lru_.begin(); it != lru_.end(); ++it)
      if (it->key == key) return it;
    return lru_.end();
  }
  void insert(Warm w) {
    lru_.push_back(std::move(w));
    while (lru_.size() > limit_) {
      lru_.pop_front();
      ++evicted_;
      std::lock_guard<std::mutex> lock(stats_->mu);
      ++stats_->evicted;
    }
  }

  WarmFakeStats* stats_;
  size_t limit_;
  std::chrono::milliseconds warm_cost_, cold_cost_;
  std::list<Warm> lru_;  // least recently used first
  std::string current_;
  long started_ = 0, started_ahead_ = 0, evicted_ = 0;
};

inline judge::BackendFactory warm_fake_backends(WarmFakeStats* stats, size_t limit,
                                                std::chrono::milliseconds warm_cost = std::chrono::milliseconds(2),
                                                std::chrono::milliseconds cold_cost = std::chrono::milliseconds(40)) {
  return [=](int) -> std::unique_ptr<judge::EvalBackend> {
    return std::make_unique<WarmFakeBackend>(stats, limit, warm_cost, cold_cost);
  };
}

}  // namespace kagent::test
