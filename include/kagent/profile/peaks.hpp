#pragma once
// The cache of measured device peaks (DevicePeaks, measured by kagent-runner's "peaks" request):
// one small JSON file per GPU under the cache folder, named by the GPU's UUID and the driver
// version, so that a new driver or another GPU of the same model is measured afresh. Files of
// an older measurement method or another file version are ignored (measured again).
#include <filesystem>
#include <optional>
#include <string>

#include "kagent/protocol/protocol.hpp"

namespace kagent::profile {

// The measurement's version: change it when peaks.cpp (runner) measures differently.
inline constexpr const char* kPeaksMethod =
    "d2d-copy-1GiB+stream-read-write-copy+fp32-gemm-8192-cublas-or-kagent+mma-sync+fp64-v4";

// The file's format: bump when PeaksFile's JSON changes shape.
inline constexpr int kPeaksFileVersion = 1;

// One cache file: the peaks' fields and "version", in one JSON object.
struct PeaksFile {
  int version = kPeaksFileVersion;
  DevicePeaks peaks;
};
void to_json(nlohmann::json& j, const PeaksFile& f);
// Throws EnvError for another version (naming both), nlohmann's errors for a damaged file.
void from_json(const nlohmann::json& j, PeaksFile& f);

std::filesystem::path peaks_file(const std::filesystem::path& cache_dir, const std::string& uuid, int driver_version);

// The cached peaks, or nullopt when the file is missing, unreadable, of another version or from
// another method; then *why (when given) says which, naming the file.
std::optional<DevicePeaks> read_peaks(const std::filesystem::path& file, std::string* why = nullptr);

// Writes atomically (a reader never sees half a file); stamps `peaks.measured_at` (UTC) when empty.
void write_peaks(const std::filesystem::path& file, DevicePeaks& peaks);

}  // namespace kagent::profile
