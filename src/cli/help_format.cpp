#include "help_format.hpp"

#include <sstream>

namespace kagent::cli {

const char* const kExitCodesHelp =
    "Exit codes: 0 ok, 1 the candidate or gate failed, 2 bad input or usage, 3 environment missing (no GPU, no "
    "endpoint, no Python/torch).";

std::string wrap_text(const std::string& text, size_t width) {
  std::string out;
  std::istringstream lines(text);
  std::string line;
  bool first_line = true;
  while (std::getline(lines, line)) {
    if (!first_line) out += '\n';
    first_line = false;
    // Leading spaces (an indented example) are kept on the line's first piece.
    size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    std::string current = line.substr(0, indent);
    const size_t empty_size = current.size();
    std::istringstream words(line.substr(indent));
    std::string word;
    while (words >> word) {
      if (current.size() > empty_size && current.size() + 1 + word.size() > width) {
        out += current + '\n';
        current = std::string(empty_size, ' ');
      } else if (current.size() > empty_size) {
        current += ' ';
      }
      current += word;
    }
    out += current;
  }
  if (!text.empty() && text.back() == '\n') out += '\n';
  return out;
}

HelpFormatter::HelpFormatter() {
  column_width(30);
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
  // CLI11 indents the description's continuation lines to the column itself.
  return wrap_text(CLI::Formatter::make_option_desc(opt), kHelpWidth - get_column_width());
}

std::string HelpFormatter::make_subcommand(const CLI::App* sub) const {
  // "  name<padding>description\n": the description part wrapped, its lines under its first.
  std::string line = CLI::Formatter::make_subcommand(sub);
  const size_t col = get_column_width();
  if (line.size() <= kHelpWidth + 1 || line.size() <= col) return line;
  std::string desc = wrap_text(line.substr(col), kHelpWidth - col);
  std::string out = line.substr(0, col);
  for (char c : desc) {
    out += c;
    if (c == '\n') out += std::string(col, ' ');
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == '\n')) out.pop_back();
  return out + "\n";
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  return wrap_text(CLI::Formatter::make_description(app), kHelpWidth);
}

std::string HelpFormatter::make_footer(const CLI::App* app) const {
  return wrap_text(CLI::Formatter::make_footer(app), kHelpWidth);
}

void set_examples(CLI::App* sub, const std::vector<HelpExample>& examples) {
  std::string footer = "Examples:\n";
  for (const auto& e : examples) footer += "  " + e.command + "\n      " + e.what + "\n";
  sub->footer(footer + "\n" + kExitCodesHelp);
}

}  // namespace kagent::cli
