#pragma once
// PyTorch baselines shared across machines: `kagent ref PROBLEM --export-baselines FILE` adds the
// problem's measured eager and torch.compile times to FILE, and `kagent eval|bench|serve
// --baselines FILE|DIR` scores against them instead of measuring. torch.compile's time moves a few
// percent between two machines of one GPU model, and tier 3's line (0.95x torch.compile) sits
// inside that spread: nodes that each measure their own give one candidate different tiers.
//
// An entry is keyed by what makes its times valid: the problem (its source's hash), the precision
// with its numerics (TF32 on or off), the GPU model, the torch version and how baselines are
// measured (the reference server's protocol). A lookup whose problem has an entry measured on
// another GPU model, torch version or protocol is refused, naming the field that differs; one
// with no entry for the problem is refused too (a cluster scoring some problems against the file
// and others against each node's own times would not score alike).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/protocol/stats.hpp"

namespace kagent {

// What makes a baseline valid for an evaluation (RefSignature's figures; precision_name's names).
struct BaselineKey {
  std::string source_hash;
  std::string precision;
  bool allow_tf32 = false;
  std::string gpu_name;
  std::string torch;
  std::string protocol;
};

struct BaselineEntry {
  BaselineKey key;
  std::string problem;  // the problem file's name when exported: for people, never matched
  StopRule stop_rule;   // what the times were measured under: recorded, never matched
  TimingSummary eager;
  std::optional<TimingSummary> compile;
  std::string compile_error;  // why torch.compile has no time
  std::string measured;       // UTC date and time of the export
  std::string cache_key;      // the measuring machine's cache key of them (RefBaselines::key)
};

void to_json(nlohmann::json& j, const BaselineEntry& e);
void from_json(const nlohmann::json& j, BaselineEntry& e);

class BaselinesFile {
 public:
  // A file written by add(), or a folder whose *.json files all are (read in name order; of two
  // entries with one key the first read is used, on every node alike). InputError naming the file
  // and what is wrong: missing, not JSON, another format, an entry without a field.
  static BaselinesFile read(const std::filesystem::path& file_or_dir);

  // The entry for `key`; InputError when there is none, naming `problem`, the file, and, where the
  // problem has entries for other machines, precisions or protocols, the field that differs and
  // both values.
  const BaselineEntry& find(const BaselineKey& key, const std::string& problem) const;

  // Adds `e` to `file` (made if missing), replacing an entry of the same key: read, merged and
  // renamed into place under an exclusive lock on FILE.lock, so exports from several processes
  // never lose one another's entries and readers never see half a file.
  static void add(const std::filesystem::path& file, const BaselineEntry& e);

  const std::filesystem::path& path() const { return path_; }
  const std::vector<BaselineEntry>& entries() const { return entries_; }

 private:
  std::filesystem::path path_;
  std::vector<BaselineEntry> entries_;
};

// The value of a file's "format": files of another are refused.
inline constexpr const char* kBaselinesFormat = "kagent-baselines-1";

}  // namespace kagent
