#include "kagent/common/text_table.hpp"

#include <algorithm>
#include <cctype>

namespace kagent {

namespace {
// Numbers (and "12.5%", "3.1x") are right-aligned so their digits line up.
bool looks_numeric(const std::string& s) {
  if (s.empty() || !(std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-')) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isdigit(c) || c == '.' || c == '-' || c == '%' || c == 'x' || c == '/';
  });
}
}  // namespace

std::string TextTable::render() const {
  std::vector<size_t> width(header_.size(), 0);
  for (size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
  for (const auto& row : rows_)
    for (size_t c = 0; c < row.size() && c < width.size(); ++c) width[c] = std::max(width[c], row[c].size());

  std::string out;
  auto emit = [&](const std::vector<std::string>& row, bool header) {
    for (size_t c = 0; c < width.size(); ++c) {
      const std::string cell = c < row.size() ? row[c] : "";
      const size_t pad = width[c] - cell.size();
      bool right = !header && c > 0 && looks_numeric(cell);
      if (c > 0) out += "  ";
      if (right) out.append(pad, ' ');
      out += cell;
      if (!right && c + 1 < width.size()) out.append(pad, ' ');
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
  };
  emit(header_, true);
  for (const auto& row : rows_) emit(row, false);
  return out;
}

std::string TextTable::render_markdown() const {
  std::string out = "|";
  for (const auto& h : header_) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < header_.size(); ++i) out += i == 0 ? " --- |" : " ---: |";
  out += "\n";
  for (const auto& r : rows_) {
    out += "|";
    for (const auto& c : r) out += " " + c + " |";
    out += "\n";
  }
  return out;
}

}  // namespace kagent
