// Building candidates ahead of the GPU (judge/prebuild.hpp): a plan given as text is compiled into
// the compile cache under the name its evaluation gives it (so the evaluation's compile is a cache
// hit), the order in which candidates become ready, and a pool that ends with work still queued.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "fake_backend.hpp"
#include "held_kind.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/judge/each.hpp"
#include "kagent/judge/prebuild.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

constexpr const char* kArch = "sm_90a";

std::string kernel(int variant) {
  return R"~(/*kagent
{"launch": [{"kernel": "add", "grid": ["cdiv(numel(out), 256)"], "block": [256],
             "args": ["a", "b", "out", "i64:numel(out)"]}]}
*/
// variant )~" +
         std::to_string(variant) + R"~(
extern "C" __global__ void add(const float* a, const float* b, float* out, long long n) {
  long long i = blockIdx.x * 256ll + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}
)~";
}

judge::CandidateRequest text(const std::string& name, const std::string& source) {
  return test::text_request(name, source);
}

}  // namespace

TEST(Prebuild, ATextPlanIsInTheCacheUnderTheNameItsEvaluationGivesIt) {
  test::TempDir tmp;
  auto cache = std::make_shared<CompileCache>(tmp / "cache");
  const judge::CandidateRequest r = text("a.cu", kernel(1));
  {
    judge::Prebuilder pre(cache, kArch, 2);
    pre.submit(r);
    pre.wait_for(r);
    EXPECT_TRUE(pre.ready(r));
    EXPECT_EQ(pre.stats().built, 1);
    EXPECT_EQ(pre.stats().failed, 0);
  }
  // The evaluation reads the same text at the same path: its compile finds the prebuilt entry.
  const Candidate cand = judge::candidate_of_request(r);
  EXPECT_EQ(cand.path, judge::text_candidate_path(r));
  const CompileResult c = Compiler(find_cuda_paths(), cache).compile(cand, kArch);
  EXPECT_TRUE(c.ok) << c.log;
  EXPECT_TRUE(c.cache_hit);
}

TEST(Prebuild, TextPathsAreTheTextsOwn) {
  const auto a = judge::text_candidate_path(text("x", kernel(1)));
  EXPECT_EQ(a, judge::text_candidate_path(text("y", kernel(1))));  // the name does not matter
  EXPECT_NE(a, judge::text_candidate_path(text("x", kernel(2))));
  EXPECT_EQ(a.filename(), "candidate.cu");
  judge::CandidateRequest py = text("s.py", "class ModelNew:\n  pass\n");
  py.kind = "modelnew";
  EXPECT_EQ(judge::text_candidate_path(py).filename(), "candidate.py");
  py.kind = "nonsense";
  EXPECT_THROW(judge::text_candidate_path(py), InputError);
}

TEST(Prebuild, FailuresAreLeftToTheEvaluationAndNeverSubmittedIsReady) {
  test::TempDir tmp;
  judge::Prebuilder pre(std::make_shared<CompileCache>(tmp / "cache"), kArch, 1);
  const judge::CandidateRequest bad = text("bad.cu", "not a plan");
  pre.submit(bad);
  pre.wait_for(bad);
  EXPECT_EQ(pre.stats().failed, 1);
  const judge::CandidateRequest other = text("other.cu", kernel(3));
  EXPECT_TRUE(pre.ready(other));  // never submitted: nothing to wait for
  pre.wait_for(other);
  EXPECT_EQ(pre.first_ready({&other}), 0u);
}

TEST(Prebuild, EndingWithWorkQueuedDropsItAndWakesTheWaiters) {
  test::TempDir tmp;
  std::vector<std::shared_future<void>> done;
  {
    judge::Prebuilder pre(std::make_shared<CompileCache>(tmp / "cache"), kArch, 1);
    for (int i = 10; i < 16; ++i) done.push_back(pre.submit(text("c.cu", kernel(i))));
  }
  for (auto& f : done) EXPECT_EQ(f.wait_for(std::chrono::seconds(0)), std::future_status::ready);
}

TEST(Prebuild, EachCandidateIsEvaluatedOnceWithAPrebuilder) {
  test::TempDir tmp;
  judge::Prebuilder pre(std::make_shared<CompileCache>(tmp / "cache"), kArch, 3);
  test::FakeBackendState s;
  test::FakeBackend b(&s);
  std::vector<judge::CandidateRequest> rs;
  // Not plans (the fake backend reads "tier N"): their prebuilds fail, and the evaluations still run.
  for (int i = 20; i < 26; ++i) rs.push_back(text("c" + std::to_string(i) + ".cu", "tier 2 #" + std::to_string(i)));
  std::set<std::string> seen;
  const auto out = judge::evaluate_each(
      b, rs, [&](const nlohmann::json& j) { seen.insert(j["candidate"]); }, &pre);
  EXPECT_EQ(out.correct, 6);
  EXPECT_EQ(seen.size(), 6u);
  EXPECT_EQ(s.calls, 6);
  EXPECT_EQ(pre.stats().built, 6);
  EXPECT_EQ(pre.stats().failed, 6);
}

TEST(Prebuild, ACandidateBuiltOutOfTurnIsEvaluatedFirst) {
  test::HeldKind held;
  test::TempDir tmp;
  judge::Prebuilder pre(std::make_shared<CompileCache>(tmp / "cache"), kArch, 2);
  test::FakeBackendState s;
  test::FakeBackend b(&s);
  judge::CandidateRequest slow = text("slow", "held: tier 1"), quick = text("quick", "tier 2");
  slow.kind = quick.kind = "held";
  std::vector<std::string> order;
  judge::evaluate_each(
      b, {slow, quick},
      [&](const nlohmann::json& j) {
        order.push_back(j["candidate"]);
        // Judged while the slow one still builds: announcing what comes next waits for no build.
        if (j["candidate"] == "quick") {
          EXPECT_FALSE(pre.ready(slow));
        }
        held.release();  // the slow build ends only once the quick candidate has been judged
      },
      &pre);
  EXPECT_EQ(order, (std::vector<std::string>{"quick", "slow"}));
  EXPECT_EQ(s.events, (std::vector<std::string>{"expect slow", "evaluate quick", "evaluate slow"}));
}
