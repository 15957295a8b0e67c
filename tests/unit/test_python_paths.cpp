#include <gtest/gtest.h>

#include <filesystem>

#include "kagent/sandbox/process.hpp"
#include "kagent/sandbox/python_paths.hpp"
#include "test_util.hpp"

namespace kagent::sandbox {
namespace {

TEST(PythonPaths, ExistingDirectoriesOnlyAndNeverAHomeOrTheRoot) {
  test::TempDir d;
  std::filesystem::create_directories(d.path() / "site-packages");
  const std::string site = std::filesystem::canonical(d.path() / "site-packages").string();
  std::string json = R"({"paths": [")" + site + R"(", "/", "/root", "/home/someone", "/no/such/dir", "relative",
                         ")" +
                     site + R"("]})";
  std::vector<std::string> got = python_paths_from_json(json);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], site);
}

TEST(PythonPaths, MalformedAnswersGiveNothing) {
  EXPECT_TRUE(python_paths_from_json("not json").empty());
  EXPECT_TRUE(python_paths_from_json(R"({"paths": 3})").empty());
}

TEST(PythonPaths, ThisMachinesPythonIsFound) {
  if (find_in_path("python3").empty()) GTEST_SKIP() << "no python3 in PATH";
  const auto& paths = python_install_paths();
  EXPECT_FALSE(paths.empty());
  for (const auto& p : paths) EXPECT_TRUE(std::filesystem::is_directory(p)) << p;
}

}  // namespace
}  // namespace kagent::sandbox
