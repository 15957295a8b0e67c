#include "kagent/bench/problems.hpp"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <map>
#include <regex>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/natural_order.hpp"
#include "kagent/eval/candidate_kind.hpp"

namespace kagent::bench {

namespace fs = std::filesystem;

namespace {

bool hidden(const fs::path& p) {
  const std::string n = p.filename().string();
  return !n.empty() && (n[0] == '.' || n[0] == '_');
}

// A problem from a file: a KernelBench .py is named by its stem; an op.json by its folder.
std::optional<Problem> problem_from_file(const fs::path& file, bool explicit_file) {
  const std::string ext = file.extension().string();
  const bool is_op_json = file.filename() == "op.json";
  if (ext != ".py" && !(explicit_file ? ext == ".json" : is_op_json)) return std::nullopt;
  fs::path abs = fs::absolute(file).lexically_normal();
  Problem p;
  p.path = abs;
  if (is_op_json) {
    p.name = abs.parent_path().filename().string();
    p.level = abs.parent_path().parent_path().filename().string();
  } else {
    p.name = abs.stem().string();
    p.level = abs.parent_path().filename().string();
  }
  p.id = p.level.empty() ? p.name : p.level + "/" + p.name;
  return p;
}

}  // namespace

std::vector<Problem> discover_problems(const std::vector<fs::path>& paths) {
  std::vector<Problem> out;
  for (const auto& root : paths) {
    std::error_code ec;
    if (fs::is_regular_file(root, ec)) {
      auto p = problem_from_file(root, true);
      if (!p)
        throw InputError(fmt::format("{}: not a problem (expected a KernelBench .py or an op.json)", root.string()));
      out.push_back(*p);
      continue;
    }
    if (!fs::is_directory(root, ec)) throw InputError(fmt::format("{}: no such file or folder", root.string()));
    size_t before = out.size();
    for (auto it = fs::recursive_directory_iterator(root, fs::directory_options::skip_permission_denied, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (ec) throw InputError(fmt::format("{}: cannot list ({})", root.string(), ec.message()));
      if (hidden(it->path())) {
        if (it->is_directory()) it.disable_recursion_pending();
        continue;
      }
      if (!it->is_regular_file()) continue;
      if (auto p = problem_from_file(it->path(), false)) {
        // A problem folder is data people download: a symlink in it may not bring in a file from
        // elsewhere on the host (bench --agent puts the problem's text in the model's prompt).
        fs::path target;
        if (!resolves_inside(root, it->path(), &target))
          throw InputError(fmt::format(
              "{}: leads to {}, outside {}: the problems found in a folder must stay inside it (name the file "
              "itself to use it)",
              it->path().string(), target.string(), root.string()));
        out.push_back(*p);
      }
    }
    if (out.size() == before)
      throw InputError(fmt::format("{}: no problems in this folder (looked for *.py and */op.json)", root.string()));
  }
  std::sort(out.begin(), out.end(), [](const Problem& a, const Problem& b) { return natural_less(a.id, b.id); });
  for (size_t i = 1; i < out.size(); ++i) {
    if (out[i].id == out[i - 1].id && out[i].path != out[i - 1].path)
      throw InputError(fmt::format("two problems are both named {}: {} and {} (results are keyed by that name)",
                                   out[i].id, out[i - 1].path.string(), out[i].path.string()));
  }
  // The same file given twice (a folder and a file in it) is one problem.
  out.erase(std::unique(out.begin(), out.end(), [](const Problem& a, const Problem& b) { return a.id == b.id; }),
            out.end());
  return out;
}

std::vector<Problem> filter_problems(const std::vector<Problem>& problems, const std::string& regex) {
  std::regex re;
  try {
    re = std::regex(regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw InputError(fmt::format("--filter {}: not a regular expression ({})", regex, e.what()));
  }
  std::vector<Problem> out;
  for (const auto& p : problems)
    if (std::regex_search(p.id, re)) out.push_back(p);
  return out;
}

namespace {

std::optional<long> parse_int(const char* text) {
  if (!text || !*text || std::isspace(static_cast<unsigned char>(*text))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0') return std::nullopt;
  return v;
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto bad = [&](const std::string& why) {
    return InputError(fmt::format("--shard {}: {} (expected I/N with 0 <= I < N, e.g. 0/4)", text, why));
  };
  if (slash == std::string::npos) throw bad("no '/'");
  auto i = parse_int(text.substr(0, slash).c_str());
  auto n = parse_int(text.substr(slash + 1).c_str());
  if (!i || !n) throw bad("not two integers");
  if (*n < 1 || *n > 100000) throw bad("N out of range");
  if (*i < 0 || *i >= *n) throw bad("I out of range");
  return {static_cast<int>(*i), static_cast<int>(*n), "--shard"};
}

std::optional<Shard> shard_from_env(const EnvLookup& lookup) {
  auto env = [&](const char* name) -> const char* { return lookup ? lookup(name) : std::getenv(name); };
  auto number = [&](const char* name) -> std::optional<long> {
    const char* v = env(name);
    if (!v || !*v) return std::nullopt;
    auto n = parse_int(v);
    if (!n) throw InputError(fmt::format("${}={}: not an integer", name, v));
    return n;
  };
  if (auto id = number("SLURM_ARRAY_TASK_ID")) {
    auto count = number("SLURM_ARRAY_TASK_COUNT");
    if (!count)
      throw InputError(
          "SLURM_ARRAY_TASK_ID is set but SLURM_ARRAY_TASK_COUNT is not (Slurm 17.11 or later sets it); "
          "pass --shard I/N");
    long index = *id - number("SLURM_ARRAY_TASK_MIN").value_or(0);
    if (index < 0 || index >= *count)
      throw InputError(
          fmt::format("Slurm array task {} is not one of {} consecutive tasks (an array with a step?); "
                      "pass --shard I/N",
                      *id, *count));
    return Shard{static_cast<int>(index), static_cast<int>(*count), "SLURM_ARRAY_TASK_ID"};
  }
  if (auto index = number("JOB_COMPLETION_INDEX")) {
    auto count = number("KAGENT_SHARD_COUNT");
    if (!count)
      throw InputError(
          "JOB_COMPLETION_INDEX is set but KAGENT_SHARD_COUNT is not: set it to the Job's completions "
          "(see examples/cluster/kagent-bench-job.yaml) or pass --shard I/N");
    if (*count < 1 || *index < 0 || *index >= *count)
      throw InputError(fmt::format("JOB_COMPLETION_INDEX={} is not below KAGENT_SHARD_COUNT={}", *index, *count));
    return Shard{static_cast<int>(*index), static_cast<int>(*count), "JOB_COMPLETION_INDEX"};
  }
  return std::nullopt;
}

std::vector<Problem> take_shard(const std::vector<Problem>& problems, const Shard& shard) {
  std::vector<Problem> out;
  for (size_t i = 0; i < problems.size(); ++i)
    if (static_cast<int>(i % static_cast<size_t>(shard.count)) == shard.index) out.push_back(problems[i]);
  return out;
}

std::optional<fs::path> find_solution(const fs::path& dir, const Problem& p) {
  std::error_code ec;
  // The kinds in their listed order (a plan candidate first, then a ModelNew solution), each by its
  // extensions; never the problem file itself, when the solutions folder is the problems folder.
  for (const CandidateKind* kind : candidate_kinds())
    for (const std::string& ext : kind->extensions())
      for (const fs::path& c : {dir / p.level / (p.name + ext), dir / (p.name + ext)})
        if (fs::is_regular_file(c, ec) && !fs::equivalent(c, p.path, ec)) return fs::absolute(c).lexically_normal();
  return std::nullopt;
}

}  // namespace kagent::bench
