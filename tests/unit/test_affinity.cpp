// The workers' scheduling policy (judge/affinity.hpp) on its own: a worker takes requests of its
// warm problems first, then a problem nobody owns (and owns it), takes a problem warm elsewhere
// only when its owners' queued work is worth a cold start, passes no request over more than
// max_bypass times, and announces what it will likely take next.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "kagent/judge/affinity.hpp"

using namespace kagent::judge;

namespace {

// "/problems/A.py" (built by appending: GCC 12 warns falsely on `"..." + std::string`).
std::string key(char problem) {
  std::string k = "/problems/";
  k.push_back(problem);
  k.append(".py");
  return k;
}

std::string numbered(unsigned n) {
  std::string k = "p";
  k.append(std::to_string(n));
  return k;
}

// A queue written as problem letters, "BAAC": request i has id i and problem letter s[i].
class Queue {
 public:
  explicit Queue(AffinityPolicy& policy) : policy_(policy) {}
  std::vector<QueuedRequest> of(const std::string& problems, const std::string& building = "") {
    std::vector<QueuedRequest> q;
    for (size_t i = 0; i < problems.size(); ++i)
      q.push_back({next_id_ + i, id(problems[i]), building.size() <= i || building[i] != 'b'});
    next_id_ += problems.size();
    return q;
  }
  ProblemId id(char problem) { return policy_.problem_id(key(problem)); }
  WarmState warm(const std::string& problems) {
    WarmState s;
    for (char p : problems) s.problems.push_back(key(p));
    return s;
  }

 private:
  AffinityPolicy& policy_;
  uint64_t next_id_ = 0;
};

}  // namespace

TEST(Affinity, AWorkerTakesItsWarmProblemFirst) {
  AffinityPolicy policy(2);
  Queue q(policy);
  policy.set_warm(0, q.warm("A"));
  const Pick p = policy.pick(0, q.of("BBAB"));
  ASSERT_TRUE(p.index);
  EXPECT_EQ(*p.index, 2u);
  EXPECT_EQ(p.rule, PickRule::warm);
  EXPECT_TRUE(p.warm);
}

TEST(Affinity, ThenAProblemNoOtherWorkerOwns) {
  AffinityPolicy policy(2);
  Queue q(policy);
  policy.set_warm(1, q.warm("B"));
  const Pick p = policy.pick(0, q.of("BBCB"));
  ASSERT_TRUE(p.index);
  EXPECT_EQ(*p.index, 2u);  // B is warm on worker 1
  EXPECT_EQ(p.rule, PickRule::cold);
  EXPECT_FALSE(p.warm);
  EXPECT_TRUE(policy.owns(0, q.id('C')));  // taken: worker 0 evaluates it now
}

TEST(Affinity, TwoWorkersNeverBothStartOneProblemCold) {
  AffinityPolicy policy(2);
  Queue q(policy);
  // Nothing warm anywhere: the first takes C; the second passes the other C's for D.
  auto queue = q.of("CCD");
  const Pick first = policy.pick(0, queue);
  ASSERT_EQ(first.index, std::optional<size_t>(0));
  queue.erase(queue.begin());
  const Pick second = policy.pick(1, queue);
  ASSERT_TRUE(second.index);
  EXPECT_EQ(*second.index, 1u);
  EXPECT_EQ(second.rule, PickRule::cold);
  // Announced problems are owned too: worker 0 announces E, so worker 1 does not start it.
  AffinityPolicy p2(2);
  Queue q2(p2);
  auto rest = q2.of("AEE");
  ASSERT_EQ(p2.pick(0, rest).index, std::optional<size_t>(0));
  rest.erase(rest.begin());
  p2.likely_next(0, rest);
  EXPECT_TRUE(p2.owns(0, q2.id('E')));
  const Pick other = p2.pick(1, rest);
  EXPECT_FALSE(other.index);  // two E's (2 s of work at the default 1 s) are not worth an 8 s start
  EXPECT_TRUE(other.any_ready);
}

