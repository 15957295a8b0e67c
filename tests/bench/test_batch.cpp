// The batch engine with fake jobs (no GPU): every problem gets exactly one record whatever its job
// does, failures become records, repeated environment failures stop a worker, an interrupt leaves
// the rest for --resume; and how evaluations and agent runs become records.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <fmt/format.h>

#include "kagent/agent/result_file.hpp"
#include "kagent/bench/batch.hpp"
#include "kagent/bench/jobs.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/worker_pool.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::bench;

namespace {

std::vector<Problem> make_problems(int n) {
  std::vector<Problem> ps;
  for (int i = 0; i < n; ++i)
    ps.push_back({"level1/" + std::to_string(i) + "_p", "level1", std::to_string(i) + "_p", {}});
  return ps;
}

// Behaves by the problem's number: multiples of 7 throw, 5 says "interrupted", the rest pass.
class FakeJob : public ProblemJob {
 public:
  explicit FakeJob(int gpu) : gpu_(gpu) {}
  std::optional<report::ResultRecord> run(const Problem& p) override {
    const int n = std::stoi(p.name);
    std::this_thread::sleep_for(std::chrono::milliseconds(n % 3));
    if (n % 7 == 0) throw std::runtime_error("fake failure on " + p.id);
    report::ResultRecord r;
    r.problem = p.id;
    r.level = p.level;
    r.status = "correct";
    r.score.tier = 2;
    r.score.speedup_vs_eager = 1.5;
    r.gpu = gpu_;
    return r;
  }
  int gpu_;
};

}  // namespace

TEST(BenchBatch, EveryProblemGetsOneRecordAcrossWorkers) {
  auto ps = make_problems(60);
  std::mutex mu;
  std::multiset<std::string> seen;
  std::map<std::string, std::string> status;
  std::set<int> gpus_used;
  std::atomic<int> jobs_made{0};
  BatchOptions o;
  o.gpus = {0, 1};
  o.jobs_per_gpu = 2;
  BatchEvents ev;
  ev.finished = [&](const report::ResultRecord& r) {
    std::lock_guard<std::mutex> lock(mu);  // run_batch serializes these; the lock makes the test not rely on it
    seen.insert(r.problem);
    status[r.problem] = r.status;
    gpus_used.insert(*r.gpu);
    EXPECT_TRUE(r.wall_s.has_value());
  };
  std::atomic<bool> stop{false};
  auto out = run_batch(
      ps, o,
      [&](int gpu) {
        ++jobs_made;
        return std::make_unique<FakeJob>(gpu);
      },
      ev, stop);
  EXPECT_EQ(out.finished, 60);
  EXPECT_EQ(out.not_run, 0);
  EXPECT_TRUE(out.env_failure.empty());
  EXPECT_EQ(seen.size(), 60u);
  for (const auto& p : ps) EXPECT_EQ(seen.count(p.id), 1u) << p.id;
  EXPECT_EQ(status["level1/14_p"], "error");  // threw: recorded, and the batch went on
  EXPECT_EQ(status["level1/15_p"], "correct");
  EXPECT_EQ(gpus_used, (std::set<int>{0, 1}));
  // 4 workers, plus a fresh job after each of the 9 failures (multiples of 7 in 0..59) that its
  // worker followed with another problem (each worker's last failure may have been its last).
  EXPECT_GE(jobs_made.load(), 4 + 9 - 4);
  EXPECT_LE(jobs_made.load(), 4 + 9);
}

