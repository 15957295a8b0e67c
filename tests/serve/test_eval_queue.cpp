// The service's queue with building ahead: a worker takes the first queued candidate whose build is
// over, so a candidate built out of turn does not wait behind one still building.
#include <gtest/gtest.h>

#include <chrono>

#include "fake_backend.hpp"
#include "held_kind.hpp"
#include "kagent/judge/prebuild.hpp"
#include "kagent/serve/eval_queue.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

TEST(EvalQueue, TakesTheFirstCandidateWhoseBuildIsOver) {
  test::HeldKind held;
  test::TempDir tmp;
  judge::Prebuilder pre(std::make_shared<CompileCache>(tmp / "cache"), "sm_90a", 2);
  test::FakeBackendState state;
  serve::Metrics metrics({0});
  serve::EvalQueue::Options o;
  o.prebuilder = &pre;
  serve::EvalQueue queue(o, test::fake_backends(&state), &metrics);
  judge::CandidateRequest slow = test::text_request("slow", "held: tier 1");
  judge::CandidateRequest quick = test::text_request("quick", "tier 2");
  slow.kind = quick.kind = "held";
  auto answers = queue.submit({slow, quick});
  ASSERT_TRUE(answers.has_value());
  // The quick one is answered while the slow one is still building.
  ASSERT_EQ((*answers)[1].wait_for(20s), std::future_status::ready);
  EXPECT_EQ((*answers)[1].get().body["candidate"], "quick");
  EXPECT_NE((*answers)[0].wait_for(0s), std::future_status::ready);
  held.release();
  ASSERT_EQ((*answers)[0].wait_for(20s), std::future_status::ready);
  EXPECT_EQ((*answers)[0].get().body["candidate"], "slow");
  queue.stop();
}

// A worker tells its backend which job is likely next before it evaluates the one it took, so that
// what can be started ahead (a ModelNew worker) starts beside it.
TEST(EvalQueue, TheBackendHearsOfTheNextJobBeforeEvaluatingOne) {
  test::FakeBackendState state;
  serve::Metrics metrics({0});
  serve::EvalQueue queue(serve::EvalQueue::Options{}, test::fake_backends(&state), &metrics);
  auto answers = queue.submit(
      {test::text_request("a", "tier 1"), test::text_request("b", "tier 1"), test::text_request("c", "tier 1")});
  ASSERT_TRUE(answers.has_value());
  for (auto& a : *answers) ASSERT_EQ(a.wait_for(20s), std::future_status::ready);
  queue.stop();
  std::lock_guard<std::mutex> lock(state.mu);
  EXPECT_EQ(state.events,
            (std::vector<std::string>{"expect b c", "evaluate a", "expect c", "evaluate b", "evaluate c"}));
}
