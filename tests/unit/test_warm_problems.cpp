// The problems a GPU worker keeps warm (eval/warm_problems.hpp), with hooks in place of reference
// servers: which problem is started, kept, let go and started ahead, without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kagent/eval/warm_problems.hpp"

namespace kagent {
namespace {

using namespace std::chrono_literals;

// What the hooks saw, and switches a test holds.
struct Log {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> events;  // "spawn P", "spawn-ahead P", "load P fp32", "idle P", "gone P"
  std::set<std::string> dead;       // problems whose server "died"
  std::set<std::string> fail;       // problems whose spawn throws
  bool hold_spawn = false;          // spawns wait until released
  uint64_t reserved = 0;            // what an idle server reports torch holds
  uint64_t measured_gpu = 0;        // what NVML "says" a server holds
  std::atomic<int> alive_entries{0};

  void add(const std::string& e) {
    std::lock_guard lock(mu);
    events.push_back(e);
    cv.notify_all();
  }
  bool saw(const std::string& e) {
    std::lock_guard lock(mu);
    for (const auto& x : events)
      if (x == e) return true;
    return false;
  }
  void release() {
    std::lock_guard lock(mu);
    hold_spawn = false;
    cv.notify_all();
  }
  bool wait_for(const std::string& e) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 10s, [&] {
      for (const auto& x : events)
        if (x == e) return true;
      return false;
    });
  }
};

std::string name_of(const WarmStart& s) {
  return s.op.reference.filename().string();
}

// An entry that counts itself, so a test sees entries let go.
struct CountedEntry : WarmEntry {
  Log* log;
  std::string name;
  CountedEntry(Log* l, std::string n) : log(l), name(std::move(n)) { ++log->alive_entries; }
  ~CountedEntry() {
    --log->alive_entries;
    log->add("gone " + name);
  }
};

WarmHooks hooks(Log& log) {
  WarmHooks h;
  h.spawn = [&log](const WarmStart& s) -> std::unique_ptr<WarmEntry> {
    const std::string p = name_of(s);
    {
      std::unique_lock lock(log.mu);
      log.cv.wait_for(lock, 10s, [&] { return !log.hold_spawn; });
      if (log.fail.count(p) != 0) throw std::runtime_error("python3 did not start for " + p);
    }
    log.add((s.ahead ? "spawn-ahead " : "spawn ") + p);
    return std::make_unique<CountedEntry>(&log, p);
  };
  h.load = [&log](WarmEntry& e, const WarmStart& s) {
    const std::string prec(precision_name(s.op.precision));
    if (e.loaded == prec) return;
    if (s.before_load) s.before_load();
    e.loaded = prec;
    e.ref.op = s.op;
    log.add("load " + name_of(s) + " " + prec);
  };
  h.idle = [&log](WarmEntry& e) {
    log.add("idle " + static_cast<CountedEntry&>(e).name);
    return log.reserved;
  };
  h.measure = [&log](pid_t) {
    std::lock_guard lock(log.mu);
    return std::pair<uint64_t, uint64_t>{log.measured_gpu, 0};
  };
  h.alive = [&log](WarmEntry& e) {
    std::lock_guard lock(log.mu);
    return log.dead.count(static_cast<CountedEntry&>(e).name) == 0;
  };
  return h;
}

WarmStart start(const std::string& problem, Precision p = Precision::fp32) {
  WarmStart s;
  s.op.name = problem;
  s.op.reference = "/problems/" + problem;
  s.op.precision = p;
  return s;
}

TEST(WarmProblems, KeepsProblemsAndSaysHowEachWasFound) {
  Log log;
  WarmProblems pool(0, {4, 0.5}, hooks(log));
  EXPECT_EQ(pool.use(start("a.py")).state, "started");
  EXPECT_EQ(pool.use(start("a.py")).state, "current");
  EXPECT_EQ(pool.use(start("b.py")).state, "started");
  EXPECT_TRUE(log.saw("idle a.py")) << "the one left goes idle: its trial tensors let go";
  EXPECT_EQ(pool.use(start("a.py")).state, "warm");
  EXPECT_EQ(log.alive_entries, 2);
  WarmStats st = pool.stats();
  EXPECT_EQ(st.warm, 2u);
  EXPECT_EQ(st.started, 2);
  EXPECT_EQ(st.evicted, 0);
  EXPECT_EQ(st.current, warm_key("/problems/a.py"));
  ASSERT_EQ(st.problems.size(), 2u);
  EXPECT_EQ(st.problems.back(), warm_key("/problems/a.py")) << "least recently used first";
}

