#pragma once
// `kagent bench --samples DIR`: N candidates per problem, as KernelBench's sampling workflow makes
// them (DIR/<level>/<problem>/*.cu|*.py), each evaluated through the judge's backend on the
// batch's GPUs and recorded with its sample name, for pass@k, fast_p@k and best-of-k
// (report/sampling.hpp).
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/bench/batch.hpp"
#include "kagent/bench/problems.hpp"
#include "kagent/judge/backend.hpp"
#include "kagent/judge/prebuild.hpp"

namespace kagent::bench {

// A problem's samples: the .cu and .py files of DIR/<level>/<name>/, else DIR/<name>/ (names
// starting with '.' or '_' skipped), in natural order; none when neither folder exists.
std::vector<std::filesystem::path> find_samples(const std::filesystem::path& dir, const Problem& p);

// One work item per sample (Problem::sample set), and one without a sample for a problem that has
// none (recorded as unsolved), in the problems' order.
std::vector<Problem> expand_samples(const std::vector<Problem>& problems, const std::filesystem::path& dir);

// The key a results file knows a work item by: the problem's id, and its sample's file name.
std::string sample_key(const std::string& problem, const std::string& sample);

struct SampleJobOptions {
  std::filesystem::path samples;  // DIR, for messages
  // How every sample is judged (precision, tolerance, trials, timing, limits); each item sets the
  // candidate file and the problem.
  judge::CandidateRequest request;
  judge::BackendFactory backends;
  // Builds the samples ahead of the GPU workers (every item is submitted when the batch starts);
  // null: each sample is built in its turn.
  std::shared_ptr<judge::Prebuilder> prebuilder;
};

// The request that judges sample item `p` under `options` (its file, its name, its problem).
judge::CandidateRequest sample_request(const SampleJobOptions& options, const Problem& p);

// Each worker makes its backend at its first sample (in its own thread), so a batch of problems
// without samples needs no GPU.
std::unique_ptr<ProblemJob> make_sample_job(const SampleJobOptions& options, int gpu);

// `kagent eval --json`'s record of a sample as a results.jsonl record (judge/verdict.hpp's reading).
report::ResultRecord record_from_eval_record(const Problem& p, const nlohmann::json& record);

}  // namespace kagent::bench
