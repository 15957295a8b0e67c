#include "kagent/compile/cache.hpp"

#include <cstdlib>
#include <cstring>

#include <spdlog/spdlog.h>

#include "kagent/common/files.hpp"

namespace kagent {

namespace {
// Entry layout: magic, u32 metadata length, metadata JSON, cubin bytes.
constexpr std::string_view kMagic = "KAGENTC1";
}

CompileCache::CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

std::filesystem::path CompileCache::default_dir() {
  if (const char* d = std::getenv("KAGENT_CACHE_DIR"); d != nullptr && *d != '\0') return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != '\0')
    return std::filesystem::path(x) / "kagent";
  if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    return std::filesystem::path(h) / ".cache" / "kagent";
  return std::filesystem::temp_directory_path() / "kagent-cache";
}

std::filesystem::path CompileCache::file_for(const std::string& key) const {
  // Two-character fan-out keeps folders small on machines that compile thousands of candidates.
  return dir_ / "cubin" / key.substr(0, 2) / (key + ".kc");
}

std::optional<CacheEntry> CompileCache::get(const std::string& key) const {
  std::string blob;
  try {
    auto path = file_for(key);
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    blob = read_text_file(path);
  } catch (const std::exception& e) {
    spdlog::debug("cache read failed: {}", e.what());
    return std::nullopt;
  }
  if (blob.size() < kMagic.size() + 4 || blob.compare(0, kMagic.size(), kMagic) != 0) return std::nullopt;
  uint32_t meta_len = 0;
  std::memcpy(&meta_len, blob.data() + kMagic.size(), 4);
  size_t meta_at = kMagic.size() + 4;
  if (meta_len > blob.size() - meta_at) return std::nullopt;
  CacheEntry entry;
  entry.meta = nlohmann::json::parse(blob.substr(meta_at, meta_len), nullptr, /*allow_exceptions=*/false);
  if (entry.meta.is_discarded() || !entry.meta.is_object()) return std::nullopt;
  entry.cubin = blob.substr(meta_at + meta_len);
  return entry;
}

void CompileCache::put(const std::string& key, const CacheEntry& entry) const {
  try {
    auto path = file_for(key);
    std::filesystem::create_directories(path.parent_path());
    std::string meta = entry.meta.dump();
    std::string blob(kMagic);
    uint32_t len = static_cast<uint32_t>(meta.size());
    blob.append(reinterpret_cast<const char*>(&len), 4);
    blob += meta;
    blob += entry.cubin;
    write_file_atomic(path, blob);
  } catch (const std::exception& e) {
    // A cache that cannot be written costs time, not correctness.
    spdlog::warn("compile cache: could not store an entry in {}: {}", dir_.string(), e.what());
  }
}

}  // namespace kagent
