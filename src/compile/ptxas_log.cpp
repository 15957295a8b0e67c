#include "kagent/compile/ptxas_log.hpp"

#include <cstdlib>
#include <sstream>

namespace kagent {

namespace {

// The number just before `unit` in line ("2048 bytes smem" -> 2048), or 0.
int64_t number_before(std::string_view line, std::string_view unit) {
  size_t at = line.find(unit);
  if (at == std::string_view::npos || at == 0) return 0;
  size_t end = at;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && line[begin - 1] >= '0' && line[begin - 1] <= '9') --begin;
  if (begin == end) return 0;
  return std::strtoll(std::string(line.substr(begin, end - begin)).c_str(), nullptr, 10);
}

// The text between the first pair of single quotes after `marker`.
std::string quoted_after(std::string_view line, std::string_view marker) {
  size_t at = line.find(marker);
  if (at == std::string_view::npos) return {};
  size_t open = line.find('\'', at);
  size_t close = open == std::string_view::npos ? open : line.find('\'', open + 1);
  if (close == std::string_view::npos) return {};
  return std::string(line.substr(open + 1, close - open - 1));
}

}  // namespace

std::map<std::string, PtxasFunctionInfo> parse_ptxas_log(std::string_view log) {
  std::map<std::string, PtxasFunctionInfo> out;
  std::string current;
  std::istringstream in{std::string(log)};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ptxas", 0) != 0) continue;
    if (auto name = quoted_after(line, "Compiling entry function"); !name.empty()) {
      current = name;
      out[current].is_entry = true;
    } else if (size_t at = line.find("Function properties for "); at != std::string::npos) {
      current = line.substr(at + 24);
      while (!current.empty() && (current.back() == ' ' || current.back() == '\r')) current.pop_back();
      out[current];
    } else if (current.empty()) {
      continue;
    } else if (line.find("bytes stack frame") != std::string::npos) {
      auto& f = out[current];
      f.stack_frame = number_before(line, "bytes stack frame");
      f.spill_stores = number_before(line, "bytes spill stores");
      f.spill_loads = number_before(line, "bytes spill loads");
    } else if (line.find("Used ") != std::string::npos && line.find(" registers") != std::string::npos) {
      auto& f = out[current];
      f.registers = static_cast<int>(number_before(line, "registers"));
      f.smem = number_before(line, "bytes smem");
    }
  }
  return out;
}

std::string strip_ptxas_info(std::string_view log) {
  std::string out;
  std::istringstream in{std::string(log)};
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("ptxas info", 0) == 0 || line.rfind("ptxas         .", 0) == 0) continue;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    out += line;
    out += '\n';
  }
  return out;
}

}  // namespace kagent
