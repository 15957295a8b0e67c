#include "kagent/eval/baselines_file.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/file_lock.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/utc_time.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent {

void to_json(nlohmann::json& j, const BaselineEntry& e) {
  j = {{"problem", e.problem},
       {"source_hash", e.key.source_hash},
       {"precision", e.key.precision},
       {"allow_tf32", e.key.allow_tf32},
       {"gpu_name", e.key.gpu_name},
       {"torch", e.key.torch},
       {"protocol", e.key.protocol},
       {"stop_rule", e.stop_rule},
       {"eager", e.eager},
       {"compile", e.compile ? nlohmann::json(*e.compile) : nlohmann::json()},
       {"compile_error", e.compile_error},
       {"measured", e.measured},
       {"cache_key", e.cache_key}};
}

void from_json(const nlohmann::json& j, BaselineEntry& e) {
  j.at("source_hash").get_to(e.key.source_hash);
  j.at("precision").get_to(e.key.precision);
  j.at("allow_tf32").get_to(e.key.allow_tf32);
  j.at("gpu_name").get_to(e.key.gpu_name);
  j.at("torch").get_to(e.key.torch);
  j.at("protocol").get_to(e.key.protocol);
  j.at("eager").get_to(e.eager);
  e.compile.reset();
  if (const auto& c = j.at("compile"); !c.is_null()) e.compile = c.get<TimingSummary>();
  e.problem = j.value("problem", "");
  if (j.contains("stop_rule")) j.at("stop_rule").get_to(e.stop_rule);
  e.compile_error = j.value("compile_error", "");
  e.measured = j.value("measured", "");
  e.cache_key = j.value("cache_key", "");
}

namespace {

bool same_key(const BaselineKey& a, const BaselineKey& b) {
  return a.source_hash == b.source_hash && a.precision == b.precision && a.allow_tf32 == b.allow_tf32 &&
         a.gpu_name == b.gpu_name && a.torch == b.torch && a.protocol == b.protocol;
}

std::string numerics_text(const BaselineKey& k) {
  return fmt::format("{} (TF32 {})", k.precision, k.allow_tf32 ? "on" : "off");
}

// The fields of `have` (an entry's) that differ from `want` (this evaluation's), as "gpu_name: the
// file's 'X', here 'Y'".
std::vector<std::string> differences(const BaselineKey& have, const BaselineKey& want) {
  std::vector<std::string> d;
  auto note = [&](const char* field, const std::string& a, const std::string& b) {
    if (a != b) d.push_back(fmt::format("{}: the file's '{}', here '{}'", field, a, b));
  };
  note("gpu_name", have.gpu_name, want.gpu_name);
  note("torch", have.torch, want.torch);
  note("protocol", have.protocol, want.protocol);
  note("precision", numerics_text(have), numerics_text(want));
  return d;
}

std::vector<BaselineEntry> entries_of(const std::filesystem::path& file) {
  const std::string text = read_text_file(file);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: not JSON ({})", file.string(), e.what()));
  }
  if (!j.is_object() || j.value("format", "") != kBaselinesFormat)
    throw InputError(
        fmt::format("{}: not a baselines file (its \"format\" is not \"{}\"; `kagent ref PROBLEM "
                    "--export-baselines FILE` writes one)",
                    file.string(), kBaselinesFormat));
  std::vector<BaselineEntry> out;
  const nlohmann::json& list = j.contains("entries") ? j["entries"] : nlohmann::json::array();
  if (!list.is_array()) throw InputError(fmt::format("{}: \"entries\" is not an array", file.string()));
  for (size_t i = 0; i < list.size(); ++i) {
    try {
      out.push_back(list[i].get<BaselineEntry>());
    } catch (const nlohmann::json::exception& e) {
      throw InputError(fmt::format("{}: entries[{}]: {}", file.string(), i, e.what()));
    }
  }
  return out;
}

}  // namespace

BaselinesFile BaselinesFile::read(const std::filesystem::path& file_or_dir) {
  BaselinesFile f;
  f.path_ = file_or_dir;
  std::error_code ec;
  if (!std::filesystem::is_directory(file_or_dir, ec)) {
    f.entries_ = entries_of(file_or_dir);  // InputError naming it when missing
    return f;
  }
  std::vector<std::filesystem::path> files;
  for (const auto& d : std::filesystem::directory_iterator(file_or_dir, ec))
    if (d.path().extension() == ".json" && d.is_regular_file(ec)) files.push_back(d.path());
  if (ec) throw InputError(fmt::format("{}: cannot list the folder ({})", file_or_dir.string(), ec.message()));
  if (files.empty()) throw InputError(fmt::format("{}: no *.json baselines file in the folder", file_or_dir.string()));
  std::sort(files.begin(), files.end());
  for (const auto& p : files)
    for (BaselineEntry& e : entries_of(p)) {
      const bool seen = std::any_of(f.entries_.begin(), f.entries_.end(),
                                    [&](const BaselineEntry& x) { return same_key(x.key, e.key); });
      if (!seen) f.entries_.push_back(std::move(e));
    }
  return f;
}

const BaselineEntry& BaselinesFile::find(const BaselineKey& key, const std::string& problem) const {
  std::vector<const BaselineEntry*> same_problem;
  for (const BaselineEntry& e : entries_) {
    if (same_key(e.key, key)) return e;
    if (e.key.source_hash == key.source_hash) same_problem.push_back(&e);
  }
  if (same_problem.empty())
    throw InputError(
        fmt::format("--baselines {}: no entry for {} (source hash {}; an edited problem file is another problem); "
                    "`kagent ref {} --export-baselines FILE` measures and adds one",
                    path_.string(), problem, key.source_hash, problem));
  // The entry nearest this evaluation: the fewest fields apart.
  std::vector<std::string> nearest = differences(same_problem.front()->key, key);
  for (const BaselineEntry* e : same_problem)
    if (auto d = differences(e->key, key); d.size() < nearest.size()) nearest = std::move(d);
  std::string fields;
  for (const std::string& d : nearest) fields += (fields.empty() ? "" : "; ") + d;
  throw InputError(fmt::format(
      "--baselines {}: the baselines of {} there were measured elsewhere ({}): times from another GPU model, "
      "torch version, measurement protocol or precision would score this one wrongly; export them here "
      "(`kagent ref {} --export-baselines FILE`)",
      path_.string(), problem, fields, problem));
}

void BaselinesFile::add(const std::filesystem::path& file, const BaselineEntry& e) {
  std::error_code ec;
  FileLock lock(std::filesystem::path(file.string() + ".lock"));
  std::vector<BaselineEntry> entries;
  if (std::filesystem::exists(file, ec)) entries = entries_of(file);
  BaselineEntry added = e;
  if (added.measured.empty()) added.measured = utc_timestamp();
  auto same =
      std::find_if(entries.begin(), entries.end(), [&](const BaselineEntry& x) { return same_key(x.key, added.key); });
  if (same != entries.end())
    *same = added;
  else
    entries.push_back(added);
  nlohmann::json j = {{"format", kBaselinesFormat}, {"entries", entries}};
  write_file_atomic(file, j.dump(1) + "\n");
}

}  // namespace kagent
