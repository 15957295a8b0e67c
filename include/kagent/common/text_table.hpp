#pragma once
#include <string>
#include <vector>

namespace kagent {

// A plain aligned text table for the terminal: header, rows, numeric columns right-aligned; or the
// same table in Markdown (the first column left-aligned, the others right-aligned).
class TextTable {
 public:
  explicit TextTable(std::vector<std::string> header) : header_(std::move(header)) {}
  void add_row(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string render() const;
  std::string render_markdown() const;

 private:
  std::vector<std::string> header_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace kagent