TEST(WarmProblems, LetsTheLeastRecentlyUsedGoBeyondTheLimit) {
  Log log;
  WarmProblems pool(0, {2, 0.5}, hooks(log));
  pool.use(start("a.py"));
  pool.use(start("b.py"));
  pool.use(start("a.py"));
  pool.use(start("c.py"));  // b is the least recently used
  EXPECT_TRUE(log.saw("gone b.py"));
  EXPECT_FALSE(log.saw("gone a.py"));
  EXPECT_EQ(pool.stats().evicted, 1);
  EXPECT_EQ(pool.use(start("a.py")).state, "warm");
  EXPECT_EQ(pool.use(start("b.py")).state, "started");
}

TEST(WarmProblems, OneProblemAtATimeWithALimitOfOne) {
  Log log;
  WarmProblems pool(0, {1, 0.5}, hooks(log));
  pool.use(start("a.py"));
  EXPECT_FALSE(pool.start_ahead(start("b.py"))) << "no room: the current one is never let go";
  pool.use(start("b.py"));
  EXPECT_TRUE(log.saw("gone a.py"));
  EXPECT_EQ(log.alive_entries, 1);
}

TEST(WarmProblems, IdleProblemsStayWithinTheirShareOfGpuMemory) {
  Log log;
  log.reserved = uint64_t{3} << 30;  // 3 GiB torch holds, plus the context's estimate, per idle server
  WarmProblems pool(0, {16, 0.5}, hooks(log));
  pool.set_device("", uint64_t{16} << 30);  // 8 GiB for the idle ones: two of ~3.5 GiB
  pool.use(start("a.py"));
  pool.use(start("b.py"));
  pool.use(start("c.py"));
  EXPECT_FALSE(log.saw("gone a.py")) << "a and b idle: 7 GiB";
  pool.use(start("d.py"));  // a, b, c idle: 10.5 GiB
  EXPECT_TRUE(log.saw("gone a.py"));
  EXPECT_FALSE(log.saw("gone b.py"));
  EXPECT_EQ(pool.stats().warm, 3u);
}

TEST(WarmProblems, WhatAnIdleProblemHoldsIsMeasuredOffTheSwitchAndBoundsTheRest) {
  Log log;
  {
    std::lock_guard lock(log.mu);
    log.measured_gpu = uint64_t{6} << 30;  // NVML's figure for each server, above torch's reserve
  }
  WarmProblems pool(0, {16, 0.5}, hooks(log));
  pool.set_device("", uint64_t{16} << 30);  // 8 GiB for the idle ones: one of 6 GiB
  pool.use(start("a.py"));
  pool.use(start("b.py"));
  pool.use(start("c.py"));  // a and b idle, measured on a helper thread: 12 GiB, so a goes
  EXPECT_TRUE(log.wait_for("gone a.py"));
  EXPECT_FALSE(log.saw("gone b.py"));
}

TEST(WarmProblems, StartsAheadOnAHelperThreadAndTheTurnTakesIt) {
  Log log;
  WarmProblems pool(0, {4, 0.5}, hooks(log));
  pool.use(start("a.py"));
  {
    std::lock_guard lock(log.mu);
    log.hold_spawn = true;
  }
  ASSERT_TRUE(pool.start_ahead(start("b.py")));
  EXPECT_FALSE(pool.start_ahead(start("b.py"))) << "under way already";
  EXPECT_TRUE(pool.holds(warm_key("/problems/b.py")));
  EXPECT_EQ(pool.stats().starting, 1u);
  std::thread release([&] {
    std::this_thread::sleep_for(50ms);
    log.release();
  });
  WarmProblems::Use u = pool.use(start("b.py"));  // waits for the start under way
  release.join();
  EXPECT_EQ(u.state, "started_ahead");
  EXPECT_GT(u.waited_s, 0.0);
  EXPECT_TRUE(log.saw("spawn-ahead b.py"));
  EXPECT_FALSE(log.saw("spawn b.py"));
  EXPECT_EQ(pool.stats().started_ahead, 1);
  EXPECT_EQ(pool.use(start("b.py")).state, "current");
}

