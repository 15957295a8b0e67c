#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kagent/llm/sse.hpp"

using namespace kagent::llm;
using namespace std::chrono_literals;

namespace {

// Everything the parser yields for `stream` fed in pieces of `step` bytes (0: all at once),
// including what finish() flushes.
std::vector<SseEvent> parse(const std::string& stream, size_t step = 0) {
  SseParser p;
  std::vector<SseEvent> all;
  auto take = [&all](std::vector<SseEvent> events) {
    for (auto& e : events) all.push_back(std::move(e));
  };
  if (step == 0) {
    take(p.feed(stream));
  } else {
    for (size_t i = 0; i < stream.size(); i += step) take(p.feed(std::string_view(stream).substr(i, step)));
  }
  take(p.finish());
  return all;
}

void expect_events(const std::vector<SseEvent>& got, const std::vector<SseEvent>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].event, want[i].event) << "event " << i;
    EXPECT_EQ(got[i].data, want[i].data) << "event " << i;
  }
}

// An Anthropic-like stream with every feature at once: names, comments, multi-line data.
const std::string kStream =
    "event: message_start\n"
    "data: {\"type\":\"message_start\"}\n"
    "\n"
    ": keep-alive\n"
    "\n"
    "event:content_block_delta\n"
    "data:{\"text\":\"a\"}\n"
    "\n"
    "data: line one\n"
    "data: line two\n"
    "data:\n"
    "\n"
    "data: [DONE]\n"
    "\n";

const std::vector<SseEvent> kEvents = {
    {"message_start", "{\"type\":\"message_start\"}"},
    {"content_block_delta", "{\"text\":\"a\"}"},
    {"", "line one\nline two\n"},
    {"", "[DONE]"},
};

std::string with_line_ends(const std::string& lf_text, const std::string& eol) {
  std::string out;
  for (char c : lf_text) out += c == '\n' ? eol : std::string(1, c);
  return out;
}

}  // namespace

TEST(Sse, WholeStreamAtOnce) {
  expect_events(parse(kStream), kEvents);
}

TEST(Sse, AnyChunkBoundaryGivesTheSameEvents) {
  for (size_t step : {1, 2, 3, 5, 7, 13})
    for (const char* eol : {"\n", "\r\n", "\r"}) {
      SCOPED_TRACE("step " + std::to_string(step) + " eol " + (eol[0] == '\n' ? "LF" : eol[1] ? "CRLF" : "CR"));
      expect_events(parse(with_line_ends(kStream, eol), step), kEvents);
    }
}

TEST(Sse, EveryTwoWaySplitOfACrlfStream) {
  const std::string crlf = with_line_ends(kStream, "\r\n");
  for (size_t cut = 0; cut <= crlf.size(); ++cut) {
    SseParser p;
    auto got = p.feed(std::string_view(crlf).substr(0, cut));
    for (auto& e : p.feed(std::string_view(crlf).substr(cut))) got.push_back(std::move(e));
    for (auto& e : p.finish()) got.push_back(std::move(e));
    SCOPED_TRACE("cut at " + std::to_string(cut));
    expect_events(got, kEvents);
  }
}

TEST(Sse, EventIsDispatchedAsSoonAsItsBlankLineArrives) {
  SseParser p;
  EXPECT_TRUE(p.feed("data: a\n").empty());
  auto events = p.feed("\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "a");
  // With CRLF split after the blank line's CR, the event is still complete: nothing waits on LF.
  EXPECT_TRUE(p.feed("data: b\r\n").empty());
  events = p.feed("\r");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "b");
  EXPECT_TRUE(p.feed("\n").empty());  // that CR's LF is not another blank line
  EXPECT_TRUE(p.finish().empty());
}

TEST(Sse, CommentsAndUnknownFieldsAreIgnored) {
  expect_events(parse(":hello\nid: 7\nretry: 100\nfoo\ndata: x\n:between\n\n"), {{"", "x"}});
  expect_events(parse(": only a comment\n\n"), {});
}

TEST(Sse, OnlyOneLeadingSpaceIsStripped) {
  expect_events(parse("data:  two spaces\n\ndata:none\n\n"), {{"", " two spaces"}, {"", "none"}});
}

TEST(Sse, ColonsInTheValueAreKept) {
  expect_events(parse("data: {\"a\": \"b:c\"}\n\n"), {{"", "{\"a\": \"b:c\"}"}});
}

TEST(Sse, EventNameWithoutDataIsStillAnEvent) {
  expect_events(parse("event: ping\n\n"), {{"ping", ""}});
}

TEST(Sse, EmptyDataLineMakesAnEvent) {
  expect_events(parse("data\n\n"), {{"", ""}});
}

TEST(Sse, BlankLinesAloneDispatchNothing) {
  expect_events(parse("\n\n\r\n\r\r\n"), {});
}

TEST(Sse, FinishFlushesALastEventWithoutBlankLine) {
  SseParser p;
  EXPECT_TRUE(p.feed("event: end\ndata: tail").empty());
  auto events = p.finish();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "end");
  EXPECT_EQ(events[0].data, "tail");
  EXPECT_TRUE(p.finish().empty());  // finish() leaves the parser empty

  expect_events(parse("data: a\r"), {{"", "a"}});  // a stream that ended on a CR
}

TEST(Sse, DoneMarkerIsPassedThroughAsData) {
  expect_events(parse("data: {\"x\":1}\n\ndata: [DONE]\n\n"), {{"", "{\"x\":1}"}, {"", "[DONE]"}});
}

TEST(Sse, ResetDropsAPartialEvent) {
  SseParser p;
  EXPECT_TRUE(p.feed("event: old\ndata: partial\ndata: li").empty());
  p.reset();
  auto events = p.feed("data: fresh\n\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].event, "");
  EXPECT_EQ(events[0].data, "fresh");
}

// One event of 32 MB (a model's huge tool arguments) arriving in 256-byte chunks: the parser
// rescanned its whole buffer per chunk, about 2*10^12 byte visits here (many minutes); linear,
// it is well under a second. Not a timed assertion: the test's CTest TIMEOUT catches the
// quadratic version.
TEST(Sse, ALargeEventInSmallChunksIsLinear) {
  const size_t size = size_t{32} << 20;
  std::string stream = "data: {\"arguments\": \"" + std::string(size, 'x') + "\"}\n\n";
  kagent::llm::SseParser parser;
  std::vector<kagent::llm::SseEvent> events;
  for (size_t at = 0; at < stream.size(); at += 256) {
    auto got = parser.feed(std::string_view(stream).substr(at, 256));
    events.insert(events.end(), got.begin(), got.end());
  }
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data.size(), size + 17);
  EXPECT_TRUE(parser.finish().empty());
}
