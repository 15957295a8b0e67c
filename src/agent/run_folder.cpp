#include "kagent/agent/run_folder.hpp"

namespace kagent::agent {

std::string run_folder_name(std::string_view op_name) {
  constexpr size_t kMax = 80;
  std::string out;
  for (char ch : op_name) {
    unsigned char c = static_cast<unsigned char>(ch);
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
                (c == '.' && !out.empty());
    char next = keep ? ch : '_';
    if (next == '_' && !out.empty() && out.back() == '_') continue;
    out += next;
    if (out.size() >= kMax) break;
  }
  // "a.." would still be fine as a component, but "_.." style names read badly: trim the ends.
  while (!out.empty() && (out.back() == '_' || out.back() == '.')) out.pop_back();
  while (!out.empty() && out.front() == '_') out.erase(0, 1);
  if (out.empty() || out == "." || out == "..") out = "op";
  return out;
}

}  // namespace kagent::agent
