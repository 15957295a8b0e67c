#pragma once
// results.jsonl: one line per problem of a batch (`kagent bench`), and the summary the CUDA Agent
// paper reports over them (`kagent report`): per level and overall, the pass rate, the share
// faster than torch eager and reaching tier 3, geometric-mean speedups, and fast_p.
#include <filesystem>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/score.hpp"

namespace kagent::report {

// What became of a problem. The candidate's failures (incorrect, compile_error, crash: its run
// killed the harness's child, timeout) are verdicts on the candidate; error is the harness's or the
// environment's; unsolved: an agent run that ended with no correct candidate. `other` stands for a
// status written by another version of kagent, kept as text in the record.
enum class Status { correct, incorrect, compile_error, crash, timeout, error, unsolved, other };

Status parse_status(std::string_view text);
// The name written in results.jsonl ("compile_error"); "other" for Status::other.
std::string_view status_name(Status s);
// Whether the status is a verdict on the candidate's own failure (JUnit <failure>, not <error>).
bool candidate_failure(Status s);

struct ResultRecord {
  std::string problem;  // e.g. "level1/19_ReLU"
  std::string level;    // e.g. "level1" ("" when the problem has none)
  std::string status;   // a Status by name (status_name); kept as text so other versions' names survive
  // The evaluation's result (an agent run's best candidate): tier, times, speedups, what correctness
  // was judged under and how it was measured (the GPU's name, the timing's stopping rule), so that
  // results measured differently are not summed up together (kagent report). Its fields are empty
  // when not recorded (records of older versions; problems that failed before anything was measured).
  Score score;
  std::string error;             // one paragraph when status is not "correct"
  std::string run_dir;           // agent runs
  std::string candidate;         // the file evaluated (solutions) or the run's best.cu or best.py (agent runs)
  std::optional<double> wall_s;  // time this problem took in the batch (load, baselines, evaluation or agent run)
  std::optional<int> gpu;        // which GPU ran it
  std::string kagent_version;    // the kagent that wrote the record ("" not recorded)
  // Agent runs: the best speedup vs eager reached by each turn, as (turn, speedup) steps.
  BestByTurn best_by_turn;
  // `kagent bench --samples`: which of the problem's samples this record judges (its file name in
  // the problem's folder); "" for one candidate per problem. A problem has a record per sample.
  std::string sample;
  bool correct() const { return status == "correct"; }
  Status kind() const { return parse_status(status); }
};

// The version of the record format this kagent writes ("record_version"); records without one are
// version 1 (no device, stop rule or kagent version recorded). A reader refuses a newer version
// than its own, naming the file and line. The record's JSON is the Score's keys (score.hpp) beside
// its own: "problem", "level", "status", "error", "run_dir", "candidate", "wall_s", "gpu",
// "best_by_turn", "kagent_version", "record_version".
constexpr int kRecordVersion = 2;

// What a result was measured under; results that differ in it are not comparable.
struct MeasurementSetting {
  std::string device, precision, stop_rule, kagent_version;
  std::optional<Tolerance> tolerance;
  bool operator==(const MeasurementSetting&) const = default;
};
MeasurementSetting setting_of(const ResultRecord& r);
// Whether anything of the record was measured (a device or a precision recorded); records that
// failed before any timing belong to no setting.
bool measured(const ResultRecord& r);
// "NVIDIA H100 80GB HBM3, fp32 (atol 0.0001, rtol 0.0001), stop rule >= 20 samples ..., kagent 0.1.0";
// what was not recorded is said so.
std::string setting_text(const MeasurementSetting& s);
// The settings of the records that were measured (a device or a precision recorded), with their
// record counts, in first-seen order.
std::vector<std::pair<MeasurementSetting, int>> measurement_settings(const std::vector<ResultRecord>& records);

// Appends records to a results file, one JSON line each, flushed to disk before returning, so a
// killed batch loses nothing it had finished. Opening repairs a line torn by an earlier kill (it
// is cut off, so the next record starts on a line of its own). Thread-safe.
class ResultsWriter {
 public:
  explicit ResultsWriter(std::filesystem::path path);
  ~ResultsWriter();
  ResultsWriter(const ResultsWriter&) = delete;
  ResultsWriter& operator=(const ResultsWriter&) = delete;
  void append(const ResultRecord& r);
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::mutex mu_;
};

void to_json(nlohmann::json& j, const ResultRecord& r);
void from_json(const nlohmann::json& j, ResultRecord& r);

// What one results.jsonl line may be (files are shared and downloaded): a record kagent writes is
// a few KB (its error is cut to kMaxRecordErrorBytes), a line of 10^6 empty arrays would take some
// 50 MB to parse.
inline constexpr size_t kMaxResultLineBytes = size_t{1} << 20;
inline constexpr size_t kMaxResultLineValues = size_t{1} << 16;
inline constexpr size_t kMaxRecordErrorBytes = size_t{64} << 10;

// Reads results files (shards, resumed runs) into one set: a problem (a problem's sample) seen
// twice keeps its last record. Lines are parsed one at a time, each within the bounds above. A torn last line is
// skipped; any other malformed or oversized line is InputError naming file:line.
// `per_file`, when given, receives per file its records and the line number of a torn last line
// left out (0 for none): what `kagent report` tells its user, who may have named the wrong file.
struct ResultsFileRead {
  std::filesystem::path file;
  int records = 0;
  int torn_line = 0;
};
std::vector<ResultRecord> read_results(const std::vector<std::filesystem::path>& files,
                                       std::vector<ResultsFileRead>* per_file = nullptr);

// How many of a group's evaluated problems were judged under one precision and tolerance.
struct NumericsCount {
  std::string precision;
  std::optional<Tolerance> tolerance;
  int problems = 0;
};

struct Summary {
  std::string group;  // a level, or "overall"
  int problems = 0;
  double pass_rate = 0;                                        // correct / problems
  double faster_than_eager = 0;                                // tier >= 2 / problems
  double tier3 = 0;                                            // tier 3 / problems
  std::optional<double> geomean_vs_eager, geomean_vs_compile;  // over correct problems with a speedup
  double fast_1 = 0, fast_1_5 = 0, fast_2 = 0;                 // correct and speedup vs eager > p, / problems
  std::vector<NumericsCount> numerics;  // what the evaluated problems were judged under (more than one: mixed)
};

// {"group", "problems", "pass_rate", ..., "fast_1.0", "fast_1.5", "fast_2.0"}; null geomeans when none.
void to_json(nlohmann::json& j, const Summary& s);

// One Summary per level (sorted), then "overall".
std::vector<Summary> summarize(const std::vector<ResultRecord>& records);

// The summary as a text table or a Markdown table, then the line that says what the problems were
// judged under ("judged under fp32, atol 0.0001, rtol 0.0001 (12 problems)").
std::string render_summary(const std::vector<Summary>& s, bool markdown);
std::string numerics_text(const std::vector<NumericsCount>& n);

}  // namespace kagent::report