TEST(WarmProblems, AStartAheadDoesNotRunTheWorkersSteps) {
  Log log;
  WarmProblems pool(0, {4, 0.5}, hooks(log));
  bool released = false;
  WarmStart s = start("b.py");
  s.before_load = [&] { released = true; };  // the runner's release: the worker's thread's alone
  ASSERT_TRUE(pool.start_ahead(s));
  ASSERT_TRUE(log.wait_for("load b.py fp32"));
  EXPECT_FALSE(released);
}

TEST(WarmProblems, AFailedStartAheadIsDoneAgainInTurn) {
  Log log;
  WarmProblems pool(0, {4, 0.5}, hooks(log));
  {
    std::lock_guard lock(log.mu);
    log.fail.insert("b.py");
  }
  ASSERT_TRUE(pool.start_ahead(start("b.py")));
  for (int i = 0; i < 200 && pool.holds(warm_key("/problems/b.py")); ++i) std::this_thread::sleep_for(10ms);
  {
    std::lock_guard lock(log.mu);
    log.fail.clear();
  }
  EXPECT_EQ(pool.use(start("b.py")).state, "started");
  EXPECT_TRUE(log.saw("spawn b.py"));
}

TEST(WarmProblems, AfterAFailedSwitchTheOneLeftIsIdleAndCanBeLetGo) {
  // b does not fit beside a (its load runs out of GPU memory): the evaluator lets the idle problems
  // go and tries again, so a must be idle by then, not current.
  Log log;
  WarmProblems pool(0, {4, 0.95}, hooks(log));
  pool.use(start("a.py"));
  {
    std::lock_guard lock(log.mu);
    log.fail.insert("b.py");
  }
  EXPECT_THROW(pool.use(start("b.py")), std::runtime_error);
  EXPECT_TRUE(log.saw("idle a.py"));
  EXPECT_EQ(pool.evict_idle(), 1u);
  {
    std::lock_guard lock(log.mu);
    log.fail.clear();
  }
  EXPECT_EQ(pool.use(start("b.py")).state, "started");
  EXPECT_EQ(log.alive_entries, 1);
}

TEST(WarmProblems, AnErrorInTurnKeepsNothing) {
  Log log;
  WarmProblems pool(0, {4, 0.5}, hooks(log));
  {
    std::lock_guard lock(log.mu);
    log.fail.insert("b.py");
  }
  EXPECT_THROW(pool.use(start("b.py")), std::runtime_error);
  EXPECT_FALSE(pool.holds(warm_key("/problems/b.py")));
}

TEST(WarmProblems, AStartAheadMakesRoomButSparesOneNotYetUsed) {
  Log log;
  WarmProblems pool(0, {3, 0.5}, hooks(log));
  pool.use(start("a.py"));
  pool.use(start("b.py"));  // a idle, b current
  ASSERT_TRUE(pool.start_ahead(start("c.py")));
  ASSERT_TRUE(log.wait_for("load c.py fp32"));
  for (int i = 0; i < 200 && pool.stats().starting > 0; ++i) std::this_thread::sleep_for(10ms);
  // Full: a start ahead lets a (idle, used) go, but not c (started ahead, not yet used).
  ASSERT_TRUE(pool.start_ahead(start("d.py")));
  EXPECT_TRUE(log.wait_for("gone a.py"));
  EXPECT_FALSE(pool.start_ahead(start("e.py"))) << "b current, c and d not yet used: no room";
  EXPECT_EQ(pool.use(start("c.py")).state, "started_ahead");
}

TEST(WarmProblems, AProblemAnnouncedAgainCountsAsUsed) {
  Log log;
  WarmProblems pool(0, {3, 0.5}, hooks(log));
  pool.use(start("a.py"));
  pool.use(start("b.py"));
  pool.use(start("c.py"));  // a is the least recently used
  EXPECT_FALSE(pool.start_ahead(start("a.py"))) << "warm: nothing to start, but announced";
  pool.use(start("d.py"));  // b goes, not a
  EXPECT_TRUE(log.saw("gone b.py"));
  EXPECT_FALSE(log.saw("gone a.py"));
}

