// `kagent --help` text (src/cli/help_format.hpp): descriptions wrapped at 100 columns under their
// column, and each subcommand's help ending with examples and the exit codes.
#include <gtest/gtest.h>

#include "help_format.hpp"

using namespace kagent::cli;

TEST(HelpFormat, WrapBreaksAtSpacesAndKeepsNewlinesAndIndent) {
  EXPECT_EQ(wrap_text("one two three four", 9), "one two\nthree\nfour");
  EXPECT_EQ(wrap_text("a\nb c", 3), "a\nb c");
  EXPECT_EQ(wrap_text("    indented words here", 14), "    indented\n    words here");
  // A word longer than the width stays whole on a line of its own.
  EXPECT_EQ(wrap_text("x averyveryverylongword y", 8), "x\naveryveryverylongword\ny");
  EXPECT_EQ(wrap_text("ends with newline\n", 100), "ends with newline\n");
}

TEST(HelpFormat, LongDescriptionsWrapUnderTheirColumn) {
  CLI::App app{"a tool", "tool"};
  app.formatter(std::make_shared<HelpFormatter>());
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "word" + std::to_string(i) + " ";
  app.add_flag("--long", long_text);
  CLI::App* sub = app.add_subcommand("sub", long_text);
  set_examples(sub, {{"tool sub --long", "does the long thing"}});
  for (const std::string& help : {app.help(), sub->help()}) {
    size_t start = 0;
    while (start < help.size()) {
      size_t end = help.find('\n', start);
      if (end == std::string::npos) end = help.size();
      EXPECT_LE(end - start, kHelpWidth) << help.substr(start, end - start);
      start = end + 1;
    }
  }
  // Continuation lines of a flag's description start at the description column.
  EXPECT_NE(app.help().find("\n" + std::string(30, ' ') + "word"), std::string::npos) << app.help();
  const std::string sub_help = sub->help();
  EXPECT_NE(sub_help.find("Examples:\n  tool sub --long\n      does the long thing\n"), std::string::npos) << sub_help;
  EXPECT_NE(sub_help.find("Exit codes: 0 ok"), std::string::npos) << sub_help;
}
