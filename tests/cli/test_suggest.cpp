// Usage errors with the likeliest meaning of a typo (src/cli/suggest.hpp): the nearest subcommand
// or option, and nothing where no name is near.
#include <gtest/gtest.h>

#include "suggest.hpp"

using namespace kagent::cli;

TEST(Suggest, EditDistanceCountsSwapsAsOneEdit) {
  EXPECT_EQ(edit_distance("optimze", "optimize"), 1);
  EXPECT_EQ(edit_distance("arhc", "arch"), 1);  // adjacent letters swapped
  EXPECT_EQ(edit_distance("turn", "turns"), 1);
  EXPECT_EQ(edit_distance("", "abc"), 3);
  EXPECT_EQ(edit_distance("eval", "eval"), 0);
}

TEST(Suggest, NearestNameOnlyWhenCloseEnough) {
  const std::vector<std::string> names = {"compile", "eval", "optimize", "report"};
  EXPECT_EQ(nearest_name("optimze", names), "optimize");
  EXPECT_EQ(nearest_name("evl", names), "eval");
  EXPECT_EQ(nearest_name("frobnicate", names), "");
  EXPECT_EQ(nearest_name("x", names), "");  // one letter is no typo of anything
}

TEST(Suggest, UnknownSubcommandsAndOptionsGetTheNearestName) {
  CLI::App app{"kagent"};
  app.add_flag("-v,--verbose");
  std::string arch;
  int turns = 0;
  CLI::App* compile = app.add_subcommand("compile");
  compile->add_option("--arch", arch);
  CLI::App* optimize = app.add_subcommand("optimize");
  optimize->add_option("--turns", turns);
  EXPECT_EQ(usage_suggestions(app, {"optimze", "x"}),
            "kagent: 'optimze' is not a subcommand; did you mean 'kagent optimize'?\n");
  EXPECT_EQ(usage_suggestions(app, {"compile", "X.cu", "--arhc", "sm_80"}),
            "kagent: '--arhc' is not an option of kagent compile; did you mean '--arch'?\n");
  EXPECT_EQ(usage_suggestions(app, {"-v", "optimize", "op.json", "--turn=3"}),
            "kagent: '--turn' is not an option of kagent optimize; did you mean '--turns'?\n");
  EXPECT_EQ(usage_suggestions(app, {"optimize", "--zzzzzz"}),
            "kagent: '--zzzzzz' is not an option of kagent optimize; see kagent optimize --help\n");
  EXPECT_EQ(usage_suggestions(app, {"compile", "--arch", "sm_90a", "--verbose"}), "");
  EXPECT_EQ(usage_suggestions(app, {"frobnicate"}), "");
}
