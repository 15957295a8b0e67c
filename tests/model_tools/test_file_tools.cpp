// read_file, write_file, edit_file, list_files: happy paths, the model's mistakes as ToolErrors
// with messages it can act on, and confinement to the workspace.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kagent/model_tools/file_tools.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using kagent::model_tools::Tool;
using kagent::model_tools::ToolError;
using kagent::model_tools::ToolResult;
using kagent::model_tools::ToolSet;
using kagent::model_tools::Workspace;
using nlohmann::json;

namespace {

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A workspace in a temporary folder with the four tools.
class FileToolsTest : public ::testing::Test {
 protected:
  FileToolsTest() : ws_(tmp_ / "ws"), tools_(kagent::model_tools::make_file_tools(ws_)) {}

  Tool& tool(const std::string& name) {
    for (auto& t : tools_)
      if (t->spec().name == name) return *t;
    throw std::runtime_error("no tool " + name);
  }
  ToolResult call(const std::string& name, const json& args) { return tool(name).run(args); }
  // The ToolError's message, or a failure when the call succeeded.
  std::string error(const std::string& name, const json& args) {
    try {
      ToolResult r = call(name, args);
      ADD_FAILURE() << name << " " << args.dump() << " succeeded: " << r.text;
      return "";
    } catch (const ToolError& e) {
      return e.what();
    }
  }
  fs::path write(const std::string& rel, const std::string& text) {
    fs::path p = ws_.root() / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p;
  }

  kagent::test::TempDir tmp_;
  Workspace ws_;
  ToolSet tools_;
};

std::string numbered(int n) {
  std::string s;
  for (int i = 1; i <= n; ++i) s += "line " + std::to_string(i) + "\n";
  return s;
}

}  // namespace

// ---- specs --------------------------------------------------------------------------------

TEST_F(FileToolsTest, SpecsAreObjectSchemasListingRequiredFields) {
  ASSERT_EQ(tools_.size(), 4u);
  std::map<std::string, std::vector<std::string>> required = {{"read_file", {"path"}},
                                                              {"write_file", {"path", "content"}},
                                                              {"edit_file", {"path", "old_text", "new_text"}},
                                                              {"list_files", {}}};
  for (const auto& t : tools_) {
    auto spec = t->spec();
    SCOPED_TRACE(spec.name);
    ASSERT_TRUE(required.count(spec.name));
    EXPECT_GT(spec.description.size(), 40u);
    const json& p = spec.parameters;
    EXPECT_EQ(p["type"], "object");
    EXPECT_EQ(p["additionalProperties"], false);
    ASSERT_TRUE(p["required"].is_array());
    EXPECT_EQ(p["required"].get<std::vector<std::string>>(), required[spec.name]);
    for (const auto& name : required[spec.name]) EXPECT_TRUE(p["properties"].contains(name)) << name;
    for (const auto& [name, prop] : p["properties"].items()) {
      EXPECT_TRUE(prop.contains("type")) << name;
      EXPECT_FALSE(prop.value("description", "").empty()) << name;
    }
  }
}

// ---- read_file ----------------------------------------------------------------------------

