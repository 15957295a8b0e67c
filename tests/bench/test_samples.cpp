// bench --samples: a problem's samples are found in natural order, each becomes a work item, and
// the batch records a result per sample through the judge's backend (a fake one here).
#include <gtest/gtest.h>

#include <mutex>

#include "fake_backend.hpp"
#include "kagent/bench/samples.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

bench::Problem problem(const test::TempDir& tmp, const std::string& level, const std::string& name) {
  return {level + "/" + name, level, name, tmp.write("kb/" + level + "/" + name + ".py", "# problem\n")};
}

}  // namespace

TEST(Samples, FoundInNaturalOrder) {
  test::TempDir tmp;
  const auto p = problem(tmp, "level1", "19_ReLU");
  for (const char* f : {"10.cu", "2.cu", "1.py", ".hidden.cu", "_skip.cu", "notes.txt"})
    tmp.write(std::string("samples/level1/19_ReLU/") + f, "x");
  auto found = bench::find_samples(tmp / "samples", p);
  ASSERT_EQ(found.size(), 3u);
  EXPECT_EQ(found[0].filename(), "1.py");
  EXPECT_EQ(found[1].filename(), "2.cu");
  EXPECT_EQ(found[2].filename(), "10.cu");
  // DIR/<name>/ when there is no level folder.
  const auto q = problem(tmp, "level2", "3_X");
  tmp.write("flat/3_X/a.cu", "x");
  EXPECT_EQ(bench::find_samples(tmp / "flat", q).size(), 1u);
  EXPECT_TRUE(bench::find_samples(tmp / "flat", p).empty());
}

TEST(Samples, OneItemPerSampleAndOneForAProblemWithout) {
  test::TempDir tmp;
  std::vector<bench::Problem> ps = {problem(tmp, "level1", "1_A"), problem(tmp, "level1", "2_B")};
  tmp.write("s/level1/1_A/0.cu", "x");
  tmp.write("s/level1/1_A/1.cu", "x");
  auto items = bench::expand_samples(ps, tmp / "s");
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0].sample.filename(), "0.cu");
  EXPECT_EQ(items[1].sample.filename(), "1.cu");
  EXPECT_EQ(items[2].id, "level1/2_B");
  EXPECT_TRUE(items[2].sample.empty());
  EXPECT_EQ(bench::sample_key("level1/1_A", "0.cu"), "level1/1_A\n0.cu");
  EXPECT_EQ(bench::sample_key("level1/2_B", ""), "level1/2_B");
}

TEST(Samples, BatchRecordsEverySampleThroughTheBackend) {
  test::TempDir tmp;
  std::vector<bench::Problem> ps = {problem(tmp, "level1", "1_A"), problem(tmp, "level1", "2_B")};
  tmp.write("s/level1/1_A/0.cu", "tier 2 speedup 1.5");
  tmp.write("s/level1/1_A/1.cu", "compile_error");
  tmp.write("s/level1/1_A/2.cu", "crash");
  tmp.write("s/level1/1_A/3.cu", "throw input");
  auto items = bench::expand_samples(ps, tmp / "s");
  test::FakeBackendState state;
  bench::SampleJobOptions so;
  so.samples = tmp / "s";
  so.backends = test::fake_backends(&state);
  std::vector<report::ResultRecord> records;
  std::mutex mu;
  bench::BatchEvents ev;
  ev.finished = [&](const report::ResultRecord& r) { records.push_back(r); };
  bench::BatchOptions bo;
  bo.gpus = {0, 1};
  std::atomic<bool> stop{false};
  auto out = bench::run_batch(
      items, bo, [&](int gpu) { return bench::make_sample_job(so, gpu); }, ev, stop);
  EXPECT_EQ(out.finished, 5);
  EXPECT_EQ(state.calls.load(), 4);  // the problem without samples needs no backend call
  std::map<std::string, report::ResultRecord> by;
  for (const auto& r : records) by[r.problem + "/" + r.sample] = r;
  ASSERT_EQ(by.size(), 5u);
  EXPECT_EQ(by["level1/1_A/0.cu"].status, "correct");
  EXPECT_EQ(by["level1/1_A/0.cu"].score.tier, 2);
  EXPECT_DOUBLE_EQ(*by["level1/1_A/0.cu"].score.speedup_vs_eager, 1.5);
  EXPECT_EQ(by["level1/1_A/0.cu"].score.device, "Fake GPU");
  EXPECT_FALSE(by["level1/1_A/0.cu"].score.stop_rule.empty());
  EXPECT_EQ(by["level1/1_A/1.cu"].status, "compile_error");
  EXPECT_EQ(by["level1/1_A/2.cu"].status, "crash");
  EXPECT_NE(by["level1/1_A/2.cu"].error.find("SIGSEGV"), std::string::npos);
  EXPECT_EQ(by["level1/1_A/3.cu"].status, "error");  // a plan that does not fit the problem
  EXPECT_EQ(by["level1/1_A/3.cu"].sample, "3.cu");
  EXPECT_EQ(by["level1/2_B/"].status, "unsolved");
}