TEST(Affinity, StealsOnlyWhenTheOwnersBacklogIsWorthAColdStart) {
  AffinityPolicy policy(2);  // defaults: 1 s per evaluation, 8 s per cold start
  Queue q(policy);
  policy.set_warm(0, q.warm("A"));
  const Pick wait = policy.pick(1, q.of("AAAAAAAA"));  // 8 s of work queued for worker 0
  EXPECT_FALSE(wait.index);
  EXPECT_TRUE(wait.any_ready);
  const Pick steal = policy.pick(1, q.of("AAAAAAAAA"));  // 9 s: more than a start
  ASSERT_TRUE(steal.index);
  EXPECT_EQ(*steal.index, 0u);
  EXPECT_EQ(steal.rule, PickRule::steal);

  // Measured: 2 s warm, a start costs 10 s beyond it. Now 5 queued (10 s) wait; 6 are stolen.
  AffinityPolicy measured(2);
  Queue m(measured);
  measured.evaluated(2.0, true);
  measured.evaluated(12.0, false);
  EXPECT_DOUBLE_EQ(measured.mean_eval_s(), 2.0);
  EXPECT_DOUBLE_EQ(measured.cold_start_s(), 10.0);
  measured.set_warm(0, m.warm("A"));
  EXPECT_FALSE(measured.pick(1, m.of("AAAAA")).index);
  EXPECT_EQ(measured.pick(1, m.of("AAAAAA")).rule, PickRule::steal);
  // Two owners share the work: 6 requests over 2 owners is 6 s each, not worth it.
  AffinityPolicy three(3);
  Queue t(three);
  three.evaluated(2.0, true);
  three.evaluated(12.0, false);
  three.set_warm(0, t.warm("A"));
  three.set_warm(1, t.warm("A"));
  EXPECT_FALSE(three.pick(2, t.of("AAAAAA")).index);
  EXPECT_EQ(three.pick(2, t.of("AAAAAAAAAAA")).rule, PickRule::steal);  // 11 s each
}

TEST(Affinity, OneWorkerNeverWaitsWhileARequestIsReady) {
  AffinityPolicy policy(1);
  Queue q(policy);
  policy.set_warm(0, q.warm("A"));
  EXPECT_EQ(policy.pick(0, q.of("BC")).index, std::optional<size_t>(0));
  // A request still building is neither taken nor passed over.
  const Pick building = policy.pick(0, q.of("AB", "b."));
  EXPECT_EQ(building.index, std::optional<size_t>(1));
  const Pick none = policy.pick(0, q.of("A", "b"));
  EXPECT_FALSE(none.index);
  EXPECT_FALSE(none.any_ready);
}

TEST(Affinity, AgingTakesARequestPassedOverMaxBypassTimes) {
  AffinityOptions o;
  o.max_bypass = 3;
  AffinityPolicy policy(1, o);
  Queue q(policy);
  policy.set_warm(0, q.warm("A"));
  auto queue = q.of("BAAAAA");
  const uint64_t b = queue[0].id;
  std::vector<PickRule> rules;
  for (int i = 0; i < 5; ++i) {
    const Pick p = policy.pick(0, queue);
    ASSERT_TRUE(p.index);
    rules.push_back(p.rule);
    if (queue[*p.index].id == b) {
      EXPECT_EQ(policy.bypassed(b), 0);  // forgotten once taken
    }
    queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(*p.index));
    if (!queue.empty() && queue[0].id == b) {
      EXPECT_LE(policy.bypassed(b), 3);
    }
  }
  EXPECT_EQ(rules,
            (std::vector<PickRule>{PickRule::warm, PickRule::warm, PickRule::warm, PickRule::aged, PickRule::warm}));
}

// Random queues, arrivals and warm sets over three workers: no request is ever passed over more
// than max_bypass times, and every request is taken.
TEST(Affinity, TheBypassBoundHoldsUnderLoad) {
  AffinityOptions o;
  o.max_bypass = 7;
  o.window = 40;
  AffinityPolicy policy(3, o);
  std::mt19937 rng(7);
  std::vector<QueuedRequest> queue;
  uint64_t next_id = 0;
  long max_seen = 0;
  size_t taken = 0;
  std::vector<int> ages(3, 0);
  for (int step = 0; step < 4000; ++step) {
    if (next_id < 1500 && rng() % 3 != 0)
      queue.push_back({next_id++, policy.problem_id(numbered(rng() % 9)), rng() % 5 != 0});
    for (auto& r : queue)
      if (!r.ready && rng() % 4 == 0) r.ready = true;
    const size_t w = step % 3;
    const Pick p = policy.pick(w, queue);
    if (p.index) {
      queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(*p.index));
      ++taken;
      policy.evaluated(p.warm ? 1.0 : 9.0, p.warm);
      WarmState s;
      s.current = numbered(rng() % 9);  // a backend that kept something else
      if (++ages[w] % 50 == 0)
        policy.forget(w);
      else
        policy.set_warm(w, s);
      policy.likely_next(w, queue);
    }
    for (const auto& r : queue) max_seen = std::max(max_seen, policy.bypassed(r.id));
    ASSERT_LE(max_seen, o.max_bypass);
  }
  for (auto& r : queue) r.ready = true;
  for (int guard = 0; !queue.empty() && guard < 100000; ++guard) {
    const Pick p = policy.pick(static_cast<size_t>(guard) % 3, queue);
    if (p.index) {
      queue.erase(queue.begin() + static_cast<std::ptrdiff_t>(*p.index));
      ++taken;
    } else {
      policy.forget(static_cast<size_t>(guard) % 3);  // a worker that ends lets go of its problems
    }
  }
  EXPECT_EQ(taken, next_id);
  EXPECT_EQ(max_seen, o.max_bypass);  // the bound was reached for real, not vacuously
}

