#pragma once
// Which problems a batch runs: found under the PATHs given to `kagent bench` (KernelBench level
// folders, problem files, folders of op.json), filtered, and split into deterministic shards for
// Slurm array jobs and Kubernetes indexed Jobs.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace kagent::bench {

struct Problem {
  std::string id;              // "level1/19_ReLU": the level folder and the problem's name
  std::string level;           // "level1" (the folder the problem sits in)
  std::string name;            // "19_ReLU"
  std::filesystem::path path;  // the .py problem file or op.json
  // `kagent bench --samples`: the sample this work item evaluates (one item per sample of the
  // problem; bench/samples.hpp). Empty otherwise, and for a problem none was found for.
  std::filesystem::path sample{};  // (a default, so that {id, level, name, path} still initializes all)
};

// Problems under each PATH: a file is one problem (.py or .json); a folder contributes every .py
// and every op.json beneath it (files and folders starting with '.' or '_' are skipped). Sorted
// naturally ("level1/2_x" before "level1/10_y"). InputError for a missing path, a folder without
// problems, or two problems with the same id.
std::vector<Problem> discover_problems(const std::vector<std::filesystem::path>& paths);

// Keeps the problems whose id matches `regex` anywhere (ECMAScript). InputError for a bad regex.
std::vector<Problem> filter_problems(const std::vector<Problem>& problems, const std::string& regex);

struct Shard {
  int index = 0;  // 0-based
  int count = 1;
  std::string source;  // "--shard", "SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"
  bool operator==(const Shard&) const = default;
};

// "I/N" with 0 <= I < N. InputError otherwise.
Shard parse_shard(const std::string& text);

// The shard a cluster scheduler gave this process, if any:
//  - Slurm array jobs: SLURM_ARRAY_TASK_ID relative to SLURM_ARRAY_TASK_MIN (default 0), out of
//    SLURM_ARRAY_TASK_COUNT;
//  - Kubernetes indexed Jobs: JOB_COMPLETION_INDEX out of KAGENT_SHARD_COUNT (Kubernetes does not
//    put the Job's completions in the environment, so the manifest sets it).
// InputError when the variables are inconsistent. `env` looks a variable up (getenv by default).
using EnvLookup = std::function<const char*(const char*)>;
std::optional<Shard> shard_from_env(const EnvLookup& env = {});

// Problem i (in natural order) belongs to shard i mod N: every problem lands in exactly one
// shard, and the shards differ in size by at most one.
std::vector<Problem> take_shard(const std::vector<Problem>& problems, const Shard& shard);

// The existing solution for a problem in `dir`: DIR/<level>/<name>.cu, else DIR/<name>.cu, else
// the same as a ModelNew solution .py (never the problem file itself).
std::optional<std::filesystem::path> find_solution(const std::filesystem::path& dir, const Problem& p);

}  // namespace kagent::bench
