// The service's queue with the affinity policy (judge/affinity.hpp) against a backend whose problem
// switches cost time (warm_fake_backend.hpp): a batch that mixes problems in any order starts about
// as many problems as one sorted by problem, every answer comes back in the batch's order, and the
// queue reports the batch's progress and each GPU's warm problems.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "kagent/serve/eval_queue.hpp"
#include "warm_fake_backend.hpp"

using namespace kagent;
using namespace std::chrono_literals;

namespace {

constexpr int kProblems = 12, kPerProblem = 8;

judge::CandidateRequest request(int problem, int sample) {
  judge::CandidateRequest r;
  r.name = "p" + std::to_string(problem) + "_s" + std::to_string(sample);
  r.source = "tier 1";
  r.problem = "/problems/p" + std::to_string(problem) + "/op.json";
  return r;
}

struct Outcome {
  int starts = 0, in_turn = 0;
  long warm_answers = 0;
};

// One batch through a fresh queue of two workers, each backend keeping four problems warm.
Outcome run(const std::vector<judge::CandidateRequest>& batch) {
  test::WarmFakeStats stats;
  serve::Metrics metrics({0, 1});
  serve::EvalQueue::Options o;
  o.gpus = {0, 1};
  serve::EvalQueue queue(o, test::warm_fake_backends(&stats, 4), &metrics);
  auto answers = queue.submit(batch);
  EXPECT_TRUE(answers.has_value());
  Outcome out;
  if (!answers) return out;
  for (size_t i = 0; i < batch.size(); ++i) {
    auto& f = (*answers)[i];
    EXPECT_EQ(f.wait_for(30s), std::future_status::ready);
    const serve::Answer a = f.get();
    EXPECT_EQ(a.status, 200) << a.body;
    EXPECT_EQ(a.body.value("candidate", ""), batch[i].name);  // in the batch's order
    const auto& s = a.body["serve"];
    EXPECT_TRUE(s["gpu"] == 0 || s["gpu"] == 1) << s;
    EXPECT_GE(s["queued_s"].get<double>(), 0.0);
    EXPECT_GT(s["evaluated_s"].get<double>(), 0.0);
    out.warm_answers += s["problem"] == "warm" ? 1 : 0;
  }
  const serve::QueueState state = queue.state();
  EXPECT_EQ(state.batches, 0u);  // wholly answered
  EXPECT_EQ(state.batch_done, 0u);
  EXPECT_EQ(state.depth, 0u);
  EXPECT_EQ(state.bytes, 0u);
  EXPECT_EQ(state.warm_limit, 4u);  // the backends' own word
  long started = 0;
  for (const auto& g : state.gpus) started += g.started_ahead + g.started_in_turn;
  queue.stop();
  std::lock_guard<std::mutex> lock(stats.mu);
  EXPECT_EQ(stats.evaluations, kProblems * kPerProblem);
  EXPECT_EQ(started, stats.in_turn + stats.ahead);
  out.starts = stats.in_turn + stats.ahead;
  out.in_turn = stats.in_turn;
  return out;
}

}  // namespace

TEST(AffinityQueue, AShuffledBatchStartsAboutAsFewProblemsAsASortedOne) {
  std::vector<judge::CandidateRequest> sorted;
  for (int p = 0; p < kProblems; ++p)
    for (int s = 0; s < kPerProblem; ++s) sorted.push_back(request(p, s));
  std::vector<judge::CandidateRequest> shuffled = sorted;
  std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937(20240611));

  const Outcome in_order = run(sorted);
  const Outcome mixed = run(shuffled);
  // Every problem starts once somewhere; a few more where an idle worker took over part of a long
  // backlog. Taken in arrival order, a shuffled batch on backends of four warm problems would start
  // one for most of its 96 requests.
  EXPECT_GE(in_order.starts, kProblems);
  EXPECT_LE(in_order.starts, 2 * kProblems);
  EXPECT_LE(mixed.starts, in_order.starts + 4) << "sorted: " << in_order.starts << ", shuffled: " << mixed.starts;
  EXPECT_GE(mixed.warm_answers, kProblems * kPerProblem - 2 * kProblems);
}

// While a batch is in flight, the queue says how far it is.
TEST(AffinityQueue, TheQueueReportsABatchInFlight) {
  test::WarmFakeStats stats;
  serve::Metrics metrics({0});
  serve::EvalQueue::Options o;
  serve::EvalQueue queue(o, test::warm_fake_backends(&stats, 2, 1ms, 150ms), &metrics);
  std::vector<judge::CandidateRequest> batch = {request(0, 0), request(0, 1), request(1, 0)};
  auto answers = queue.submit(batch);
  ASSERT_TRUE(answers.has_value());
  // The first evaluation starts its problem (150 ms): the batch is in flight meanwhile.
  serve::QueueState s = queue.state();
  for (int i = 0; i < 200 && s.batch_running == 0; ++i) {
    std::this_thread::sleep_for(1ms);
    s = queue.state();
  }
  EXPECT_EQ(s.batches, 1u);
  EXPECT_EQ(s.batch_running, 1u);
  EXPECT_EQ(s.batch_queued + s.batch_done, 2u);
  for (auto& f : *answers) ASSERT_EQ(f.wait_for(30s), std::future_status::ready);
  s = queue.state();
  EXPECT_EQ(s.batches, 0u);
  EXPECT_EQ(s.batch_queued + s.batch_running + s.batch_done, 0u);
  ASSERT_EQ(s.gpus.size(), 1u);
  EXPECT_GE(s.gpus[0].problems, 1u);
  EXPECT_EQ(s.gpus[0].started_ahead + s.gpus[0].started_in_turn, 2);
  const std::string text = metrics.render(s, true);
  for (const char* line :
       {"kagent_batches_in_flight 0\n", "kagent_warm_problems_limit 2\n",
        "kagent_problem_evictions_total{gpu=\"0\"} 0\n", "kagent_batch_requests{state=\"done\"} 0\n"})
    EXPECT_NE(text.find(line), std::string::npos) << line << "\n" << text;
  queue.stop();
}

// The queue is bounded in bytes of sources too: a batch that would pass it is refused whole.
TEST(AffinityQueue, TheQueueRefusesPastItsBytes) {
  test::WarmFakeStats stats;
  serve::Metrics metrics({0});
  serve::EvalQueue::Options o;
  o.capacity_bytes = 10;  // "tier 1" is 6 bytes
  serve::EvalQueue queue(o, test::warm_fake_backends(&stats, 2, 1ms, 1ms), &metrics);
  serve::EvalQueue::Refusal why = serve::EvalQueue::Refusal::none;
  EXPECT_FALSE(queue.submit({request(0, 0), request(0, 1)}, &why).has_value());
  EXPECT_EQ(why, serve::EvalQueue::Refusal::bytes);
  auto one = queue.submit({request(0, 0)}, &why);
  ASSERT_TRUE(one.has_value());
  EXPECT_EQ(why, serve::EvalQueue::Refusal::none);
  ASSERT_EQ((*one)[0].wait_for(30s), std::future_status::ready);
  queue.stop();
}
