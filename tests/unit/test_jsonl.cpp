// JSON Lines files kagent appends to (results.jsonl, transcript.jsonl): a torn last line is cut
// before appending and left out when reading; a complete bad line is an error.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/jsonl.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

std::string error_of(const std::filesystem::path& p) {
  try {
    read_jsonl(p);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << p;
  return "";
}

}  // namespace

TEST(Jsonl, AnUnterminatedBadLastLineIsTornAndLeftOut) {
  test::TempDir tmp;
  auto p = tmp.write("r.jsonl", "{\"a\": 1}\n\n{\"b\": 2}\n{\"c\": ");
  auto lines = read_jsonl(p);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1].number, 3);
  EXPECT_EQ(lines[1].value["b"], 2);
  // A complete last line without its newline still counts.
  EXPECT_EQ(read_jsonl(tmp.write("s.jsonl", "{\"a\": 1}\n{\"b\": 2}")).size(), 2u);
}

TEST(Jsonl, ACompleteBadLineIsAnErrorNamingFileAndLine) {
  test::TempDir tmp;
  // Terminated, so written whole: not a torn write, and not to be dropped silently.
  auto msg = error_of(tmp.write("r.jsonl", "{\"a\": 1}\n{\"b\": \n"));
  EXPECT_NE(msg.find("r.jsonl:2: not valid JSON"), std::string::npos) << msg;
  msg = error_of(tmp.write("t.jsonl", "{\"a\": 1}\n[1, 2]\n"));
  EXPECT_NE(msg.find("t.jsonl:2: expected a JSON object"), std::string::npos) << msg;
  msg = error_of(tmp.write("u.jsonl", "{\"a\": 1, \"a\": 2}\n"));
  EXPECT_NE(msg.find("u.jsonl:1: key a: duplicate key"), std::string::npos) << msg;
  msg = error_of(tmp.write("v.jsonl", "{\"a\": " + std::string(10000, '[') + "\n"));
  EXPECT_NE(msg.find("nested deeper"), std::string::npos) << msg;
}

TEST(Jsonl, CutTornLastLineKeepsWholeLines) {
  test::TempDir tmp;
  auto cut = [&](const std::string& contents) {
    auto p = tmp.write("f.jsonl", contents);
    int fd = ::open(p.c_str(), O_RDWR);
    cut_torn_last_line(fd, p);
    ::close(fd);
    return read_text_file(p);
  };
  EXPECT_EQ(cut("{\"a\": 1}\n{\"b\""), "{\"a\": 1}\n");
  EXPECT_EQ(cut("{\"a\": 1}\n"), "{\"a\": 1}\n");
  EXPECT_EQ(cut("no newline at all"), "");
  EXPECT_EQ(cut(""), "");
  // A torn line longer than the block the cut reads backwards in.
  EXPECT_EQ(cut("{}\n" + std::string(10000, 'x')), "{}\n");
}