TEST_F(FileToolsTest, ReadFileNumbersLines) {
  write("k/a.cu", "int x;\nint y;\n");
  ToolResult r = call("read_file", {{"path", "k/a.cu"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.text, "k/a.cu: 2 lines, 14 bytes\n    1| int x;\n    2| int y;\n");
  EXPECT_EQ(r.record["total_lines"], 2);
}

TEST_F(FileToolsTest, ReadFileCutsAndSaysHowToReadOn) {
  write("long.txt", numbered(1000));
  ToolResult r = call("read_file", {{"path", "long.txt"}});
  EXPECT_TRUE(contains(r.text, "long.txt: 1000 lines")) << r.text;
  EXPECT_TRUE(contains(r.text, "  400| line 400\n"));
  EXPECT_FALSE(contains(r.text, "| line 401\n"));
  EXPECT_TRUE(contains(r.text, "start_line=401")) << r.text;

  r = call("read_file", {{"path", "long.txt"}, {"start_line", 990}, {"max_lines", 5}});
  EXPECT_TRUE(contains(r.text, "showing lines 990-994")) << r.text;
  EXPECT_TRUE(contains(r.text, "  990| line 990\n"));
  EXPECT_TRUE(contains(r.text, "  994| line 994\n"));
  EXPECT_FALSE(contains(r.text, "line 995\n"));
  EXPECT_TRUE(contains(r.text, "start_line=995"));

  r = call("read_file", {{"path", "long.txt"}, {"start_line", 998}});
  EXPECT_TRUE(contains(r.text, " 1000| line 1000\n"));
  EXPECT_FALSE(contains(r.text, "start_line=")) << r.text;  // nothing more to read

  EXPECT_TRUE(contains(error("read_file", {{"path", "long.txt"}, {"start_line", 1001}}), "past the end"));
  EXPECT_TRUE(contains(error("read_file", {{"path", "long.txt"}, {"start_line", 0}}), "start_line"));
  EXPECT_TRUE(contains(error("read_file", {{"path", "long.txt"}, {"max_lines", "ten"}}), "max_lines"));
}

TEST_F(FileToolsTest, ReadFileRefusesWhatIsNotText) {
  EXPECT_TRUE(contains(error("read_file", {{"path", "nope.cu"}}), "nope.cu: no such file"));
  fs::create_directories(ws_.root() / "dir");
  EXPECT_TRUE(contains(error("read_file", {{"path", "dir"}}), "is a folder"));
  write("blob.bin", std::string("ELF\0\x01\x02", 6));
  EXPECT_TRUE(contains(error("read_file", {{"path", "blob.bin"}}), "binary"));
  write("big.txt", std::string((4 << 20) + 1, 'x'));
  EXPECT_TRUE(contains(error("read_file", {{"path", "big.txt"}}), "up to 4 MiB"));
  EXPECT_TRUE(contains(error("read_file", json::object()), "argument 'path' is required"));
}

TEST_F(FileToolsTest, ReadFileEmptyAndLongLines) {
  write("empty", "");
  EXPECT_TRUE(contains(call("read_file", {{"path", "empty"}}).text, "empty file"));
  write("wide", std::string(5000, 'w') + "\nnext\n");
  ToolResult r = call("read_file", {{"path", "wide"}});
  EXPECT_TRUE(contains(r.text, "[... 3000 more bytes on this line]")) << r.text.substr(0, 100);
  EXPECT_TRUE(contains(r.text, "    2| next\n"));
}

TEST_F(FileToolsTest, ReadThroughSymlinkToRootIsRefused) {
  fs::create_directory_symlink("/", ws_.root() / "link");
  EXPECT_TRUE(contains(error("read_file", {{"path", "link/etc/passwd"}}), "escapes the workspace"));
  EXPECT_TRUE(contains(error("read_file", {{"path", "../../etc/passwd"}}), "escapes the workspace"));
  EXPECT_TRUE(contains(error("read_file", {{"path", "/etc/passwd"}}), "absolute paths are not allowed"));
}

TEST_F(FileToolsTest, SymlinkToAFileInsideIsAllowed) {
  write("real.cu", "hello\n");
  fs::create_symlink("real.cu", ws_.root() / "alias.cu");
  EXPECT_TRUE(contains(call("read_file", {{"path", "alias.cu"}}).text, "    1| hello\n"));
  call("edit_file", {{"path", "alias.cu"}, {"old_text", "hello"}, {"new_text", "bye"}});
  EXPECT_EQ(slurp(ws_.root() / "real.cu"), "bye\n");
  EXPECT_TRUE(fs::is_symlink(ws_.root() / "alias.cu"));  // the link itself is left alone
}

// ---- write_file ---------------------------------------------------------------------------

TEST_F(FileToolsTest, WriteFileCreatesFoldersAndReports) {
  ToolResult r = call("write_file", {{"path", "src/deep/k.cu"}, {"content", "a\nb\nc\n"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(slurp(ws_.root() / "src/deep/k.cu"), "a\nb\nc\n");
  EXPECT_TRUE(contains(r.text, "wrote src/deep/k.cu: 6 bytes, 3 lines (new file)")) << r.text;
  EXPECT_EQ(r.record["created"], true);

  r = call("write_file", {{"path", "src/deep/k.cu"}, {"content", "x"}});
  EXPECT_EQ(r.text, "wrote src/deep/k.cu: 1 bytes, 1 lines");
  EXPECT_EQ(slurp(ws_.root() / "src/deep/k.cu"), "x");
  // Atomic writes leave no temporaries behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(ws_.root() / "src/deep"), fs::directory_iterator()), 1);
}

TEST_F(FileToolsTest, WriteFileKeepsPermissions) {
  fs::path p = write("run.sh", "#!/bin/sh\n");
  fs::permissions(p, fs::perms::owner_all);
  call("write_file", {{"path", "run.sh"}, {"content", "#!/bin/sh\necho hi\n"}});
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::all, fs::perms::owner_all);
}

TEST_F(FileToolsTest, WriteFileRefusals) {
  fs::create_directories(ws_.root() / "dir");
  EXPECT_TRUE(contains(error("write_file", {{"path", "dir"}, {"content", "x"}}), "is a folder"));
  EXPECT_TRUE(contains(error("write_file", {{"path", "."}, {"content", "x"}}), "is a folder"));
  write("file", "x");
  EXPECT_TRUE(contains(error("write_file", {{"path", "file/sub.cu"}, {"content", "x"}}), "cannot create the folder"));
  EXPECT_TRUE(contains(error("write_file", {{"path", "a.cu"}}), "argument 'content' is required"));
  EXPECT_TRUE(contains(error("write_file", {{"path", "../x"}, {"content", "x"}}), "escapes the workspace"));
  EXPECT_FALSE(fs::exists(tmp_ / "x"));
}

TEST_F(FileToolsTest, WriteThroughSymlinkedFolderIsRefused) {
  fs::create_directories(tmp_ / "outside");
  fs::create_directory_symlink(tmp_ / "outside", ws_.root() / "out");
  EXPECT_TRUE(contains(error("write_file", {{"path", "out/evil.cu"}, {"content", "x"}}), "escapes the workspace"));
  EXPECT_FALSE(fs::exists(tmp_ / "outside/evil.cu"));
  // A dangling link to a file outside: writing it would create the file outside.
  fs::create_symlink(tmp_ / "outside/new.cu", ws_.root() / "dangling.cu");
  EXPECT_TRUE(contains(error("write_file", {{"path", "dangling.cu"}, {"content", "x"}}), "escapes the workspace"));
  EXPECT_FALSE(fs::exists(tmp_ / "outside/new.cu"));
}

// ---- edit_file ----------------------------------------------------------------------------

TEST_F(FileToolsTest, EditFileReplacesOnceAndReportsLines) {
  write("k.cu", numbered(10));
  ToolResult r = call("edit_file", {{"path", "k.cu"}, {"old_text", "line 4\nline 5\n"}, {"new_text", "A\nB\nC\n"}});
  EXPECT_FALSE(r.is_error);
  EXPECT_TRUE(contains(r.text, "replaced lines 4-5 with what is now lines 4-6")) << r.text;
  EXPECT_TRUE(contains(r.text, "    6| C\n")) << r.text;  // the edited lines are shown
  EXPECT_EQ(r.record["old_first_line"], 4);
  EXPECT_EQ(slurp(ws_.root() / "k.cu"), "line 1\nline 2\nline 3\nA\nB\nC\nline 6\nline 7\nline 8\nline 9\nline 10\n");

  r = call("edit_file", {{"path", "k.cu"}, {"old_text", "B\n"}, {"new_text", ""}});
  EXPECT_TRUE(contains(r.text, "removed the text at line 5")) << r.text;
  EXPECT_FALSE(contains(slurp(ws_.root() / "k.cu"), "B"));
}

TEST_F(FileToolsTest, EditFileNotFound) {
  write("k.cu", "int main() {\n    return 0;\n}\n");
  std::string err = error("edit_file", {{"path", "k.cu"}, {"old_text", "return 1;"}, {"new_text", "x"}});
  EXPECT_TRUE(contains(err, "old_text was not found in k.cu")) << err;
  EXPECT_FALSE(contains(err, "whitespace at the start")) << err;
}

TEST_F(FileToolsTest, EditFileNotFoundHintsAtWhitespace) {
  write("k.cu", "int main() {\n    return 0;\n}\n");
  std::string err =
      error("edit_file", {{"path", "k.cu"}, {"old_text", "int main() {\n\treturn 0;\n}"}, {"new_text", "x"}});
  EXPECT_TRUE(contains(err, "old_text was not found in k.cu")) << err;
  EXPECT_TRUE(contains(err, "ignored, at line 1:")) << err;
  EXPECT_EQ(slurp(ws_.root() / "k.cu"), "int main() {\n    return 0;\n}\n");
}

TEST_F(FileToolsTest, EditFileNotUniqueListsLines) {
  write("k.cu", "x = 1;\ny = 2;\nx = 1;\n\nx = 1;\n");
  std::string err = error("edit_file", {{"path", "k.cu"}, {"old_text", "x = 1;"}, {"new_text", "x = 3;"}});
  EXPECT_TRUE(contains(err, "occurs 3 times in k.cu")) << err;
  EXPECT_TRUE(contains(err, "lines 1, 3, 5")) << err;
  // More context makes it unique.
  call("edit_file", {{"path", "k.cu"}, {"old_text", "y = 2;\nx = 1;"}, {"new_text", "y = 2;\nx = 3;"}});
  EXPECT_EQ(slurp(ws_.root() / "k.cu"), "x = 1;\ny = 2;\nx = 3;\n\nx = 1;\n");
}

TEST_F(FileToolsTest, EditFileRefusals) {
  write("k.cu", "abc\n");
  EXPECT_TRUE(
      contains(error("edit_file", {{"path", "k.cu"}, {"old_text", ""}, {"new_text", "x"}}), "old_text is empty"));
  EXPECT_TRUE(contains(error("edit_file", {{"path", "k.cu"}, {"old_text", "abc"}, {"new_text", "abc"}}), "the same"));
  EXPECT_TRUE(contains(error("edit_file", {{"path", "k.cu"}, {"old_text", "abc"}}), "argument 'new_text' is required"));
  EXPECT_TRUE(contains(error("edit_file", {{"path", "no.cu"}, {"old_text", "a"}, {"new_text", "b"}}), "no such file"));
  EXPECT_TRUE(contains(error("edit_file", {{"path", "a/../../k.cu"}, {"old_text", "a"}, {"new_text", "b"}}),
                       "escapes the workspace"));
  // Regex characters are plain text.
  write("r.cu", "a.*b\naxxb\n");
  call("edit_file", {{"path", "r.cu"}, {"old_text", "a.*b"}, {"new_text", "ok"}});
  EXPECT_EQ(slurp(ws_.root() / "r.cu"), "ok\naxxb\n");
}

// ---- list_files ---------------------------------------------------------------------------

TEST_F(FileToolsTest, ListFilesSortedWithSizesAndLinks) {
  write("b.cu", "12345");
  write("a/z.txt", "");
  write("a/m/deep.cu", "xy");
  write(".hidden", "h");
  fs::create_directory_symlink("/", ws_.root() / "root-link");
  ToolResult r = call("list_files", json::object());
  EXPECT_FALSE(r.is_error);
  EXPECT_EQ(r.text,
            "the workspace: 7 entries (paths relative to the workspace root)\n"
            ".hidden (1 bytes)\n"
            "a/\n"
            "a/m/\n"
            "a/m/deep.cu (2 bytes)\n"
            "a/z.txt (0 bytes)\n"
            "b.cu (5 bytes)\n"
            "root-link -> /\n");

  r = call("list_files", {{"path", "a/m"}});
  EXPECT_EQ(r.text, "a/m: 1 entry (paths relative to the workspace root)\na/m/deep.cu (2 bytes)\n");
}

TEST_F(FileToolsTest, ListFilesCapsEntries) {
  for (int i = 0; i < 600; ++i) write(fmt::format("many/f{:04}", i), "");
  ToolResult r = call("list_files", {{"path", "many"}});
  EXPECT_TRUE(contains(r.text, "many/f0499 (0 bytes)\n"));
  EXPECT_FALSE(contains(r.text, "many/f0500"));
  EXPECT_TRUE(contains(r.text, "showing the first 500 of 600 entries")) << r.text.substr(r.text.size() - 200);
  EXPECT_EQ(r.record["entries"], 600);
}

TEST_F(FileToolsTest, ListFilesEdgeCases) {
  EXPECT_TRUE(contains(call("list_files", json::object()).text, "the workspace is empty"));
  EXPECT_TRUE(contains(error("list_files", {{"path", "nope"}}), "no such folder"));
  write("f.cu", "abc");
  EXPECT_TRUE(contains(call("list_files", {{"path", "f.cu"}}).text, "is a file (3 bytes)"));
  fs::create_directory_symlink("/", ws_.root() / "link");
  EXPECT_TRUE(contains(error("list_files", {{"path", "link/etc"}}), "escapes the workspace"));
  EXPECT_TRUE(contains(error("list_files", {{"path", ".."}}), "escapes the workspace"));
}
