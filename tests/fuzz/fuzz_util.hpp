#pragma once
// Shared by the libFuzzer targets: what a target may throw for bad input (kagent's own errors,
// which the CLI turns into exit codes) is fine; anything else escapes, and libFuzzer reports it
// as a crash, as it does sanitizer reports, stack overflows and timeouts.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

namespace kagent::fuzz {

inline std::string_view text_of(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// Readers that take a path get the input through one file per process.
inline std::filesystem::path scratch_file(std::string_view contents, const char* suffix) {
  static const std::filesystem::path dir = [] {
    auto d = std::filesystem::temp_directory_path() / ("kagent-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  const auto path = dir / (std::string("input") + suffix);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f != nullptr) {
    std::fwrite(contents.data(), 1, contents.size(), f);
    std::fclose(f);
  }
  return path;
}

}  // namespace kagent::fuzz
