// `kagent bench` end to end without a GPU: shards cover every problem exactly once and merge into
// what one run gives, --resume continues a batch (also one killed in the middle of an agent run)
// without losing or repeating a problem, and the exit codes.
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fcntl.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/common/files.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/report/results.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

extern char** environ;

using namespace kagent;
using namespace std::chrono_literals;

namespace {

class BenchCli : public ::testing::Test {
 protected:
  test::TempDir tmp;

  void SetUp() override {
    // 23 problem files: never loaded by a batch of unsolved problems, so their text does not matter.
    for (int i = 1; i <= 23; ++i) tmp.write(fmt::format("kb/level1/{}_p{}.py", i, i), "# problem\n");
    for (int i = 1; i <= 4; ++i) tmp.write(fmt::format("kb/level2/{}_q{}.py", i, i), "# problem\n");
    std::filesystem::create_directories(tmp / "solutions");
  }

  std::vector<std::string> command(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    std::vector<std::string> argv = {"env", "KAGENT_CACHE_DIR=" + (tmp / "cache").string()};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back((test::binary_dir() / "kagent").string());
    argv.insert(argv.end(), args.begin(), args.end());
    return argv;
  }
  ProcessResult kagent(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return run_capture(command(args, env), 300s);
  }
  std::vector<std::string> bench(const std::string& out, std::vector<std::string> extra = {}) {
    std::vector<std::string> a = {"bench", (tmp / "kb").string(), "--solutions", (tmp / "solutions").string(),
                                  "--out", (tmp / out).string()};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  }
  // problem -> how many lines of the file name it
  std::map<std::string, int> lines_per_problem(const std::string& file) {
    std::map<std::string, int> count;
    std::ifstream in(tmp / file);
    std::string line;
    while (std::getline(in, line))
      if (!line.empty()) ++count[nlohmann::json::parse(line).at("problem").get<std::string>()];
    return count;
  }
};

}  // namespace

TEST_F(BenchCli, ShardsCoverEveryProblemOnceAndTheirMergeEqualsOneRun) {
  auto one = kagent(bench("all.jsonl"));
  ASSERT_EQ(one.exit_code, 0) << one.output;
  EXPECT_EQ(lines_per_problem("all.jsonl").size(), 27u);

  std::map<std::string, int> seen;
  std::vector<std::string> report_args = {"report", "--json"};
  for (int i = 0; i < 4; ++i) {
    const std::string file = fmt::format("shard{}.jsonl", i);
    auto r = kagent(bench(file, {"--shard", fmt::format("{}/4", i)}));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(fmt::format("shard {}/4", i)), std::string::npos) << r.output;
    for (const auto& [p, n] : lines_per_problem(file)) seen[p] += n;
    report_args.push_back((tmp / file).string());
  }
  EXPECT_EQ(seen, lines_per_problem("all.jsonl"));  // every problem, exactly once

  auto merged = kagent(report_args);
  auto single = kagent({"report", "--json", (tmp / "all.jsonl").string()});
  ASSERT_EQ(merged.exit_code, 0) << merged.output;
  EXPECT_EQ(nlohmann::json::parse(merged.output), nlohmann::json::parse(single.output));
  EXPECT_EQ(nlohmann::json::parse(single.output).back().at("problems"), 27);

  // The merged shards as a page and as JUnit XML, next to the summary on stdout.
  report_args[1] = "--md";
  report_args.insert(report_args.end(),
                     {"--html", (tmp / "out/report.html").string(), "--junit", (tmp / "out/report.xml").string()});
  auto files = kagent(report_args);
  ASSERT_EQ(files.exit_code, 0) << files.output;
  EXPECT_NE(files.output.find("| overall | 27 | 0.0% |"), std::string::npos) << files.output;
  const std::string html = read_text_file(tmp / "out/report.html");
  EXPECT_NE(html.find("<table id=\"summary\">"), std::string::npos);
  EXPECT_NE(html.find(">27 unsolved</text>"), std::string::npos);
  const std::string xml = read_text_file(tmp / "out/report.xml");
  size_t cases = 0;
  for (size_t pos = 0; (pos = xml.find("<testcase ", pos)) != std::string::npos; ++pos) ++cases;
  EXPECT_EQ(cases, 27u);
}

