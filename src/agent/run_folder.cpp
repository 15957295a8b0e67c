#include "kagent/agent/run_folder.hpp"

namespace kagent::agent {

std::string run_folder_name(std::string_view op_name) {
  constexpr size_t kMax = 80;
  std::string out;
  for (char ch : op_name) {
    unsigned char c = static_cast<unsigned char>(ch);
    auto alnum = [](unsigned char x) {
      return (x >= 'a' && x <= 'z') || (x >= 'A' && x <= 'Z') || (x >= '0' && x <= '9');
    };
    // A '.' only right after a letter or digit: no leading dot, no "..".
    bool keep =
        alnum(c) || c == '-' || c == '_' || (c == '.' && !out.empty() && alnum(static_cast<unsigned char>(out.back())));
    char next = keep ? ch : '_';
    if (next == '_' && !out.empty() && out.back() == '_') continue;
    out += next;
    if (out.size() >= kMax) break;
  }
  while (!out.empty() && (out.back() == '_' || out.back() == '.')) out.pop_back();
  while (!out.empty() && out.front() == '_') out.erase(0, 1);
  if (out.empty() || out == "." || out == "..") out = "op";
  return out;
}

}  // namespace kagent::agent
