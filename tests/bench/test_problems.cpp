// Which problems a batch runs: discovery, natural order, filters, shards (flags and the
// Slurm/Kubernetes environment), and where solutions are found.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "kagent/bench/problems.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/natural_order.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::bench;

namespace {

std::vector<std::string> ids(const std::vector<Problem>& ps) {
  std::vector<std::string> out;
  for (const auto& p : ps) out.push_back(p.id);
  return out;
}

EnvLookup env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

}  // namespace

TEST(BenchProblems, NaturalOrderComparesNumbersAsNumbers) {
  EXPECT_TRUE(natural_less("level1/2_x", "level1/10_y"));
  EXPECT_FALSE(natural_less("level1/10_y", "level1/2_x"));
  EXPECT_TRUE(natural_less("level1/99_z", "level2/1_a"));
  EXPECT_TRUE(natural_less("a", "ab"));
  EXPECT_FALSE(natural_less("x", "x"));
  // Digit runs longer than any integer type still order by value.
  EXPECT_TRUE(natural_less("p99999999999999999999999", "p100000000000000000000000"));
}

TEST(BenchProblems, DiscoversPyFilesAndOpJsonFoldersInNaturalOrder) {
  test::TempDir t;
  for (const char* f : {"kb/level1/10_b.py", "kb/level1/2_c.py", "kb/level1/1_a.py", "kb/level1/_helper.py",
                        "kb/level1/.cache/9_x.py", "kb/level1/notes.txt", "kb/level2/3_d.py"})
    t.write(f, "# problem\n");
  t.write("ops/softmax/op.json", "{}");
  t.write("ops/softmax/ref.cu", "");
  t.write("ops/other.json", "{}");  // not op.json: not a problem inside a folder
  auto ps = discover_problems({t / "kb", t / "ops"});
  EXPECT_EQ(ids(ps),
            (std::vector<std::string>{"level1/1_a", "level1/2_c", "level1/10_b", "level2/3_d", "ops/softmax"}));
  EXPECT_EQ(ps[0].level, "level1");
  EXPECT_EQ(ps[0].name, "1_a");
  EXPECT_EQ(ps[4].path.filename(), "op.json");
  EXPECT_TRUE(ps[4].path.is_absolute());

  // A file given directly counts whatever its name; given twice (folder and file) it is one problem.
  auto one = discover_problems({t / "ops/other.json", t / "kb/level1", t / "kb/level1/2_c.py"});
  EXPECT_EQ(ids(one), (std::vector<std::string>{"level1/1_a", "level1/2_c", "level1/10_b", "ops/other"}));
}

