#pragma once
// How `kagent <command> --help` reads: CLI11 prints each flag's description on one line however
// long it is; HelpFormatter wraps descriptions at word boundaries to 100 columns, and each
// subcommand ends its help with examples a user can copy, then the exit codes.
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

namespace kagent::cli {

inline constexpr size_t kHelpWidth = 100;

// `text` broken at spaces into lines of at most `width` characters (a longer word stays whole);
// its own newlines are kept.
std::string wrap_text(const std::string& text, size_t width);

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter();
  std::string make_option_desc(const CLI::Option* opt) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
  std::string make_description(const CLI::App* app) const override;
  std::string make_footer(const CLI::App* app) const override;
};

// One example: the command line, and what it does.
struct HelpExample {
  std::string command;
  std::string what;
};
// Sets `sub`'s footer: "Examples:" with each command line and its comment, then the exit codes.
void set_examples(CLI::App* sub, const std::vector<HelpExample>& examples);

// The line every help ends with.
extern const char* const kExitCodesHelp;

}  // namespace kagent::cli