TEST_F(BenchCli, SchedulerEnvironmentPicksTheShard) {
  auto flag = kagent(bench("flag.jsonl", {"--shard", "2/3", "--list"}));
  auto slurm = kagent(bench("slurm.jsonl", {"--list"}),
                      {"SLURM_ARRAY_TASK_ID=3", "SLURM_ARRAY_TASK_MIN=1", "SLURM_ARRAY_TASK_COUNT=3"});
  auto k8s = kagent(bench("k8s.jsonl", {"--list"}), {"JOB_COMPLETION_INDEX=2", "KAGENT_SHARD_COUNT=3"});
  ASSERT_EQ(flag.exit_code, 0) << flag.output;
  EXPECT_EQ(std::count(flag.output.begin(), flag.output.end(), '\n'), 9);  // 27 problems / 3
  EXPECT_EQ(slurm.output, flag.output);
  EXPECT_EQ(k8s.output, flag.output);
  auto no_count = kagent(bench("x.jsonl", {"--list"}), {"JOB_COMPLETION_INDEX=2"});
  EXPECT_EQ(no_count.exit_code, 2);
  EXPECT_NE(no_count.output.find("KAGENT_SHARD_COUNT"), std::string::npos) << no_count.output;
  // Without --out, each shard writes a file of its own.
  auto r =
      run_capture({"sh", "-c",
                   fmt::format("cd {} && SLURM_ARRAY_TASK_ID=0 SLURM_ARRAY_TASK_COUNT=2 "
                               "KAGENT_CACHE_DIR={}/cache {} bench kb --solutions solutions",
                               tmp.path().string(), tmp.path().string(), (test::binary_dir() / "kagent").string())},
                  120s);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(lines_per_problem("results.shard-0-of-2.jsonl").size(), 14u);
}

TEST_F(BenchCli, ResumeSkipsWhatIsDoneAndRepairsATornLine) {
  auto first = kagent(bench("r.jsonl", {"--filter", "level1/1[0-9]_"}));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_EQ(lines_per_problem("r.jsonl").size(), 10u);
  {
    std::ofstream(tmp / "r.jsonl", std::ios::app) << R"({"problem": "level1/3_p3", "sta)";  // killed mid-write
  }
  auto refused = kagent(bench("r.jsonl"));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.output.find("--resume"), std::string::npos) << refused.output;

  auto resumed = kagent(bench("r.jsonl", {"--resume", "--json"}));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(resumed.output.find("resume: 10 already recorded, 17 to run"), std::string::npos) << resumed.output;
  auto counts = lines_per_problem("r.jsonl");  // parses every line: the torn one is gone
  EXPECT_EQ(counts.size(), 27u);
  for (const auto& [p, n] : counts) EXPECT_EQ(n, 1) << p;
  // --json: one record per line as problems finish, then the summary.
  int records = 0;
  nlohmann::json last;
  std::istringstream in(resumed.output);
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;  // the settings lines on stderr
    if (j.contains("problem")) ++records;
    last = j;
  }
  EXPECT_EQ(records, 17);
  EXPECT_EQ(last.at("recorded"), 27);
  EXPECT_EQ(last.at("not_run"), 0);

  auto again = kagent(bench("r.jsonl", {"--resume"}));
  EXPECT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.output.find("0 to run"), std::string::npos) << again.output;
  EXPECT_EQ(lines_per_problem("r.jsonl").size(), 27u);
}