TEST(Affinity, LikelyNextIsTheOrderThenTheNextProblemsToStart) {
  AffinityPolicy policy(2);
  Queue q(policy);
  policy.set_warm(1, q.warm("D"));
  auto queue = q.of("ABACABD");
  ASSERT_EQ(policy.pick(0, queue).index, std::optional<size_t>(0));  // A: cold, now worker 0's
  queue.erase(queue.begin());
  // Left: B A C A B D. Worker 0 would take A, A (warm), then B, B (its next problem), then C; D is
  // worker 1's. It announces the next two problems after A: B (already among the four) and C.
  const std::vector<size_t> next = policy.likely_next(0, queue);
  EXPECT_EQ(next, (std::vector<size_t>{1, 3, 0, 4, 2}));
  EXPECT_TRUE(policy.owns(0, q.id('B')));
  EXPECT_TRUE(policy.owns(0, q.id('C')));
  EXPECT_FALSE(policy.owns(0, q.id('D')));
  // Worker 1 now leaves B and C to worker 0: one request each is not worth a start.
  EXPECT_FALSE(policy.pick(1, q.of("BC")).index);
}

TEST(Affinity, AnnouncingCountsWarmProblemsWithWorkAhead) {
  AffinityPolicy policy(1);
  Queue q(policy);
  policy.set_warm(0, q.warm("E"));
  auto queue = q.of("AEBC");
  ASSERT_EQ(policy.pick(0, queue).index, std::optional<size_t>(1));  // E: warm
  queue.erase(queue.begin() + 1);
  policy.set_warm(0, q.warm("E"));
  // Left: A B C, E current. The next two problems are A and B; C waits for its turn, unnamed (a
  // backend would start the problem of any request it hears of).
  EXPECT_EQ(policy.likely_next(0, queue), (std::vector<size_t>{0, 1}));
  EXPECT_TRUE(policy.owns(0, q.id('A')));
  EXPECT_TRUE(policy.owns(0, q.id('B')));
  EXPECT_FALSE(policy.owns(0, q.id('C')));
  // With a warm problem queued (F), it takes one of the two places.
  AffinityPolicy p2(1);
  Queue q2(p2);
  p2.set_warm(0, q2.warm("EF"));
  auto rest = q2.of("EABF");
  ASSERT_EQ(p2.pick(0, rest).index, std::optional<size_t>(0));
  rest.erase(rest.begin());
  EXPECT_EQ(p2.likely_next(0, rest), (std::vector<size_t>{2, 0}));  // F, then A; B not yet
  EXPECT_TRUE(p2.owns(0, q2.id('A')));
  EXPECT_FALSE(p2.owns(0, q2.id('B')));
}

TEST(Affinity, AWorkerThatLetsGoOwnsNothing) {
  AffinityPolicy policy(2);
  Queue q(policy);
  policy.set_warm(0, q.warm("A"));
  EXPECT_FALSE(policy.pick(1, q.of("A")).index);
  policy.forget(0);
  const Pick p = policy.pick(1, q.of("A"));
  EXPECT_EQ(p.index, std::optional<size_t>(0));
  EXPECT_EQ(p.rule, PickRule::cold);
}

TEST(Affinity, ColdStartsAreMeasuredAgainstTheWarmMean) {
  AffinityPolicy policy(1);
  EXPECT_DOUBLE_EQ(policy.mean_eval_s(), 1.0);
  EXPECT_DOUBLE_EQ(policy.cold_start_s(), 8.0);
  policy.evaluated(30.0, false);  // nothing warm measured yet: the start's cost is unknown
  EXPECT_DOUBLE_EQ(policy.cold_start_s(), 8.0);
  EXPECT_DOUBLE_EQ(policy.mean_eval_s(), 30.0);  // every evaluation so far, while none was warm
  policy.evaluated(1.0, true);
  policy.evaluated(3.0, true);
  EXPECT_DOUBLE_EQ(policy.mean_eval_s(), 2.0);
  policy.evaluated(6.0, false);
  EXPECT_DOUBLE_EQ(policy.cold_start_s(), 4.0);
  policy.evaluated(1.0, false);  // faster than warm: a start cost nothing, not less
  EXPECT_DOUBLE_EQ(policy.cold_start_s(), 2.0);
}
