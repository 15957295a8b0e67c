#include "kagent/profile/peaks.hpp"

#include <cctype>
#include <ctime>

#include <fmt/format.h>

#include "kagent/common/files.hpp"
#include "kagent/common/utc_time.hpp"
#include "kagent/common/versioned.hpp"

namespace kagent::profile {

std::filesystem::path peaks_file(const std::filesystem::path& cache_dir, const std::string& uuid, int driver_version) {
  std::string name = uuid.empty() ? std::string("unknown-gpu") : uuid;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-') c = '_';
  return cache_dir / "peaks" / fmt::format("{}-driver{}.json", name, driver_version);
}

void to_json(nlohmann::json& j, const PeaksFile& f) {
  j = f.peaks;
  j["version"] = f.version;
}

void from_json(const nlohmann::json& j, PeaksFile& f) {
  require_version(j, kPeaksFileVersion, "the peaks cache", "kagent");
  f.version = kPeaksFileVersion;
  f.peaks = j.get<DevicePeaks>();
}

std::optional<DevicePeaks> read_peaks(const std::filesystem::path& file, std::string* why) {
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    if (why) *why = fmt::format("{}: not cached", file.string());
    return std::nullopt;
  }
  try {
    DevicePeaks p = nlohmann::json::parse(read_text_file(file)).get<PeaksFile>().peaks;
    if (p.method != kPeaksMethod || p.copy_gbs <= 0 || p.fp32_gflops <= 0) {
      if (why) *why = fmt::format("{}: measured by another method ({}) or empty", file.string(), p.method);
      return std::nullopt;
    }
    p.cached = true;
    return p;
  } catch (const std::exception& e) {
    // A damaged file, or one of another version, is measured again and overwritten.
    if (why) *why = fmt::format("{}: {}", file.string(), e.what());
    return std::nullopt;
  }
}

void write_peaks(const std::filesystem::path& file, DevicePeaks& peaks) {
  if (peaks.measured_at.empty()) peaks.measured_at = utc_timestamp();
  peaks.cached = false;
  std::filesystem::create_directories(file.parent_path());
  write_file_atomic(file, nlohmann::json(PeaksFile{kPeaksFileVersion, peaks}).dump(2) + "\n");
}

}  // namespace kagent::profile
