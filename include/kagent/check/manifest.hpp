#pragma once
// What `kagent check` gates: entries of (operator, kernel, thresholds), from the command line or
// from a manifest (kagent.json in the repository):
//
//   {"defaults": {"vs": "compile", "min_speedup": 1.0, "max_regression": 3, "baseline_ref": "origin/main"},
//    "checks": [{"name": "softmax", "op": "ops/softmax/op.json", "kernel": "kernels/softmax.cu",
//                "min_speedup": 1.1, "vs": "eager", "max_regression": 5, "baseline": "kernels/softmax_v1.cu"}]}
//
// Paths are relative to the manifest's folder. An entry's keys override "defaults", which
// override the command line's flags.
#include <cstddef>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kagent::check {

inline constexpr double kDefaultMaxRegression = 5.0;

struct Thresholds {
  std::optional<double> min_speedup;              // against torch.compile (or eager with vs = "eager"); none: not gated
  std::optional<std::string> vs;                  // "compile" (the default) or "eager"
  std::optional<double> max_regression;           // percent; with a baseline, default kDefaultMaxRegression
  std::optional<std::filesystem::path> baseline;  // the previous kernel, a file
  std::optional<std::string> baseline_ref;        // ... or the kernel's file at this git ref
  std::string against() const { return vs.value_or("compile"); }
  double regression_margin() const { return max_regression.value_or(kDefaultMaxRegression); }
  bool has_baseline() const { return baseline || baseline_ref; }
};

struct CheckEntry {
  std::string name;
  std::filesystem::path op, kernel;
  Thresholds t;
  int manifest_line = 0;  // where the entry starts in the manifest (annotations), 0 from flags
  // Filled by resolve_baselines (run.hpp): the baseline kernel's text, and where it came from.
  std::optional<std::string> baseline_source;
  std::string baseline_note;
};

struct Manifest {
  std::filesystem::path path;
  std::vector<CheckEntry> entries;
};

// Applies `over` on top of `base` (set fields win).
Thresholds merge(const Thresholds& base, const Thresholds& over);

// Reads a thresholds object ("defaults" or an entry), naming `where` ("kagent.json: checks[2]") in
// errors; paths resolve against `dir`. Unknown keys and wrong types are InputError.
Thresholds thresholds_from_json(const nlohmann::json& j, const std::string& where, const std::filesystem::path& dir,
                                bool allow_entry_keys);

// What a manifest may be, checked before it is parsed: an entry is some 200 bytes and 10 values,
// so thousands of kernels fit.
inline constexpr size_t kMaxManifestBytes = size_t{1} << 20;
inline constexpr size_t kMaxManifestValues = size_t{1} << 16;

// Parses a manifest; `flags` are the command line's thresholds (below "defaults"). InputError
// naming the file and key for anything malformed, a missing op or kernel file, duplicate names,
// a file over kMaxManifestBytes or kMaxManifestValues.
Manifest load_manifest(const std::filesystem::path& path, const Thresholds& flags);

}  // namespace kagent::check
