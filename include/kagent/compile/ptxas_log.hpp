#pragma once
// Parses the "ptxas info" lines NVRTC writes to the program log with --ptxas-options=-v.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kagent {

struct PtxasFunctionInfo {
  int registers = 0;
  int64_t smem = 0;
  int64_t stack_frame = 0;
  int64_t spill_stores = 0;
  int64_t spill_loads = 0;
  bool is_entry = false;
};

// Keyed by (mangled) function name.
std::map<std::string, PtxasFunctionInfo> parse_ptxas_log(std::string_view log);

// The log without "ptxas info" lines (what the user sees as warnings and errors).
std::string strip_ptxas_info(std::string_view log);

}  // namespace kagent
