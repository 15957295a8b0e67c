#include <sys/stat.h>

#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/hash.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

TEST(Hash, FieldsDoNotRunTogether) {
  EXPECT_NE(Hasher().add_field("ab").add_field("c").hex(), Hasher().add_field("a").add_field("bc").hex());
  EXPECT_EQ(Hasher().add_field("x").hex(), Hasher().add_field("x").hex());
  EXPECT_EQ(Hasher().hex().size(), 32u);
}

TEST(Files, LineOfOffset) {
  EXPECT_EQ(line_of_offset("a\nb\nc", 0), 1);
  EXPECT_EQ(line_of_offset("a\nb\nc", 2), 2);
  EXPECT_EQ(line_of_offset("a\nb\nc", 4), 3);
  EXPECT_EQ(line_of_offset("a\nb\nc", 99), 3);
}

TEST(Files, MissingFileIsInputErrorNamingIt) {
  try {
    read_text_file("/no/such/kagent/file.cu");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("/no/such/kagent/file.cu"), std::string::npos);
    EXPECT_EQ(e.code(), ExitCode::bad_input);
  }
}

// A FIFO, /dev/zero or a huge file given as input must not hang kagent or exhaust its memory.
TEST(Files, OnlyRegularFilesOfBoundedSizeAreRead) {
  test::TempDir tmp;
  auto error_of = [](const std::filesystem::path& p, size_t cap = kMaxInputFileBytes) {
    try {
      read_text_file(p, cap);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    ADD_FAILURE() << "no error for " << p;
    return std::string();
  };
  auto fifo = tmp / "fifo.cu";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of(fifo).find("not a regular file"), std::string::npos);  // no writer: would block
  EXPECT_NE(error_of("/dev/zero").find("/dev/zero: not a regular file"), std::string::npos);
  EXPECT_NE(error_of(tmp.path()).find("is a directory"), std::string::npos);
  auto big = tmp.write("big.json", std::string(2000, 'x'));
  EXPECT_NE(error_of(big, 1000).find("big.json: 2000 bytes, more than the 1000"), std::string::npos);
  EXPECT_EQ(read_text_file(big, 2000).size(), 2000u);
  EXPECT_EQ(read_text_file(tmp.write("empty", "")), "");
  // /proc files report size 0 but have contents.
  EXPECT_FALSE(read_text_file("/proc/self/status").empty());
}

TEST(Files, ColumnOfOffset) {
  EXPECT_EQ(column_of_offset("ab\ncd", 0), 1);
  EXPECT_EQ(column_of_offset("ab\ncd", 4), 2);
}

TEST(Files, AtomicWriteReplaces) {
  test::TempDir dir;
  write_file_atomic(dir / "f", "one");
  write_file_atomic(dir / "f", "two");
  EXPECT_EQ(read_text_file(dir / "f"), "two");
}

TEST(Process, CapturesOutputAndExitCode) {
  auto r = run_capture({"sh", "-c", "echo hi; echo err >&2; exit 7"}, 10s);
  EXPECT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_NE(r.output.find("hi"), std::string::npos);
  EXPECT_NE(r.output.find("err"), std::string::npos);
}

TEST(Process, TimeoutKillsTheChild) {
  auto t0 = std::chrono::steady_clock::now();
  auto r = run_capture({"sh", "-c", "sleep 30"}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s);
}

TEST(Process, MissingProgram) {
  auto r = run_capture({"kagent-no-such-program"}, 1s);
  EXPECT_FALSE(r.started);
}

TEST(TextTable, AlignsColumns) {
  TextTable t({"kernel", "regs"});
  t.add_row({"a", "10"});
  t.add_row({"longer_name", "255"});
  EXPECT_EQ(t.render(), "kernel       regs\na              10\nlonger_name   255\n");
}

TEST(TextTable, MarkdownAlignsTheFirstColumnLeftAndTheRestRight) {
  TextTable t({"level", "pass", "tier 3"});
  t.add_row({"level1", "90%", "40%"});
  EXPECT_EQ(t.render_markdown(), "| level | pass | tier 3 |\n| --- | ---: | ---: |\n| level1 | 90% | 40% |\n");
}