// A problem folder is data people download: a symlink in it that leads out (to a .py or an
// op.json elsewhere on the host, whose text bench --agent would put in the prompt) is refused;
// one that stays inside, and a file outside named directly, are fine.
TEST(BenchProblems, ASymlinkLeadingOutOfTheFolderIsRefused) {
  test::TempDir t;
  t.write("private/model.py", "# someone's file\n");
  t.write("private/op/op.json", "{}");
  t.write("kb/level1/1_a.py", "# problem\n");
  std::filesystem::create_symlink(t / "kb/level1/1_a.py", t / "kb/level1/2_same.py");
  EXPECT_EQ(ids(discover_problems({t / "kb"})), (std::vector<std::string>{"level1/1_a", "level1/2_same"}));

  auto refused = [&](const std::filesystem::path& root) {
    try {
      discover_problems({root});
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  std::filesystem::create_symlink(t / "private/model.py", t / "kb/level1/3_out.py");
  std::string msg = refused(t / "kb");
  EXPECT_NE(msg.find("3_out.py: leads to"), std::string::npos) << msg;
  EXPECT_NE(msg.find("outside"), std::string::npos) << msg;
  std::filesystem::remove(t / "kb/level1/3_out.py");

  // Relative links, and an op.json's folder linked in.
  std::filesystem::create_symlink("../../private/model.py", t / "kb/level1/4_rel.py");
  EXPECT_NE(refused(t / "kb").find("4_rel.py: leads to"), std::string::npos);
  std::filesystem::remove(t / "kb/level1/4_rel.py");
  t.write("ops/a/op.json", "{}");
  std::filesystem::create_symlink(t / "private/op/op.json", t / "ops/b_op.json");  // not op.json: ignored
  std::filesystem::create_directories(t / "ops/c");
  std::filesystem::create_symlink(t / "private/op/op.json", t / "ops/c/op.json");
  EXPECT_NE(refused(t / "ops").find("c/op.json: leads to"), std::string::npos);

  // Named directly, a file is the user's choice wherever it leads.
  EXPECT_EQ(ids(discover_problems({t / "ops/c/op.json"})), (std::vector<std::string>{"ops/c"}));
}

TEST(BenchProblems, DiscoveryErrorsNameThePath) {
  test::TempDir t;
  t.write("empty/readme.txt", "");
  t.write("a/level1/1_x.py", "");
  t.write("b/level1/1_x.py", "");
  t.write("c/notes.txt", "");
  auto message = [](auto fn) {
    try {
      fn();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_NE(message([&] { discover_problems({t / "missing"}); }).find("no such file"), std::string::npos);
  EXPECT_NE(message([&] { discover_problems({t / "empty"}); }).find("no problems"), std::string::npos);
  EXPECT_NE(message([&] { discover_problems({t / "a", t / "b"}); }).find("level1/1_x"), std::string::npos);
  EXPECT_NE(message([&] { discover_problems({t / "c/notes.txt"}); }).find("not a problem"), std::string::npos);
}

TEST(BenchProblems, FilterMatchesAnywhereInTheId) {
  std::vector<Problem> ps = {{"level1/19_ReLU", "level1", "19_ReLU", {}},
                             {"level1/23_Softmax", "level1", "23_Softmax", {}},
                             {"level2/12_Gemm_ReLU", "level2", "12_Gemm_ReLU", {}}};
  EXPECT_EQ(ids(filter_problems(ps, "ReLU")), (std::vector<std::string>{"level1/19_ReLU", "level2/12_Gemm_ReLU"}));
  EXPECT_EQ(ids(filter_problems(ps, "^level1/2")), (std::vector<std::string>{"level1/23_Softmax"}));
  EXPECT_THROW(filter_problems(ps, "("), InputError);
}

TEST(BenchProblems, ParseShard) {
  EXPECT_EQ(parse_shard("0/1"), (Shard{0, 1, "--shard"}));
  EXPECT_EQ(parse_shard("3/4"), (Shard{3, 4, "--shard"}));
  for (const char* bad : {"4/4", "-1/4", "1/0", "1", "a/b", "1/2/3", "1/ 2", ""})
    EXPECT_THROW(parse_shard(bad), InputError) << bad;
}

TEST(BenchProblems, ShardFromSlurmAndKubernetesEnvironment) {
  EXPECT_FALSE(shard_from_env(env_of({})).has_value());
  // Slurm: the task id is relative to the array's first index.
  EXPECT_EQ(*shard_from_env(env_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})),
            (Shard{2, 4, "SLURM_ARRAY_TASK_ID"}));
  EXPECT_EQ(*shard_from_env(
                env_of({{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})),
            (Shard{3, 4, "SLURM_ARRAY_TASK_ID"}));
  EXPECT_THROW(shard_from_env(env_of({{"SLURM_ARRAY_TASK_ID", "2"}})), InputError);
  EXPECT_THROW(shard_from_env(env_of({{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})), InputError);
  EXPECT_THROW(shard_from_env(env_of({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "4"}})), InputError);
  // Kubernetes indexed Job: the count comes from the manifest.
  EXPECT_EQ(*shard_from_env(env_of({{"JOB_COMPLETION_INDEX", "1"}, {"KAGENT_SHARD_COUNT", "3"}})),
            (Shard{1, 3, "JOB_COMPLETION_INDEX"}));
  EXPECT_THROW(shard_from_env(env_of({{"JOB_COMPLETION_INDEX", "1"}})), InputError);
  EXPECT_THROW(shard_from_env(env_of({{"JOB_COMPLETION_INDEX", "3"}, {"KAGENT_SHARD_COUNT", "3"}})), InputError);
}

TEST(BenchProblems, ShardsCoverEveryProblemExactlyOnceAndBalance) {
  std::vector<Problem> ps;
  for (int i = 0; i < 23; ++i) ps.push_back({"level1/" + std::to_string(i), "level1", std::to_string(i), {}});
  for (int n = 1; n <= 8; ++n) {
    std::multiset<std::string> seen;
    size_t smallest = ps.size(), largest = 0;
    for (int i = 0; i < n; ++i) {
      auto part = take_shard(ps, {i, n, ""});
      smallest = std::min(smallest, part.size());
      largest = std::max(largest, part.size());
      for (const auto& p : part) seen.insert(p.id);
    }
    EXPECT_EQ(seen.size(), ps.size()) << n << " shards";
    for (const auto& p : ps) EXPECT_EQ(seen.count(p.id), 1u) << p.id << " in " << n << " shards";
    EXPECT_LE(largest - smallest, 1u) << n << " shards";
  }
}

TEST(BenchProblems, SolutionsAreFoundUnderTheLevelFolderFirst) {
  test::TempDir t;
  Problem p{"level1/19_ReLU", "level1", "19_ReLU", {}};
  EXPECT_FALSE(find_solution(t.path(), p).has_value());
  t.write("19_ReLU.cu", "");
  EXPECT_EQ(find_solution(t.path(), p)->filename(), "19_ReLU.cu");
  EXPECT_EQ(find_solution(t.path(), p)->parent_path().filename(), t.path().filename());
  t.write("level1/19_ReLU.cu", "");
  EXPECT_EQ(find_solution(t.path(), p)->parent_path().filename(), "level1");
}

TEST(BenchProblems, AModelNewSolutionIsFoundBesideOrInsteadOfACuFile) {
  test::TempDir t;
  Problem p{"level1/19_ReLU", "level1", "19_ReLU", {}};
  t.write("level1/19_ReLU.py", "class ModelNew:\n    pass\n");
  ASSERT_TRUE(find_solution(t.path(), p).has_value());
  EXPECT_EQ(find_solution(t.path(), p)->filename(), "19_ReLU.py");
  t.write("level1/19_ReLU.cu", "");  // beside it: the plan candidate is taken
  EXPECT_EQ(find_solution(t.path(), p)->filename(), "19_ReLU.cu");
}

TEST(BenchProblems, TheProblemFileItselfIsNeverItsOwnSolution) {
  test::TempDir t;
  t.write("level1/19_ReLU.py", "class Model:\n    pass\n");
  Problem p{"level1/19_ReLU", "level1", "19_ReLU", t.path() / "level1" / "19_ReLU.py"};
  EXPECT_FALSE(find_solution(t.path(), p).has_value());  // --solutions pointing at the problems
}
