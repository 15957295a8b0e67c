// Workspace confinement (lexical escapes, absolute paths, symlinks that lead out) and the small
// helpers every tool uses: argument readers and cut_middle.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "kagent/model_tools/tool.hpp"
#include "kagent/model_tools/workspace.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using kagent::model_tools::arg_int;
using kagent::model_tools::arg_string;
using kagent::model_tools::cut_middle;
using kagent::model_tools::ToolError;
using kagent::model_tools::Workspace;
using nlohmann::json;

namespace {

// The ToolError's message for resolving path, or "" when it resolved.
std::string resolve_error(const Workspace& ws, const std::string& path) {
  try {
    ws.resolve(path);
    return "";
  } catch (const ToolError& e) {
    return e.what();
  }
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace

TEST(Workspace, CreatesAndCanonicalizesTheRoot) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp / "a/b/../ws");
  EXPECT_TRUE(fs::is_directory(ws.root()));
  EXPECT_EQ(ws.root(), fs::canonical(tmp.path() / "a/ws"));
}

TEST(Workspace, NormalPathsResolveInside) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp.path());
  EXPECT_EQ(ws.resolve("kernel.cu"), ws.root() / "kernel.cu");
  EXPECT_EQ(ws.resolve("src/deep/new/file.cuh"), ws.root() / "src/deep/new/file.cuh");  // need not exist
  EXPECT_EQ(ws.resolve("./a/./b/../c"), ws.root() / "a/c");
  EXPECT_EQ(ws.resolve("."), ws.root());
  EXPECT_EQ(ws.resolve("a/.."), ws.root());
  EXPECT_EQ(ws.resolve("dir/"), ws.root() / "dir");
  // Climbing out and back in by the root's own name stays inside.
  EXPECT_EQ(ws.resolve("a/../../" + ws.root().filename().string() + "/x"), ws.root() / "x");
}

TEST(Workspace, LexicalEscapesAreRefused) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp / "ws");
  for (std::string path : {"..", "../x", "a/../../x", "./../ws/../../x", "a/b/../../../other/x"}) {
    std::string err = resolve_error(ws, path);
    EXPECT_TRUE(contains(err, "path escapes the workspace")) << path << ": " << err;
    EXPECT_TRUE(contains(err, path)) << err;
  }
}

TEST(Workspace, AbsoluteEmptyAndNulPathsAreRefused) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp.path());
  std::string err = resolve_error(ws, "/etc/passwd");
  EXPECT_TRUE(contains(err, "absolute paths are not allowed")) << err;
  EXPECT_TRUE(contains(err, "/etc/passwd")) << err;
  // Even an absolute path that happens to be inside: the model is told to use relative ones.
  EXPECT_TRUE(contains(resolve_error(ws, (ws.root() / "x").string()), "absolute paths"));
  EXPECT_TRUE(contains(resolve_error(ws, ""), "path is empty"));
  EXPECT_TRUE(contains(resolve_error(ws, std::string("a\0b", 3)), "NUL"));
}

TEST(Workspace, SymlinkToRootIsRefused) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp.path());
  fs::create_directory_symlink("/", ws.root() / "link");
  for (std::string path : {"link", "link/etc/passwd", "link/tmp/new-file"}) {
    std::string err = resolve_error(ws, path);
    EXPECT_TRUE(contains(err, "escapes the workspace through a symbolic link")) << path << ": " << err;
  }
}

TEST(Workspace, SymlinkedParentFolderIsRefused) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp / "ws");
  fs::create_directories(tmp / "outside");
  fs::create_directory_symlink(tmp / "outside", ws.root() / "out");
  EXPECT_TRUE(contains(resolve_error(ws, "out/new.cu"), "escapes the workspace"));
  // A relative link that climbs out is just as bad.
  fs::create_directory_symlink("../outside", ws.root() / "rel");
  EXPECT_TRUE(contains(resolve_error(ws, "rel/x"), "escapes the workspace"));
}

TEST(Workspace, DanglingSymlinkLeadingOutIsRefused) {
  // weakly_canonical would stop at a link whose target does not exist; a write would create it.
  kagent::test::TempDir tmp;
  Workspace ws(tmp / "ws");
  fs::create_symlink(tmp / "not-yet", ws.root() / "dangling");
  EXPECT_TRUE(contains(resolve_error(ws, "dangling"), "escapes the workspace"));
  fs::create_directory_symlink(tmp / "no-dir", ws.root() / "dangling-dir");
  EXPECT_TRUE(contains(resolve_error(ws, "dangling-dir/a/b.cu"), "escapes the workspace"));
}

TEST(Workspace, SymlinksInsideAreFollowed) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp.path());
  tmp.write("src/real.cu", "x");
  fs::create_symlink("src/real.cu", ws.root() / "alias.cu");
  fs::create_directory_symlink("src", ws.root() / "s");
  EXPECT_EQ(ws.resolve("alias.cu"), ws.root() / "src/real.cu");
  EXPECT_EQ(ws.resolve("s/real.cu"), ws.root() / "src/real.cu");
  EXPECT_EQ(ws.resolve("s/new.cu"), ws.root() / "src/new.cu");
}

TEST(Workspace, SymlinkLoopIsAToolError) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp.path());
  fs::create_symlink("b", ws.root() / "a");
  fs::create_symlink("a", ws.root() / "b");
  EXPECT_TRUE(contains(resolve_error(ws, "a/x"), "too many levels of symbolic links"));
}

