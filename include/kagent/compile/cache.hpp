#pragma once
// On-disk cache of compiled candidates under $KAGENT_CACHE_DIR, $XDG_CACHE_HOME/kagent or
// ~/.cache/kagent. One file per entry, written to a temporary name and renamed into place, so
// concurrent kagent processes never read a partial entry (last writer wins; both are valid).
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kagent {

struct CacheEntry {
  nlohmann::json meta;  // what the entry was built from, and the compile log and kernel table
  std::string cubin;
};

class CompileCache {
 public:
  explicit CompileCache(std::filesystem::path dir);
  static std::filesystem::path default_dir();

  std::optional<CacheEntry> get(const std::string& key) const;  // nullopt on miss or corrupt entry
  void put(const std::string& key, const CacheEntry& entry) const;  // failures are logged, not thrown
  const std::filesystem::path& dir() const { return dir_; }

 private:
  std::filesystem::path file_for(const std::string& key) const;
  std::filesystem::path dir_;
};

}  // namespace kagent
