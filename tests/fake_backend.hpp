#pragma once
// A judge backend for tests without a GPU: answers each request with a record made from the
// candidate's source text ("tier 2 speedup 1.5", "compile_error", "crash", "throw input",
// "throw env", and "block" at its start), counts its calls, and (for "block") waits until released, so that a test
// can hold a worker busy and fill a queue deterministically.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>
#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"

#include "kagent/common/score.hpp"
#include "kagent/judge/backend.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent::test {

// Shared by a test and the backends its factory makes.
struct FakeBackendState {
  std::mutex mu;
  std::condition_variable cv;
  int blocked = 0;        // evaluations waiting in "block"
  bool released = false;  // lets them go
  std::atomic<int> calls{0};
  std::atomic<int> made{0};  // backends made
  std::string unavailable;
  // Each expect() hint and each evaluate(), in order: "expect NAME NAME...", "evaluate NAME".
  std::vector<std::string> events;

  void release() {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
    cv.notify_all();
  }
  // Waits (bounded) until n evaluations are blocked.
  bool wait_blocked(int n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [&] { return blocked >= n; });
  }
};

class FakeBackend : public judge::EvalBackend {
 public:
  explicit FakeBackend(FakeBackendState* s) : s_(s) { ++s_->made; }
  std::string unavailable() override { return s_->unavailable; }
  void expect(const std::vector<judge::CandidateRequest>& next) override {
    std::lock_guard<std::mutex> lock(s_->mu);
    std::string e = "expect";
    for (const auto& r : next) e += " " + (!r.name.empty() ? r.name : r.file.string());
    s_->events.push_back(e);
  }
  nlohmann::json evaluate(const judge::CandidateRequest& r) override {
    ++s_->calls;
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      s_->events.push_back("evaluate " + (!r.name.empty() ? r.name : r.file.string()));
    }
    const std::string text = r.file.empty() ? r.source : read_text_file(r.file);
    if (text.rfind("block", 0) == 0) {  // a text that starts with the word
      std::unique_lock<std::mutex> lock(s_->mu);
      ++s_->blocked;
      s_->cv.notify_all();
      s_->cv.wait_for(lock, std::chrono::seconds(30), [&] { return s_->released; });
    }
    if (text.find("throw input") != std::string::npos) throw InputError("launch[0]: unknown kernel k");
    if (text.find("throw env") != std::string::npos) throw EnvError("the runner is gone");
    const std::string name = !r.name.empty() ? r.name : r.file.string();
    nlohmann::json rec = {
        {"candidate", name},
        {"op", r.problem.filename().string()},
        {"precision", "fp32"},
        {"tolerance", {{"atol", 1e-4}, {"rtol", 1e-4}}},
        {"compile", {{"ok", text.find("compile_error") == std::string::npos}, {"log", "x.cu(1): error"}}},
        {"baselines", {{"eager_ms", 1.0}, {"compile_ms", 0.8}}}};
    if (!rec["compile"]["ok"].get<bool>()) {
      rec["tier"] = -1;
      return rec;
    }
    const bool crash = text.find("crash") != std::string::npos;
    int tier = 1;
    double speedup = 1.0;
    if (auto at = text.find("tier "); at != std::string::npos) tier = std::stoi(text.substr(at + 5));
    if (auto at = text.find("speedup "); at != std::string::npos) speedup = std::stod(text.substr(at + 8));
    if (crash) tier = -1;
    rec["tier"] = tier;
    rec["speedup_vs_eager"] = tier > 0 ? nlohmann::json(speedup) : nlohmann::json();
    rec["speedup_vs_compile"] = tier > 0 ? nlohmann::json(speedup * 0.8) : nlohmann::json();
    rec["outcome"] = nlohmann::json{{"correct", tier > 0},
                                    {"failure_stage", crash      ? "crash"
                                                      : tier > 0 ? "none"
                                                                 : "correctness"},
                                    {"message", crash      ? "the runner died (SIGSEGV)"
                                                : tier > 0 ? ""
                                                           : "output y differs"},
                                    {"device", {{"name", "Fake GPU"}}},
                                    {"stop_rule", StopRule{}}};
    if (tier > 0) rec["outcome"]["candidate_time"] = nlohmann::json{{"median_ms", 1.0 / speedup}};
    Score score;  // as report_json writes it (eval/report_score.hpp)
    score.tier = tier;
    score.precision = "fp32";
    score.tolerance = Tolerance{1e-4, 1e-4};
    score.eager_ms = 1.0;
    score.compile_ms = 0.8;
    score.device = "Fake GPU";
    if (tier > 0) {
      score.candidate_ms = 1.0 / speedup;
      score.speedup_vs_eager = speedup;
      score.speedup_vs_compile = speedup * 0.8;
      score.stop_rule = stop_rule_text(StopRule{});
    }
    rec["score"] = score;
    return rec;
  }

  // The same verdict as a report (the sessions' evaluations), made from the record above.
  EvalReport evaluate_report(const judge::CandidateRequest& r) override {
    const nlohmann::json rec = evaluate(r);
    {
      std::lock_guard<std::mutex> lock(s_->mu);
      s_->events.push_back(std::string("report ") + (r.mode == EvalMode::profile ? "profile" : "score"));
    }
    EvalReport rep;
    rep.candidate = rec.value("candidate", "");
    rep.op = rec.value("op", "");
    rep.compile.ok = rec["compile"]["ok"].get<bool>();
    rep.compile.log = rep.compile.ok ? "" : rec["compile"]["log"].get<std::string>();
    rep.baselines.eager_ms = 1.0;
    rep.baselines.compile_ms = 0.8;
    rep.reward.tier = rec["tier"].get<int>();
    if (!rep.compile.ok) {
      rep.reward.reason = "compile failed";
      return rep;
    }
    rep.ran = true;
    rep.outcome.correct = rep.reward.tier > 0;
    rep.outcome.device.name = "Fake GPU";
    if (rep.outcome.correct) {
      const double speedup = rec["speedup_vs_eager"].get<double>();
      rep.reward.speedup_vs_eager = speedup;
      rep.reward.speedup_vs_compile = speedup * 0.8;
      TimingSummary t;
      t.median_ms = 1.0 / speedup;
      rep.outcome.candidate_time = t;
      rep.reward.reason = "correct";
    } else {
      rep.outcome.failure_stage = FailureStage::correctness;
      rep.outcome.message = "output y differs";
      rep.reward.reason = "incorrect";
    }
    return rep;
  }

 private:
  FakeBackendState* s_;
};

// A candidate given as text (as `kagent serve` gets one), of the plan kind, against "op.json".
inline judge::CandidateRequest text_request(const std::string& name, const std::string& source) {
  judge::CandidateRequest r;
  r.name = name;
  r.source = source;
  r.problem = "op.json";
  return r;
}

inline judge::BackendFactory fake_backends(FakeBackendState* s) {
  return [s](int) -> std::unique_ptr<judge::EvalBackend> { return std::make_unique<FakeBackend>(s); };
}

}  // namespace kagent::test