TEST(Workspace, RelativeNamesPathsFromTheRoot) {
  kagent::test::TempDir tmp;
  Workspace ws(tmp.path());
  EXPECT_EQ(ws.relative(ws.root() / "kernels/a.cu"), "kernels/a.cu");
  EXPECT_EQ(ws.relative(ws.root()), ".");
  EXPECT_EQ(ws.relative(ws.resolve("x/..")), ".");
}

TEST(ArgHelpers, StringRequiredAndTyped) {
  json args = {{"path", "a.cu"}, {"n", 12}};
  EXPECT_EQ(arg_string(args, "path"), "a.cu");
  try {
    arg_string(args, "missing");
    FAIL();
  } catch (const ToolError& e) {
    EXPECT_STREQ(e.what(), "argument 'missing' is required (a string)");
  }
  try {
    arg_string(args, "n");
    FAIL();
  } catch (const ToolError& e) {
    EXPECT_STREQ(e.what(), "argument 'n' must be a string, got 12");
  }
  EXPECT_THROW(arg_string(json::array(), "path"), ToolError);
  EXPECT_THROW(arg_string(json{{"path", nullptr}}, "path"), ToolError);
}

TEST(ArgHelpers, IntOptionalAndRanged) {
  json args = {{"a", 5}, {"big", 1000}, {"neg", -3}, {"f", 7.0}, {"half", 7.5}, {"s", "7"}, {"null", nullptr}};
  EXPECT_EQ(arg_int(args, "a", 1, 10), 5);
  EXPECT_EQ(arg_int(args, "absent", 1, 10), std::nullopt);
  EXPECT_EQ(arg_int(args, "null", 1, 10), std::nullopt);
  EXPECT_EQ(arg_int(args, "f", 1, 10), 7);
  EXPECT_EQ(arg_int(args, "neg", -5, 0), -3);
  EXPECT_THROW(arg_int(args, "big", 1, 10), ToolError);
  EXPECT_THROW(arg_int(args, "neg", 0, 10), ToolError);
  EXPECT_THROW(arg_int(args, "half", 1, 10), ToolError);
  try {
    arg_int(args, "s", 1, 10);
    FAIL();
  } catch (const ToolError& e) {
    EXPECT_STREQ(e.what(), "argument 's' must be an integer from 1 to 10, got \"7\"");
  }
}

TEST(CutMiddle, ShortTextUnchanged) {
  EXPECT_EQ(cut_middle("", 10), "");
  EXPECT_EQ(cut_middle("hello", 5), "hello");
  EXPECT_EQ(cut_middle("line 1\nline 2\n", 1000), "line 1\nline 2\n");
}

TEST(CutMiddle, LongTextKeepsHeadAndTailOnLineBoundaries) {
  std::string text;
  for (int i = 1; i <= 1000; ++i) text += "line " + std::to_string(i) + "\n";
  std::string cut = cut_middle(text, 600);
  EXPECT_LE(cut.size(), 600u);
  EXPECT_TRUE(cut.starts_with("line 1\nline 2\n")) << cut;
  EXPECT_TRUE(cut.ends_with("line 999\nline 1000\n")) << cut;
  size_t marker = cut.find("\n[... ");
  ASSERT_NE(marker, std::string::npos) << cut;
  EXPECT_TRUE(contains(cut, " lines left out ...]\n")) << cut;
  // Every kept line is whole: the marker sits between complete lines.
  size_t marker_end = cut.find('\n', marker + 1) + 1;
  // About two thirds head, one third tail.
  EXPECT_GT(marker * 2, (cut.size() - marker_end) * 3) << cut;
  EXPECT_TRUE(cut.substr(marker_end).starts_with("line ")) << cut;
  // The numbers add up: the left-out bytes are exactly what is missing.
  size_t bytes = std::stoul(cut.substr(marker + 6));
  EXPECT_EQ(marker + 1 + bytes + (cut.size() - marker_end), text.size());
}

TEST(CutMiddle, CountsAndNamesWhatWasLeftOut) {
  std::string text = std::string(100, 'a') + "\n" + std::string(10000, 'b') + "\n" + std::string(100, 'c') + "\n";
  std::string cut = cut_middle(text, 400);
  EXPECT_TRUE(contains(cut, "bytes, 1 line left out")) << cut;
  EXPECT_TRUE(cut.starts_with(std::string(100, 'a') + "\n")) << cut;
  EXPECT_TRUE(cut.ends_with(std::string(100, 'c') + "\n")) << cut;
}

TEST(CutMiddle, NeverSplitsUtf8) {
  // One long line of 3-byte characters: no line boundary near, so the cut falls mid-line.
  std::string euro = "\xe2\x82\xac";
  std::string text;
  for (int i = 0; i < 2000; ++i) text += euro;
  for (size_t max : {100u, 101u, 102u, 250u, 1000u}) {
    std::string cut = cut_middle(text, max);
    size_t marker = cut.find("\n[...");
    ASSERT_NE(marker, std::string::npos);
    EXPECT_EQ(marker % 3, 0u) << max;  // the head is whole characters
    size_t tail = cut.find("]\n", marker) + 2;
    EXPECT_EQ((cut.size() - tail) % 3, 0u) << max;
    EXPECT_TRUE(cut.substr(tail).starts_with(euro)) << max;
  }
}

TEST(CutMiddle, TinyBudgetGivesJustTheMarker) {
  std::string cut = cut_middle(std::string(1000, 'x'), 3);
  EXPECT_EQ(cut, "[... 1000 bytes, 1 line left out ...]\n");
}
