#include "kagent/report/results.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/json_text.hpp"
#include "kagent/common/jsonl.hpp"
#include "kagent/common/natural_order.hpp"
#include "kagent/common/saturate.hpp"
#include "kagent/common/text_table.hpp"

namespace kagent::report {

namespace {
constexpr std::pair<Status, std::string_view> kStatusNames[] = {
    {Status::correct, "correct"},  {Status::incorrect, "incorrect"}, {Status::compile_error, "compile_error"},
    {Status::crash, "crash"},      {Status::timeout, "timeout"},     {Status::error, "error"},
    {Status::unsolved, "unsolved"}};
}  // namespace

Status parse_status(std::string_view text) {
  for (const auto& [s, name] : kStatusNames)
    if (name == text) return s;
  return Status::other;
}

std::string_view status_name(Status s) {
  for (const auto& [k, name] : kStatusNames)
    if (k == s) return name;
  return "other";
}

bool candidate_failure(Status s) {
  return s == Status::incorrect || s == Status::compile_error || s == Status::crash || s == Status::timeout;
}

namespace {

nlohmann::json opt(const std::optional<double>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json();
}

// An integer field in [lo, hi]; nullopt when absent, InputError naming the key when it is something else.
std::optional<int> integer(const nlohmann::json& j, const char* key, int lo, int hi) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  auto v = json_integer(*it, lo, hi);
  if (!v) throw InputError(fmt::format("{}: expected an integer from {} to {}, got {}", key, lo, hi, show_json(*it)));
  return static_cast<int>(*v);
}

std::optional<double> opt_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

void to_json(nlohmann::json& j, const ResultRecord& r) {
  j = r.score;
  j.update(
      {{"problem", r.problem}, {"level", r.level}, {"status", r.status}, {"error", r.error}, {"run_dir", r.run_dir}});
  if (!r.candidate.empty()) j["candidate"] = r.candidate;
  if (r.wall_s) j["wall_s"] = *r.wall_s;
  if (r.gpu) j["gpu"] = *r.gpu;
  if (!r.best_by_turn.empty()) j["best_by_turn"] = r.best_by_turn;
  if (!r.sample.empty()) j["sample"] = r.sample;
  j["kagent_version"] = r.kagent_version.empty() ? std::string(KAGENT_VERSION) : r.kagent_version;
  j["record_version"] = kRecordVersion;
}

void from_json(const nlohmann::json& j, ResultRecord& r) {
  if (auto v = integer(j, "record_version", 1, std::numeric_limits<int>::max()); v && *v > kRecordVersion)
    throw InputError(
        fmt::format("record_version {} is newer than this kagent reads ({}): read it with kagent {} or "
                    "later",
                    *v, kRecordVersion, j.value("kagent_version", "a newer version")));
  r.problem = j.at("problem").get<std::string>();
  r.level = j.value("level", "");
  r.status = j.at("status").get<std::string>();
  r.score = j.get<Score>();
  r.error = j.value("error", "");
  r.run_dir = j.value("run_dir", "");
  r.candidate = j.value("candidate", "");
  r.wall_s = opt_number(j, "wall_s");
  r.gpu = integer(j, "gpu", 0, std::numeric_limits<int>::max());
  r.kagent_version = j.value("kagent_version", "");
  if (auto it = j.find("best_by_turn"); it != j.end() && it->is_array()) r.best_by_turn = best_by_turn_from_json(*it);
  r.sample = j.value("sample", "");
}

ResultsWriter::ResultsWriter(std::filesystem::path path) : path_(std::move(path)) {
  if (path_.has_parent_path()) std::filesystem::create_directories(path_.parent_path());
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw InputError(fmt::format("{}: cannot open the results file ({})", path_.string(), std::strerror(errno)));
  // A kill in the middle of a write leaves a last line without its newline: cut it off, so that
  // the next record does not continue it.
  try {
    cut_torn_last_line(fd_, path_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
}

ResultsWriter::~ResultsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void ResultsWriter::append(const ResultRecord& record) {
  // Within what read_results takes: an error of pages (a compile log) keeps its beginning.
  const ResultRecord* r = &record;
  ResultRecord cut;
  if (record.error.size() > kMaxRecordErrorBytes) {
    cut = record;
    cut.error = record.error.substr(0, kMaxRecordErrorBytes) + "... (cut)";
    r = &cut;
  }
  const std::string line = nlohmann::json(*r).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  // One write per record to an O_APPEND descriptor: lines of two writers (threads here, or two
  // batches sharing a file) do not interleave.
  size_t done = 0;
  while (done < line.size()) {
    ssize_t n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw EnvError(fmt::format("{}: cannot write a result ({})", path_.string(), std::strerror(errno)));
    done += static_cast<size_t>(n);
  }
  ::fdatasync(fd_);
}

std::vector<ResultRecord> read_results(const std::vector<std::filesystem::path>& files,
                                       std::vector<ResultsFileRead>* per_file) {
  std::map<std::string, ResultRecord> by_problem;
  JsonlLimits limits;
  limits.max_line_bytes = kMaxResultLineBytes;
  limits.json.max_values = kMaxResultLineValues;
  for (const auto& path : files) {
    int records = 0;
    const int torn = for_each_jsonl(
        path,
        [&](JsonlLine&& line) {
          try {
            ResultRecord r = line.value.get<ResultRecord>();
            ++records;
            // One record per problem, or per sample of a problem (bench --samples).
            by_problem[r.sample.empty() ? r.problem : r.problem + '\n' + r.sample] = std::move(r);
          } catch (const nlohmann::json::exception& e) {
            throw InputError(fmt::format("{}:{}: not a result record ({})", path.string(), line.number, e.what()));
          } catch (const InputError& e) {
            throw InputError(fmt::format("{}:{}: not a result record ({})", path.string(), line.number, e.what()));
          }
        },
        limits);
    if (per_file) per_file->push_back({path, records, torn});
  }
  std::vector<ResultRecord> out;
  for (auto& [p, r] : by_problem) out.push_back(std::move(r));
  std::sort(out.begin(), out.end(), [](const ResultRecord& a, const ResultRecord& b) {
    if (a.problem != b.problem) return natural_less(a.problem, b.problem);
    return natural_less(a.sample, b.sample);
  });
  return out;
}

namespace {

std::vector<NumericsCount> count_numerics(const std::vector<const ResultRecord*>& rs) {
  std::vector<NumericsCount> out;
  for (const auto* r : rs) {
    const Score& s = r->score;
    if (s.precision.empty() && !s.tolerance) continue;  // never evaluated (unsolved, harness error)
    auto same = [&](const NumericsCount& n) { return n.precision == s.precision && n.tolerance == s.tolerance; };
    auto it = std::find_if(out.begin(), out.end(), same);
    if (it == out.end()) it = out.insert(out.end(), {s.precision, s.tolerance, 0});
    ++it->problems;
  }
  return out;
}

Summary summarize_group(const std::string& group, const std::vector<const ResultRecord*>& rs) {
  Summary s;
  s.group = group;
  s.problems = static_cast<int>(rs.size());
  s.numerics = count_numerics(rs);
  if (rs.empty()) return s;
  int correct = 0, faster = 0, t3 = 0, f1 = 0, f15 = 0, f2 = 0, ne = 0, nc = 0;
  double log_e = 0, log_c = 0;
  for (const auto* r : rs) {
    if (!r->correct()) continue;
    const Score& sc = r->score;
    ++correct;
    faster += sc.tier >= 2;
    t3 += sc.tier >= 3;
    if (sc.speedup_vs_eager && *sc.speedup_vs_eager > 0) {
      const double x = *sc.speedup_vs_eager;
      ++ne;
      log_e += std::log(x);
      f1 += x > 1.0;
      f15 += x > 1.5;
      f2 += x > 2.0;
    }
    if (sc.speedup_vs_compile && *sc.speedup_vs_compile > 0) {
      ++nc;
      log_c += std::log(*sc.speedup_vs_compile);
    }
  }
  const double n = static_cast<double>(rs.size());
  s.pass_rate = correct / n;
  s.faster_than_eager = faster / n;
  s.tier3 = t3 / n;
  if (ne > 0) s.geomean_vs_eager = std::exp(log_e / ne);
  if (nc > 0) s.geomean_vs_compile = std::exp(log_c / nc);
  s.fast_1 = f1 / n;
  s.fast_1_5 = f15 / n;
  s.fast_2 = f2 / n;
  return s;
}

}  // namespace

void to_json(nlohmann::json& j, const Summary& s) {
  j = {{"group", s.group},
       {"problems", s.problems},
       {"pass_rate", s.pass_rate},
       {"faster_than_eager", s.faster_than_eager},
       {"tier3", s.tier3},
       {"geomean_vs_eager", opt(s.geomean_vs_eager)},
       {"geomean_vs_compile", opt(s.geomean_vs_compile)},
       {"fast_1.0", s.fast_1},
       {"fast_1.5", s.fast_1_5},
       {"fast_2.0", s.fast_2}};
  j["numerics"] = nlohmann::json::array();
  // Each as {"precision", "atol", "rtol", "problems"}: the tolerance's keys flat, null when not recorded.
  for (const auto& n : s.numerics) {
    nlohmann::json c =
        n.tolerance ? nlohmann::json(*n.tolerance) : nlohmann::json{{"atol", nullptr}, {"rtol", nullptr}};
    c.update({{"precision", n.precision}, {"problems", n.problems}});
    j["numerics"].push_back(c);
  }
}

MeasurementSetting setting_of(const ResultRecord& r) {
  return {r.score.device, r.score.precision, r.score.stop_rule, r.kagent_version, r.score.tolerance};
}

bool measured(const ResultRecord& r) {
  return !r.score.device.empty() || !r.score.precision.empty();
}

std::string setting_text(const MeasurementSetting& s) {
  auto or_not = [](const std::string& v, const char* what) {
    return v.empty() ? fmt::format("{} not recorded", what) : v;
  };
  std::string tol = s.tolerance ? fmt::format(" ({})", tolerance_text(*s.tolerance)) : "";
  return fmt::format(
      "{}, {}{}, {}, {}", or_not(s.device, "device"), or_not(s.precision, "precision"), tol,
      s.stop_rule.empty() ? std::string("stop rule not recorded") : fmt::format("stop rule {}", s.stop_rule),
      s.kagent_version.empty() ? std::string("kagent version not recorded")
                               : fmt::format("kagent {}", s.kagent_version));
}

std::vector<std::pair<MeasurementSetting, int>> measurement_settings(const std::vector<ResultRecord>& records) {
  std::vector<std::pair<MeasurementSetting, int>> out;
  for (const auto& r : records) {
    if (!measured(r)) continue;
    MeasurementSetting s = setting_of(r);
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == s; });
    if (it == out.end())
      out.emplace_back(s, 1);
    else
      ++it->second;
  }
  return out;
}

std::string numerics_text(const std::vector<NumericsCount>& ns) {
  std::string out;
  for (const auto& n : ns) {
    std::string what = n.precision.empty() ? "precision not recorded" : n.precision;
    what += ", " + (n.tolerance ? tolerance_text(*n.tolerance) : std::string("tolerance not recorded"));
    out += fmt::format("{}{} ({} problem{})", out.empty() ? "" : "; ", what, n.problems, n.problems == 1 ? "" : "s");
  }
  if (out.empty()) return out;
  return (ns.size() > 1 ? "judged under MIXED settings: " : "judged under ") + out + "\n";
}

std::vector<Summary> summarize(const std::vector<ResultRecord>& records) {
  std::map<std::string, std::vector<const ResultRecord*>> by_level;
  std::vector<const ResultRecord*> all;
  for (const auto& r : records) {
    by_level[r.level].push_back(&r);
    all.push_back(&r);
  }
  std::vector<Summary> out;
  for (const auto& [level, rs] : by_level) out.push_back(summarize_group(level.empty() ? "(no level)" : level, rs));
  out.push_back(summarize_group("overall", all));
  return out;
}

std::string render_summary(const std::vector<Summary>& summaries, bool markdown) {
  const std::vector<std::string> head = {
      "group",    "problems", "pass",    "> eager", "tier 3", "geomean vs eager", "geomean vs compile",
      "fast_1.0", "fast_1.5", "fast_2.0"};
  auto pct = [](double v) { return fmt::format("{:.1f}%", 100 * v); };
  auto gm = [](const std::optional<double>& v) { return v ? fmt::format("{:.3f}x", *v) : std::string("-"); };
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : summaries)
    rows.push_back({s.group, std::to_string(s.problems), pct(s.pass_rate), pct(s.faster_than_eager), pct(s.tier3),
                    gm(s.geomean_vs_eager), gm(s.geomean_vs_compile), pct(s.fast_1), pct(s.fast_1_5), pct(s.fast_2)});
  const std::string judged = summaries.empty() ? std::string() : numerics_text(summaries.back().numerics);
  TextTable t(head);
  for (auto& r : rows) t.add_row(r);
  if (!markdown) return t.render() + judged;
  const std::string out = t.render_markdown();
  return judged.empty() ? out : out + "\n" + judged;
}

}  // namespace kagent::report