TEST(WarmProblems, EvictIdleKeepsTheCurrentOne) {
  Log log;
  WarmProblems pool(0, {8, 0.5}, hooks(log));
  pool.use(start("a.py"));
  pool.use(start("b.py"));
  pool.use(start("c.py"));
  EXPECT_EQ(pool.evict_idle(), 2u);
  EXPECT_EQ(pool.use(start("c.py")).state, "current");
  EXPECT_EQ(log.alive_entries, 1);
  pool.drop_current();
  EXPECT_EQ(log.alive_entries, 0);
  EXPECT_EQ(pool.use(start("c.py")).state, "started");
}

TEST(WarmProblems, AServerThatDiedIsStartedAgain) {
  Log log;
  WarmProblems pool(0, {8, 0.5}, hooks(log));
  pool.use(start("a.py"));
  pool.use(start("b.py"));
  {
    std::lock_guard lock(log.mu);
    log.dead.insert("a.py");
  }
  EXPECT_EQ(pool.use(start("a.py")).state, "started");
}

TEST(WarmProblems, AnotherPrecisionLoadsAgainInTheSameServer) {
  Log log;
  WarmProblems pool(0, {8, 0.5}, hooks(log));
  pool.use(start("a.py"));
  WarmProblems::Use u = pool.use(start("a.py", Precision::bf16));
  EXPECT_EQ(u.state, "current");
  EXPECT_EQ(u.entry->loaded, "bf16");
  EXPECT_TRUE(log.saw("load a.py bf16"));
  EXPECT_EQ(pool.stats().started, 1);
}

TEST(WarmProblems, ClosingWaitsForStartsUnderWayAndLetsEverythingGo) {
  Log log;
  std::thread release;
  {
    WarmProblems pool(0, {8, 0.5}, hooks(log));
    pool.use(start("a.py"));
    {
      std::lock_guard lock(log.mu);
      log.hold_spawn = true;
    }
    pool.start_ahead(start("b.py"));
    release = std::thread([&] {
      std::this_thread::sleep_for(50ms);
      log.release();
    });
  }  // waits for b's start, then lets a and b go
  release.join();
  EXPECT_EQ(log.alive_entries, 0);
}

// hooks(log) with spares: "spare" when one is started, "adopt P" when a start takes one.
WarmHooks hooks_with_spares(Log& log) {
  WarmHooks h = hooks(log);
  h.spare = [&log](const std::filesystem::path&) -> std::unique_ptr<WarmEntry> {
    bool fail = false;
    {
      std::lock_guard lock(log.mu);
      fail = log.fail.count("spare") != 0;
    }
    if (fail) {
      log.add("spare failed");
      throw std::runtime_error("python3 did not start");
    }
    log.add("spare");
    return std::make_unique<CountedEntry>(&log, "spare");
  };
  h.adopt = [&log](WarmEntry& e, const WarmStart& s) {
    static_cast<CountedEntry&>(e).name = name_of(s);
    log.add("adopt " + name_of(s));
  };
  return h;
}

size_t count_of(Log& log, const std::string& e) {
  std::lock_guard lock(log.mu);
  return static_cast<size_t>(std::count(log.events.begin(), log.events.end(), e));
}

// Waits until `n` events `e` were seen.
bool wait_count(Log& log, const std::string& e, size_t n) {
  std::unique_lock lock(log.mu);
  return log.cv.wait_for(lock, 10s, [&] { return std::count(log.events.begin(), log.events.end(), e) >= long(n); });
}

// Two problems used (a mix), then the spare they start ready in the pool.
bool mix_with_a_spare_ready(WarmProblems& pool, Log& log) {
  pool.use(start("a.py"));
  pool.use(start("b.py"));
  if (!wait_count(log, "spare", 1)) return false;
  for (int i = 0; i < 1000 && pool.stats().spares == 0; ++i) std::this_thread::sleep_for(10ms);
  return pool.stats().spares == 1;
}