// Building ahead (bench --samples): a worker takes the first problem whose build is over, and waits
// while none is; every problem still gets one record.
TEST(BenchBatch, WorkersTakeTheFirstBuiltProblem) {
  auto ps = make_problems(4);  // 1..3 pass (0 throws: a record all the same)
  std::mutex mu;
  std::vector<std::string> order;
  std::atomic<bool> third_done{false};
  std::atomic<int> waits{0};
  BatchOptions o;
  // Problems 0 and 1 are built only once problem 3 is recorded; 2 never ends before them either.
  o.ready = [&](const Problem& p) { return p.name == "3_p" || third_done.load(); };
  o.wait_for_builds = [&] {
    ++waits;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  BatchEvents ev;
  ev.finished = [&](const report::ResultRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(r.problem);
    if (r.problem == "level1/3_p") third_done = true;
  };
  std::atomic<bool> stop{false};
  auto out = run_batch(
      ps, o, [](int gpu) { return std::make_unique<FakeJob>(gpu); }, ev, stop);
  EXPECT_EQ(out.finished, 4);
  EXPECT_EQ(out.not_run, 0);
  ASSERT_EQ(order.size(), 4u);
  EXPECT_EQ(order[0], "level1/3_p");
  EXPECT_EQ((std::vector<std::string>(order.begin() + 1, order.end())),
            (std::vector<std::string>{"level1/0_p", "level1/1_p", "level1/2_p"}));
}

TEST(WorkQueueTest, TakesPreferredItemsOutOfOrderAndCountsThem) {
  WorkQueue q(5, nullptr);
  std::lock_guard<std::mutex> lock(q.mutex());
  EXPECT_EQ(q.take_preferred_locked([](size_t i) { return i == 3; }), std::optional<size_t>(3));
  EXPECT_EQ(q.take_preferred_locked([](size_t i) { return i == 3; }), std::nullopt);  // taken already
  EXPECT_FALSE(q.done_locked());
  // Only the first `window` items not taken are looked at.
  EXPECT_EQ(q.take_preferred_locked([](size_t i) { return i == 4; }, 2), std::nullopt);
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(0));
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(1));
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(2));
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(4));  // 3 is skipped: taken out of order
  EXPECT_EQ(q.take_locked(), std::nullopt);
  EXPECT_TRUE(q.done_locked());
}

TEST(WorkQueueTest, PeeksAtWhatItWouldHandOutNext) {
  WorkQueue q(5, nullptr);
  std::lock_guard<std::mutex> lock(q.mutex());
  auto two = [](size_t i) { return i == 2; };
  using V = std::vector<size_t>;
  EXPECT_EQ(q.peek_locked(two, SIZE_MAX, 3), (V{2, 0, 1}));  // the preferred first, then in order
  EXPECT_EQ(q.peek_locked([](size_t) { return false; }, SIZE_MAX, 2), (V{0, 1}));
  EXPECT_EQ(q.take_preferred_locked(two), std::optional<size_t>(2));  // peeking took nothing
  EXPECT_EQ(q.peek_locked(two, SIZE_MAX, 9), (V{0, 1, 3, 4}));
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(0));
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(1));
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(3));
  EXPECT_EQ(q.take_locked(), std::optional<size_t>(4));
  EXPECT_TRUE(q.peek_locked(two, SIZE_MAX, 4).empty());
}

TEST(BenchBatch, EachJobHearsOfItsLikelyNextProblem) {
  struct Hints {
    std::mutex mu;
    std::vector<std::string> events;
  } hints;
  class Hinted : public ProblemJob {
   public:
    explicit Hinted(Hints* h) : h_(h) {}
    void expect(const std::vector<Problem>& next) override {
      std::lock_guard<std::mutex> lock(h_->mu);
      std::string e = "expect";
      for (const auto& p : next) e += " " + p.id;
      h_->events.push_back(e);
    }
    std::optional<report::ResultRecord> run(const Problem& p) override {
      {
        std::lock_guard<std::mutex> lock(h_->mu);
        h_->events.push_back("run " + p.id);
      }
      report::ResultRecord r;
      r.problem = p.id;
      r.status = "correct";
      return r;
    }

   private:
    Hints* h_;
  };
  auto ps = make_problems(3);
  std::atomic<bool> stop{false};
  auto out = run_batch(
      ps, BatchOptions{}, [&](int) { return std::make_unique<Hinted>(&hints); }, BatchEvents{}, stop);
  EXPECT_EQ(out.finished, 3);
  EXPECT_EQ(hints.events, (std::vector<std::string>{"expect " + ps[1].id + " " + ps[2].id, "run " + ps[0].id,
                                                    "expect " + ps[2].id, "run " + ps[1].id, "run " + ps[2].id}));
}

