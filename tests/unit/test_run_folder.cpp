// The op's "name" is text from a problem file: the default run folder is one safe component.
#include <gtest/gtest.h>

#include "kagent/agent/run_folder.hpp"

using kagent::agent::run_folder_name;

TEST(RunFolder, NamesWithSlashesOrDotsStayOneComponentInRuns) {
  EXPECT_EQ(run_folder_name("softmax"), "softmax");
  EXPECT_EQ(run_folder_name("23_Softmax.v2"), "23_Softmax.v2");
  EXPECT_EQ(run_folder_name("/tmp/x/abs_run"), "tmp_x_abs_run");
  EXPECT_EQ(run_folder_name("../../etc"), "etc");
  EXPECT_EQ(run_folder_name(".."), "op");
  EXPECT_EQ(run_folder_name("."), "op");
  EXPECT_EQ(run_folder_name(""), "op");
  EXPECT_EQ(run_folder_name(".hidden"), "hidden");
  EXPECT_EQ(run_folder_name("a b\nc\\d"), "a_b_c_d");
  EXPECT_EQ(run_folder_name(std::string(500, 'x')).size(), 80u);
  for (const char* hostile : {"/tmp/x", "..", "a/../../b", "~root", "$(rm -rf /)", "\xff\xfe"}) {
    std::string n = run_folder_name(hostile);
    EXPECT_EQ(n.find('/'), std::string::npos) << n;
    EXPECT_NE(n, "..");
    EXPECT_NE(n.front(), '.') << n;
  }
}