TEST(WarmProblems, ASecondProblemStartsASpareAndTheNextNewProblemTakesIt) {
  Log log;
  WarmProblems pool(0, {8, 0.5, 1}, hooks_with_spares(log));
  pool.use(start("a.py"));
  EXPECT_EQ(pool.stats().spares, 0u) << "one problem: no mix yet";
  ASSERT_TRUE(mix_with_a_spare_ready(pool, log));  // a second problem: a mix
  EXPECT_EQ(pool.use(start("c.py")).state, "started");
  EXPECT_TRUE(log.saw("adopt c.py"));
  EXPECT_FALSE(log.saw("spawn c.py")) << "the spare's server serves c.py";
  EXPECT_TRUE(log.saw("load c.py fp32"));
  EXPECT_EQ(pool.stats().spares_used, 1);
  ASSERT_TRUE(wait_count(log, "spare", 2)) << "the spare taken is replaced";
  EXPECT_EQ(pool.use(start("b.py")).state, "warm") << "a problem seen before takes no spare";
  std::this_thread::sleep_for(50ms);
  EXPECT_EQ(count_of(log, "spare"), 2u);
}

TEST(WarmProblems, OneProblemNeverStartsASpare) {
  Log log;
  WarmProblems pool(0, {8, 0.5, 1}, hooks_with_spares(log));
  for (int i = 0; i < 3; ++i) pool.use(start("a.py"));
  pool.start_ahead(start("a.py"));
  std::this_thread::sleep_for(100ms);  // a spare queued would have started on an idle helper thread
  EXPECT_FALSE(log.saw("spare"));
  EXPECT_EQ(pool.stats().spares, 0u);
}

TEST(WarmProblems, AStartAheadTakesASpare) {
  Log log;
  WarmProblems pool(0, {8, 0.5, 1}, hooks_with_spares(log));
  ASSERT_TRUE(mix_with_a_spare_ready(pool, log));
  ASSERT_TRUE(pool.start_ahead(start("c.py")));
  ASSERT_TRUE(log.wait_for("load c.py fp32"));
  EXPECT_TRUE(log.saw("adopt c.py"));
  EXPECT_FALSE(log.saw("spawn-ahead c.py"));
  EXPECT_EQ(pool.use(start("c.py")).state, "started_ahead");
}

TEST(WarmProblems, ASpareThatDiedIsPassedOverAndNoSparesMeansNone) {
  Log log;
  WarmProblems pool(0, {8, 0.5, 1}, hooks_with_spares(log));
  ASSERT_TRUE(mix_with_a_spare_ready(pool, log));
  {
    std::lock_guard lock(log.mu);
    log.dead.insert("spare");
  }
  EXPECT_EQ(pool.use(start("c.py")).state, "started");
  EXPECT_TRUE(log.saw("spawn c.py"));
  EXPECT_FALSE(log.saw("adopt c.py"));

  Log none;
  WarmProblems without(0, {8, 0.5, 0}, hooks_with_spares(none));
  without.use(start("a.py"));
  without.use(start("b.py"));
  without.use(start("c.py"));
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(none.saw("spare"));
}

TEST(WarmProblems, SparesThatCannotStartAreGivenUpAfterThree) {
  Log log;
  {
    std::lock_guard lock(log.mu);
    log.fail.insert("spare");
  }
  WarmProblems pool(0, {8, 0.5, 1}, hooks_with_spares(log));
  for (const char* p : {"a.py", "b.py", "c.py", "d.py", "e.py", "f.py"}) {
    EXPECT_EQ(pool.use(start(p)).state, "started") << p;
    std::this_thread::sleep_for(20ms);
  }
  EXPECT_TRUE(log.saw("spawn f.py"));
  EXPECT_EQ(count_of(log, "spare failed"), 3u) << "tried after b, c and d; then no more";
}

TEST(WarmProblems, EvictIdleLetsTheSparesGo) {
  Log log;
  WarmProblems pool(0, {8, 0.5, 1}, hooks_with_spares(log));
  ASSERT_TRUE(mix_with_a_spare_ready(pool, log));
  EXPECT_EQ(pool.evict_idle(), 1u);
  EXPECT_TRUE(log.saw("gone spare"));
  EXPECT_EQ(pool.stats().spares, 0u);
}

}  // namespace
}  // namespace kagent