// bench --samples over two workers: a problem's samples go to the worker that ran the problem
// (judge/affinity.hpp), so each worker switches problems about once per problem it takes, not once
// per sample. The jobs say nothing of what they hold warm: the batch counts the last problem.
TEST(BenchBatch, AProblemsSamplesStayWithOneWorker) {
  constexpr int kProblems = 4, kSamples = 6;
  std::vector<Problem> items;
  for (int p = 0; p < kProblems; ++p)
    for (int s = 0; s < kSamples; ++s) {
      Problem item{"level1/" + std::to_string(p) + "_p", "level1", std::to_string(p) + "_p",
                   "/problems/level1/" + std::to_string(p) + "_p.py"};
      item.sample = "/samples/" + std::to_string(p) + "/" + std::to_string(s) + ".cu";
      items.push_back(item);
    }
  std::atomic<int> switches{0};
  class Switching : public ProblemJob {
   public:
    explicit Switching(std::atomic<int>& switches) : switches_(switches) {}
    std::optional<report::ResultRecord> run(const Problem& p) override {
      if (p.id != last_) {  // a problem switch costs a start
        ++switches_;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        last_ = p.id;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      report::ResultRecord r;
      r.problem = p.id;
      r.sample = p.sample.filename().string();
      r.status = "correct";
      return r;
    }

   private:
    std::atomic<int>& switches_;
    std::string last_;
  };
  BatchOptions o;
  o.gpus = {0, 1};
  std::mutex mu;
  std::multiset<std::string> seen;
  BatchEvents ev;
  ev.finished = [&](const report::ResultRecord& r) {
    std::lock_guard<std::mutex> lock(mu);
    seen.insert(r.problem + "/" + r.sample);
  };
  std::atomic<bool> stop{false};
  auto out = run_batch(
      items, o, [&](int) { return std::make_unique<Switching>(switches); }, ev, stop);
  EXPECT_EQ(out.finished, kProblems * kSamples);
  EXPECT_EQ(seen.size(), static_cast<size_t>(kProblems * kSamples));
  for (const auto& item : items) EXPECT_EQ(seen.count(item.id + "/" + item.sample.filename().string()), 1u);
  // Each problem once, and a few more where an idle worker took over part of a long backlog; in
  // arrival order the two workers would share every problem (8 switches or more).
  EXPECT_GE(switches.load(), kProblems);
  EXPECT_LE(switches.load(), kProblems + 3);
}

TEST(BenchBatch, RepeatedEnvironmentFailuresStopTheWorker) {
  class NoGpu : public ProblemJob {
    std::optional<report::ResultRecord> run(const Problem&) override { throw EnvError("no CUDA device"); }
  };
  auto ps = make_problems(10);
  std::vector<report::ResultRecord> recs;
  BatchEvents ev;
  ev.finished = [&](const report::ResultRecord& r) { recs.push_back(r); };
  std::atomic<bool> stop{false};
  BatchOptions o;
  o.max_env_failures_in_a_row = 3;
  auto out = run_batch(
      ps, o, [](int) { return std::make_unique<NoGpu>(); }, ev, stop);
  EXPECT_EQ(out.finished, 3);
  EXPECT_EQ(out.not_run, 7);
  EXPECT_EQ(out.workers_stopped, 1);
  EXPECT_NE(out.env_failure.find("no CUDA device"), std::string::npos);
  ASSERT_EQ(recs.size(), 3u);
  EXPECT_EQ(recs[0].status, "error");  // retried by --resume
  EXPECT_NE(recs[0].error.find("environment: no CUDA device"), std::string::npos);
}

// A busy GPU (another process held the memory an evaluation ran out of) is not a verdict: the
// problem is tried again, and only a GPU that stays busy leaves an environment error.
TEST(BenchBatch, ABusyGpuIsTriedAgainBeforeAnythingIsRecorded) {
  // The calls are counted outside the job: the batch drops a job after an environment error.
  class BusyTwice : public ProblemJob {
   public:
    BusyTwice(std::map<std::string, int>& calls, int busy_for) : calls_(calls), busy_for_(busy_for) {}
    std::optional<report::ResultRecord> run(const Problem& p) override {
      if (++calls_[p.id] <= busy_for_) throw GpuBusyError("GPU 0 ran out of memory while 1 other process held 60 GiB");
      report::ResultRecord r;
      r.problem = p.id;
      r.status = "correct";
      return r;
    }
    std::map<std::string, int>& calls_;
    int busy_for_;
  };
  auto ps = make_problems(1);
  for (int busy_for : {2, 3}) {
    std::vector<report::ResultRecord> recs;
    BatchEvents ev;
    ev.finished = [&](const report::ResultRecord& r) { recs.push_back(r); };
    std::atomic<bool> stop{false};
    BatchOptions o;
    o.busy_retries = 2;
    o.busy_wait_s = 0;
    std::map<std::string, int> calls;
    run_batch(
        ps, o, [&](int) { return std::make_unique<BusyTwice>(calls, busy_for); }, ev, stop);
    ASSERT_EQ(recs.size(), 1u);
    EXPECT_EQ(calls[ps[0].id], 3);  // the first try and two more
    if (busy_for == 2) {
      EXPECT_EQ(recs[0].status, "correct");  // the third try found the GPU free
    } else {
      EXPECT_EQ(recs[0].status, "error");  // still busy after the retries: --resume tries again
      EXPECT_NE(recs[0].error.find("environment: GPU 0 ran out of memory"), std::string::npos) << recs[0].error;
    }
  }
}

TEST(BenchBatch, AnInterruptLeavesTheRestUnrecorded) {
  auto ps = make_problems(20);
  std::atomic<bool> stop{false};
  int finished = 0;
  class Interrupted : public ProblemJob {
   public:
    explicit Interrupted(std::atomic<bool>& s) : stop_(s) {}
    std::optional<report::ResultRecord> run(const Problem& p) override {
      if (p.name == "4_p") {
        stop_.store(true);    // Ctrl-C arrives while problem 4 runs...
        return std::nullopt;  // ...which its job cuts short
      }
      report::ResultRecord r;
      r.problem = p.id;
      r.status = "unsolved";
      return r;
    }
    std::atomic<bool>& stop_;
  };
  BatchEvents ev;
  ev.finished = [&](const report::ResultRecord&) { ++finished; };
  auto out = run_batch(
      ps, {}, [&](int) { return std::make_unique<Interrupted>(stop); }, ev, stop);
  EXPECT_EQ(finished, 4);
  EXPECT_EQ(out.finished, 4);
  EXPECT_EQ(out.not_run, 16);  // problem 4 and the 15 never started
}

TEST(BenchBatch, EvaluationReportsBecomeRecords) {
  Problem p{"level1/19_ReLU", "level1", "19_ReLU", {}};
  EvalReport rep;
  rep.candidate = "c.cu";
  rep.compile.ok = false;
  rep.compile.log = "c.cu(3): error: expected a ';'\n";
  auto r = record_from_report(p, rep);
  EXPECT_EQ(r.status, "compile_error");
  EXPECT_EQ(r.score.tier, -1);
  EXPECT_NE(r.error.find("expected a ';'"), std::string::npos);

  rep.compile.ok = true;
  rep.ran = true;
  rep.outcome.correct = true;
  rep.outcome.candidate_time = TimingSummary{};
  rep.outcome.candidate_time->median_ms = 0.5;
  rep.baselines.eager_ms = 1.0;
  rep.baselines.compile_ms = 0.6;
  rep.reward = compute_reward(true, true, 0.5, rep.baselines);
  r = record_from_report(p, rep);
  EXPECT_EQ(r.status, "correct");
  EXPECT_EQ(r.score.tier, 3);
  EXPECT_DOUBLE_EQ(*r.score.speedup_vs_eager, 2.0);
  EXPECT_DOUBLE_EQ(*r.score.speedup_vs_compile, 1.2);
  EXPECT_DOUBLE_EQ(*r.score.candidate_ms, 0.5);
  EXPECT_DOUBLE_EQ(*r.score.eager_ms, 1.0);

  rep.outcome.correct = false;
  rep.outcome.failure_stage = FailureStage::timeout;
  rep.outcome.message = "no reply in 60 s during launch 1 (spin)";
  rep.reward = compute_reward(true, false, std::nullopt, rep.baselines);
  r = record_from_report(p, rep);
  EXPECT_EQ(r.status, "timeout");
  EXPECT_FALSE(r.score.speedup_vs_eager.has_value());
  EXPECT_NE(r.error.find("launch 1"), std::string::npos);
  rep.outcome.failure_stage = FailureStage::correctness;
  EXPECT_EQ(record_from_report(p, rep).status, "incorrect");
  rep.outcome.failure_stage = FailureStage::crash;
  EXPECT_EQ(record_from_report(p, rep).status, "crash");
}

// result.json holds the run's record whole (the best candidate's score, the best speedup by turn):
// no transcript is read.
TEST(BenchBatch, AgentRunsBecomeRecordsFromResultJsonAlone) {
  test::TempDir t;
  Problem p{"level1/19_ReLU", "level1", "19_ReLU", {}};
  agent::ResultFile file;
  file.stop_reason = "finish";
  file.evaluations = 4;
  file.wall_s = 12.5;
  file.precision = "fp32";
  file.tolerance = Tolerance{};
  agent::CandidateScore best;
  best.number = 3;
  best.score.tier = 2;
  best.score.speedup_vs_eager = 1.6;
  best.score.candidate_ms = 1.25;
  best.score.eager_ms = 2.0;
  best.score.compile_ms = 1.5;
  best.score.device = "NVIDIA H100 80GB HBM3";
  best.score.stop_rule = ">= 20 samples";
  best.score.precision = "fp32";
  best.score.tolerance = Tolerance{};
  file.best = best;
  file.best_by_turn = {{2, 0.8}, {3, 1.6}};
  t.write("run/result.json", nlohmann::json(file).dump());
  auto r = record_from_run(p, t / "run");
  EXPECT_FALSE(std::filesystem::exists(t / "run/transcript.jsonl"));
  EXPECT_EQ(r.status, "correct");
  EXPECT_EQ(r.score, best.score);
  EXPECT_DOUBLE_EQ(*r.wall_s, 12.5);
  EXPECT_EQ(r.best_by_turn, (BestByTurn{{2, 0.8}, {3, 1.6}}));
  EXPECT_EQ(r.run_dir, (t / "run").string());
  EXPECT_EQ(r.candidate, (t / "run/best.cu").string());

  file.best->score.tier = -1;
  file.stop_reason = "turn budget";
  t.write("run/result.json", nlohmann::json(file).dump());
  r = record_from_run(p, t / "run");
  EXPECT_EQ(r.status, "incorrect");
  EXPECT_EQ(r.score.precision, "fp32") << "what the run was judged under, without a correct candidate";
  file.best.reset();
  file.evaluations = 0;
  t.write("run/result.json", nlohmann::json(file).dump());
  r = record_from_run(p, t / "run");
  EXPECT_EQ(r.status, "unsolved");
  EXPECT_NE(r.error.find("turn budget"), std::string::npos);

  // A result.json nested past the bound is bad input naming the file.
  t.write("run/result.json", std::string(5000, '[') + std::string(5000, ']'));
  try {
    record_from_run(p, t / "run");
    FAIL() << "a result.json nested 5000 deep was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("result.json"), std::string::npos) << e.what();
  }
}

// A version-1 result.json (as kagent wrote it before the score was typed) still makes a record:
// the best's tier, speedups and time; what it did not keep (baselines, GPU, best by turn) is not
// recorded.
TEST(BenchBatch, AVersionOneResultJsonStillMakesARecord) {
  test::TempDir t;
  Problem p{"level1/19_ReLU", "level1", "19_ReLU", {}};
  std::filesystem::create_directories(t / "run");
  std::filesystem::copy_file(test::source_dir() / "tests/fixtures/records/result_v1.json", t / "run/result.json");
  auto r = record_from_run(p, t / "run");
  EXPECT_EQ(r.status, "correct");
  EXPECT_EQ(r.score.tier, 2);
  EXPECT_DOUBLE_EQ(*r.score.speedup_vs_eager, 1.6);
  EXPECT_DOUBLE_EQ(*r.score.speedup_vs_compile, 0.9);
  EXPECT_DOUBLE_EQ(*r.score.candidate_ms, 1.25);
  EXPECT_FALSE(r.score.eager_ms.has_value());
  EXPECT_EQ(r.score.precision, "fp32");
  EXPECT_EQ(r.score.tolerance, Tolerance{});
  EXPECT_TRUE(r.best_by_turn.empty());
  EXPECT_EQ(r.candidate, (t / "run/best.cu").string());
  EXPECT_DOUBLE_EQ(*r.wall_s, 42.5);
}

TEST(BenchBatch, ResultsWriterRepairsATornLineAndKeepsConcurrentLinesWhole) {
  test::TempDir t;
  auto path = t / "results.jsonl";
  t.write("results.jsonl", R"({"problem": "level1/1_a", "status": "unsolved"})"
                           "\n"
                           R"({"problem": "level1/2_b", "sta)");
  {
    report::ResultsWriter w(path);
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k)
      threads.emplace_back([&w, k] {
        for (int i = 0; i < 50; ++i) {
          report::ResultRecord r;
          r.problem = fmt::format("p{}_{}", k, i);  // not "p" + to_string(k): GCC 12 -O3 -Wrestrict
          r.status = "correct";
          r.error = std::string(2000, 'x');  // long lines: a torn or interleaved write would show
          w.append(r);
        }
      });
    for (auto& th : threads) th.join();
  }
  auto recs = report::read_results({path});
  EXPECT_EQ(recs.size(), 201u);  // the first record kept, the torn one dropped, 200 new
  std::ifstream in(path);
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_TRUE(nlohmann::json::accept(line)) << "line " << lines;
  }
  EXPECT_EQ(lines, 201);
}
