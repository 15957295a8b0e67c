// The UTF-8 sanitizer that everything entering a conversation passes: valid text byte for byte,
// each ill-formed part one U+FFFD (Unicode's "maximal subpart" practice).
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "kagent/common/utf8.hpp"
#include "kagent/llm/message.hpp"

using namespace kagent;

namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s += static_cast<char>(c);
  return s;
}

}  // namespace

TEST(Utf8, ValidTextIsKeptByteForByte) {
  const std::string text =
      std::string("ascii, ") + "\xC3\xA9t\xC3\xA9 (2 bytes), \xE2\x82\xAC (3), \xF0\x9F\x98\x80 (4), " +
      "\xEF\xBF\xBD itself, U+10FFFF \xF4\x8F\xBF\xBF, U+FFFF \xEF\xBF\xBF, " + std::string(1, '\0') + " NUL, \x7F DEL";
  EXPECT_TRUE(is_valid_utf8(text));
  EXPECT_EQ(valid_utf8(text), text);
  std::string copy = text;
  EXPECT_FALSE(make_valid_utf8(copy));
  EXPECT_EQ(copy, text);
  EXPECT_EQ(valid_utf8(""), "");
}

TEST(Utf8, StrayAndTruncatedBytesBecomeOneReplacementEach) {
  // 0x80 (a continuation alone), 0xFF (never UTF-8), 0xC3 then ASCII (a truncated 2-byte form).
  EXPECT_EQ(valid_utf8(bytes({'a', 0x80, 0xFF, 0xC3, 'b'})), "a" + kFffd + kFffd + kFffd + "b");
  EXPECT_EQ(valid_utf8(bytes({'a', 0xC3})), "a" + kFffd) << "cut at the end";
  // A 4-byte form cut after 3 bytes is one maximal subpart: one replacement.
  EXPECT_EQ(valid_utf8(bytes({0xF0, 0x9F, 0x98, 'x'})), kFffd + "x");
  EXPECT_EQ(valid_utf8(bytes({0xE2, 0x82})), kFffd);
  EXPECT_FALSE(is_valid_utf8(bytes({0xC3})));
}

TEST(Utf8, OverlongFormsAreReplaced) {
  // "/" as 2, 3 and 4 bytes: C0 and C1 never start a character; E0 and F0 need a high second byte.
  EXPECT_EQ(valid_utf8(bytes({0xC0, 0xAF})), kFffd + kFffd);
  EXPECT_EQ(valid_utf8(bytes({0xC1, 0xBF})), kFffd + kFffd);
  EXPECT_EQ(valid_utf8(bytes({0xE0, 0x80, 0xAF})), kFffd + kFffd + kFffd);
  EXPECT_EQ(valid_utf8(bytes({0xF0, 0x80, 0x80, 0xAF})), kFffd + kFffd + kFffd + kFffd);
  // NUL's overlong form (Java's "modified UTF-8").
  EXPECT_EQ(valid_utf8(bytes({0xC0, 0x80})), kFffd + kFffd);
  for (const std::string& s : {bytes({0xC0, 0xAF}), bytes({0xE0, 0x9F, 0xBF}), bytes({0xF0, 0x8F, 0xBF, 0xBF})})
    EXPECT_FALSE(is_valid_utf8(s));
  // The smallest 3- and 4-byte forms are fine.
  EXPECT_TRUE(is_valid_utf8(bytes({0xE0, 0xA0, 0x80})));
  EXPECT_TRUE(is_valid_utf8(bytes({0xF0, 0x90, 0x80, 0x80})));
}

TEST(Utf8, SurrogatesAndCodePointsBeyondUnicodeAreReplaced) {
  EXPECT_EQ(valid_utf8(bytes({0xED, 0xA0, 0x80})), kFffd + kFffd + kFffd) << "U+D800";
  EXPECT_EQ(valid_utf8(bytes({0xED, 0xBF, 0xBF})), kFffd + kFffd + kFffd) << "U+DFFF";
  // CESU-8's surrogate pair for U+1F600.
  EXPECT_EQ(valid_utf8(bytes({0xED, 0xA0, 0xBD, 0xED, 0xB8, 0x80})), kFffd + kFffd + kFffd + kFffd + kFffd + kFffd);
  EXPECT_TRUE(is_valid_utf8(bytes({0xED, 0x9F, 0xBF}))) << "U+D7FF, just below";
  EXPECT_EQ(valid_utf8(bytes({0xF4, 0x90, 0x80, 0x80})), kFffd + kFffd + kFffd + kFffd) << "U+110000";
  EXPECT_EQ(valid_utf8(bytes({0xF5, 0x80, 0x80, 0x80})), kFffd + kFffd + kFffd + kFffd);
}

TEST(Utf8, TheResultIsAlwaysValidAndDumpsAsJson) {
  // Every byte value in every position of a short string.
  for (int a = 0; a < 256; ++a)
    for (int b = 0x70; b < 0xC8; ++b) {
      const std::string s = valid_utf8(bytes({a, b, 0xBF, 'z'}));
      ASSERT_TRUE(is_valid_utf8(s)) << a << " " << b;
      ASSERT_NO_THROW((void)nlohmann::json(s).dump()) << a << " " << b;
    }
}

// A message's strings; the transcript's JSON of a message is valid whatever it holds.
TEST(Utf8, MessagesAreMadeValid) {
  llm::Message m;
  m.role = llm::Role::tool;
  m.content = bytes({'o', 'k', 0x80});
  m.tool_call_id = bytes({'c', 0xFF});
  m.tool_name = "read_file";
  EXPECT_TRUE(llm::make_valid_utf8_message(m));
  EXPECT_EQ(m.content, "ok" + kFffd);
  EXPECT_EQ(m.tool_call_id, "c" + kFffd);
  EXPECT_FALSE(llm::make_valid_utf8_message(m));

  llm::Message reply;
  reply.role = llm::Role::assistant;
  reply.content = bytes({0xC3, 0x28});
  llm::ToolCall call;
  call.name = "write_file";
  call.raw_arguments = bytes({'{', 0xE2, 0x82, '}'});
  reply.tool_calls.push_back(call);
  const nlohmann::json j = reply;  // to_json replaces without changing the message
  EXPECT_EQ(j.dump(), nlohmann::json::parse(j.dump()).dump());
  EXPECT_EQ(j["content"], kFffd + "(");
  EXPECT_EQ(j["tool_calls"][0]["raw_arguments"], "{" + kFffd + "}");
}

TEST(Utf8, FirstLineIsTheFirstNonBlankLineCutOnACharacterBoundary) {
  EXPECT_EQ(first_line("\n  \n  first\r\nsecond", 100), "first");
  EXPECT_EQ(first_line("", 10), "");
  // A cut never splits a character: "\xC2\xB5" is two bytes.
  EXPECT_EQ(first_line("abcd\xC2\xB5xyz", 8), "abcd...");
  EXPECT_EQ(first_line("abcdefghij", 8), "abcde...");
}