TEST_F(BenchCli, SolutionsNeedAGpuOnlyWhenThereAreSome) {
  if (!query_gpus().gpus.empty()) GTEST_SKIP() << "this machine has a GPU: the no-GPU exit code cannot be observed";
  tmp.write("solutions/level1/2_p2.cu", "// a solution\n");
  auto r = kagent(bench("s.jsonl"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no GPU to evaluate 1 solution"), std::string::npos) << r.output;
  auto unsolved_only = kagent(bench("u.jsonl", {"--filter", "level2"}));
  EXPECT_EQ(unsolved_only.exit_code, 0) << unsolved_only.output;
}

TEST_F(BenchCli, UsageErrors) {
  EXPECT_EQ(kagent({"bench", (tmp / "kb").string()}).exit_code, 2);  // neither --solutions nor --agent
  EXPECT_EQ(kagent({"bench", (tmp / "kb").string(), "--agent", "--solutions", (tmp / "solutions").string()}).exit_code,
            2);
  EXPECT_EQ(kagent(bench("x.jsonl", {"--shard", "4/4"})).exit_code, 2);
  EXPECT_EQ(kagent(bench("x.jsonl", {"--filter", "("})).exit_code, 2);
  EXPECT_EQ(kagent({"bench", (tmp / "nothing").string(), "--agent"}).exit_code, 2);
}

// An agent batch (scripted model) killed with SIGKILL in the middle: the resumed batch records
// every problem exactly once, reading back runs that had finished and continuing the cut one.
// --tolerance reaches every agent run and every record.
TEST_F(BenchCli, AgentBatchKilledMidwayResumesWithoutLoss) {
  // Native-reference problems (no Python needed on any machine).
  for (int i = 1; i <= 8; ++i) {
    auto dir = tmp / fmt::format("ops/op{}", i);
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(test::examples_dir() / "vector_add/op.json", dir / "op.json");
    std::filesystem::copy_file(test::examples_dir() / "vector_add/ref.cu", dir / "ref.cu");
  }
  tmp.write("script.jsonl", R"({"content": "Reading the reference first."})"
                            "\n");
  auto args =
      std::vector<std::string>{"bench",    (tmp / "ops").string(),          "--agent",     "--provider", "script",
                               "--script", (tmp / "script.jsonl").string(), "--turns",     "1",          "--no-shell",
                               "--out",    (tmp / "agent.jsonl").string(),  "--tolerance", "0.003"};
  auto argv = command(args);
  std::vector<char*> cargv;
  for (auto& s : argv) cargv.push_back(s.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, (tmp / "bench.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t pid = 0;
  ASSERT_EQ(posix_spawnp(&pid, "env", &fa, nullptr, cargv.data(), environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  // Kill it once two problems are recorded (with one worker, the third is under way).
  const auto deadline = std::chrono::steady_clock::now() + 120s;
  size_t at_kill = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    at_kill = lines_per_problem("agent.jsonl").size();
    if (at_kill >= 2) break;
    std::this_thread::sleep_for(5ms);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_GE(at_kill, 2u) << read_text_file(tmp / "bench.log");
  const size_t after_kill = lines_per_problem("agent.jsonl").size();
  ASSERT_LT(after_kill, 8u) << "the batch finished before the kill; the test did not test a resume";

  args.push_back("--resume");
  auto resumed = kagent(args);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  auto counts = lines_per_problem("agent.jsonl");
  EXPECT_EQ(counts.size(), 8u);
  for (const auto& [p, n] : counts) EXPECT_EQ(n, 1) << p;
  for (const auto& r : report::read_results({tmp / "agent.jsonl"})) {
    EXPECT_EQ(r.status, "unsolved") << r.problem << ": " << r.error;
    EXPECT_NE(r.error.find("turn budget"), std::string::npos) << r.error;
    EXPECT_TRUE(std::filesystem::exists(std::filesystem::path(r.run_dir) / "result.json")) << r.run_dir;
    EXPECT_EQ(r.score.tolerance, (Tolerance{0.003, 0.003})) << r.problem;
    EXPECT_EQ(r.score.precision, "fp32") << r.problem;
  }
}

TEST_F(BenchCli, AModelNewSolutionCountsAsASolution) {
  if (!query_gpus().gpus.empty()) GTEST_SKIP() << "this machine has a GPU: the no-GPU exit code cannot be observed";
  tmp.write("solutions/level1/2_p2.py", "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n");
  auto r = kagent(bench("m.jsonl"));
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_NE(r.output.find("no GPU to evaluate 1 solution"), std::string::npos) << r.output;
}
