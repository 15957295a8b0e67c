#include "kagent/check/manifest.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"
#include "kagent/common/json_text.hpp"

namespace kagent::check {

namespace fs = std::filesystem;

Thresholds merge(const Thresholds& base, const Thresholds& over) {
  Thresholds t = base;
  if (over.min_speedup) t.min_speedup = over.min_speedup;
  if (over.vs) t.vs = over.vs;
  if (over.max_regression) t.max_regression = over.max_regression;
  if (over.baseline) {
    t.baseline = over.baseline;
    t.baseline_ref.reset();
  }
  if (over.baseline_ref) {
    t.baseline_ref = over.baseline_ref;
    t.baseline.reset();
  }
  return t;
}

Thresholds thresholds_from_json(const nlohmann::json& j, const std::string& where, const fs::path& dir,
                                bool allow_entry_keys) {
  if (!j.is_object()) throw InputError(fmt::format("{}: expected an object, got {}", where, show_json(j)));
  static const std::set<std::string> kThreshold = {"min_speedup", "vs", "max_regression", "baseline", "baseline_ref"};
  static const std::set<std::string> kEntry = {"name", "op", "kernel"};
  Thresholds t;
  for (const auto& [key, v] : j.items()) {
    const std::string at = fmt::format("{}.{}", where, key);
    if (!kThreshold.count(key) && !(allow_entry_keys && kEntry.count(key)))
      throw InputError(fmt::format("{}: unknown key (known: {}{})", at,
                                   "min_speedup, vs, max_regression, baseline, "
                                   "baseline_ref",
                                   allow_entry_keys ? ", name, op, kernel" : ""));
    if (key == "min_speedup" || key == "max_regression") {
      if (!v.is_number() || v.get<double>() < 0)
        throw InputError(fmt::format("{}: expected a non-negative number, got {}", at, show_json(v)));
      (key == "min_speedup" ? t.min_speedup : t.max_regression) = v.get<double>();
    } else if (key == "vs") {
      if (!v.is_string() || (v != "compile" && v != "eager"))
        throw InputError(fmt::format("{}: expected \"compile\" or \"eager\", got {}", at, show_json(v)));
      t.vs = v.get<std::string>();
    } else if (key == "baseline" || key == "baseline_ref") {
      if (!v.is_string() || v.get<std::string>().empty())
        throw InputError(fmt::format("{}: expected a non-empty string, got {}", at, show_json(v)));
      if (key == "baseline")
        t.baseline = (dir / v.get<std::string>()).lexically_normal();
      else
        t.baseline_ref = v.get<std::string>();
    }
  }
  if (t.baseline && t.baseline_ref) throw InputError(fmt::format("{}: give baseline or baseline_ref, not both", where));
  return t;
}

namespace {

// The line on which the n-th element of "checks" starts, found by walking the text: good enough
// for an annotation, and never wrong by more than the entry's own lines.
int entry_line(const std::string& text, size_t index) {
  size_t pos = text.find("\"checks\"");
  if (pos == std::string::npos) return 0;
  pos = text.find('[', pos);
  int depth = 0;
  size_t seen = 0;
  bool in_string = false;
  for (size_t i = pos + 1; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{' && depth++ == 0) {
      if (seen++ == index) return 1 + static_cast<int>(std::count(text.begin(), text.begin() + i, '\n'));
    }
    if (c == '}') --depth;
    if (c == ']' && depth == 0) break;
  }
  return 0;
}

}  // namespace

Manifest load_manifest(const fs::path& path, const Thresholds& flags) {
  const std::string text = read_text_file(path, kMaxManifestBytes);
  const std::string file = path.string();
  JsonLimits limits;
  limits.max_values = kMaxManifestValues;
  const nlohmann::json j = parse_json_input<nlohmann::json>(text, file, limits);
  if (!j.is_object()) throw InputError(fmt::format("{}: expected an object with \"checks\"", file));
  for (const auto& [key, v] : j.items())
    if (key != "defaults" && key != "checks")
      throw InputError(fmt::format("{}: {}: unknown key (known: defaults, checks)", file, key));
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  Thresholds defaults = flags;
  if (j.contains("defaults"))
    defaults = merge(flags, thresholds_from_json(j["defaults"], file + ": defaults", dir, false));
  if (!j.contains("checks") || !j["checks"].is_array() || j["checks"].empty())
    throw InputError(fmt::format("{}: checks: expected a non-empty array of entries", file));
  Manifest m;
  m.path = path;
  std::set<std::string> names;
  for (size_t i = 0; i < j["checks"].size(); ++i) {
    const auto& e = j["checks"][i];
    const std::string where = fmt::format("{}: checks[{}]", file, i);
    CheckEntry c;
    c.t = merge(defaults, thresholds_from_json(e, where, dir, true));
    for (const char* key : {"op", "kernel"}) {
      if (!e.contains(key) || !e[key].is_string())
        throw InputError(fmt::format("{}.{}: required (a path relative to {})", where, key, dir.string()));
      fs::path p = (dir / e[key].get<std::string>()).lexically_normal();
      std::error_code ec;
      if (!fs::is_regular_file(p, ec)) throw InputError(fmt::format("{}.{}: {}: no such file", where, key, p.string()));
      (std::string(key) == "op" ? c.op : c.kernel) = p;
    }
    if (c.t.baseline && !fs::is_regular_file(*c.t.baseline))
      throw InputError(fmt::format("{}.baseline: {}: no such file", where, c.t.baseline->string()));
    if (e.contains("name") && (!e["name"].is_string() || e["name"].get<std::string>().empty()))
      throw InputError(fmt::format("{}.name: expected a non-empty string, got {}", where, show_json(e["name"])));
    c.name = e.contains("name") ? e["name"].get<std::string>() : c.kernel.stem().string();
    if (!names.insert(c.name).second)
      throw InputError(fmt::format("{}.name: \"{}\" is used twice (names identify entries in reports)", where, c.name));
    c.manifest_line = entry_line(text, i);
    m.entries.push_back(std::move(c));
  }
  return m;
}

}  // namespace kagent::check
