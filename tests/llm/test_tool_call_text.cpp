// Tool calls read from an assistant reply's text (llm/tool_call_text.hpp): Qwen/Hermes tags, a bare
// JSON call or list, fences, Llama's "parameters", OpenAI's "function" shape, arguments encoded
// twice, a closing tag inside a file's text, a block cut at the reply's end, and every malformed
// form answered with words for the model instead of an exception.
#include <gtest/gtest.h>

#include <string>

#include "kagent/llm/tool_call_text.hpp"

using namespace kagent::llm;

TEST(ToolCallText, HermesTagsInOrderWithTheProseKept) {
  const auto r = tool_calls_in_text(
      "I will write the kernel first.\n<tool_call>\n{\"name\": \"write_file\", \"arguments\": {\"path\": \"k.cu\", "
      "\"content\": \"// k\"}}\n</tool_call>\n<tool_call>{\"name\": \"evaluate\", \"arguments\": {\"path\": "
      "\"k.cu\"}}</tool_call>");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_EQ(r.calls[0].name, "write_file");
  EXPECT_EQ(r.calls[0].arguments["content"], "// k");
  EXPECT_EQ(r.calls[1].name, "evaluate");
  EXPECT_EQ(r.calls[1].arguments["path"], "k.cu");
  EXPECT_TRUE(r.calls[1].arguments_error.empty());
  EXPECT_FALSE(r.calls[0].id.empty());
  EXPECT_NE(r.calls[0].id, r.calls[1].id);
  EXPECT_EQ(r.text, "I will write the kernel first.");
}

TEST(ToolCallText, ABlockCutAtTheReplysEndStillCounts) {
  // Generation often stops at the closing tag, which the server then leaves out.
  const auto r = tool_calls_in_text("<tool_call>\n{\"name\": \"compile\", \"arguments\": {\"path\": \"a.cu\"}}\n");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].arguments["path"], "a.cu");
  EXPECT_EQ(r.text, "");
}

TEST(ToolCallText, AClosingTagInsideTheArgumentsDoesNotEndTheBlock) {
  const auto r = tool_calls_in_text(
      "<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"notes.md\", \"content\": \"a </tool_call> "
      "b\"}}</tool_call> done");
  ASSERT_EQ(r.calls.size(), 1u) << (r.errors.empty() ? "" : r.errors[0]);
  EXPECT_EQ(r.calls[0].arguments["content"], "a </tool_call> b");
  EXPECT_EQ(r.text, "done");
}

TEST(ToolCallText, BareJsonFencesListsAndOtherShapes) {
  auto r = tool_calls_in_text("  {\"name\": \"finish\", \"arguments\": {\"path\": \"k.cu\"}}  ");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].name, "finish");

  r = tool_calls_in_text(
      "```json\n[{\"name\": \"compile\", \"arguments\": {\"path\": \"a.cu\"}}, "
      "{\"name\": \"evaluate\", \"parameters\": {\"path\": \"a.cu\"}}]\n```");
  ASSERT_EQ(r.calls.size(), 2u);
  EXPECT_EQ(r.calls[1].name, "evaluate");
  EXPECT_EQ(r.calls[1].arguments["path"], "a.cu");  // Llama's "parameters"

  // OpenAI's shape, with the arguments as a JSON string, and an id kept.
  r = tool_calls_in_text(
      "<tool_call>{\"id\": \"c7\", \"function\": {\"name\": \"read_file\", \"arguments\": \"{\\\"path\\\": "
      "\\\"x\\\"}\"}}</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_EQ(r.calls[0].id, "c7");
  EXPECT_EQ(r.calls[0].name, "read_file");
  EXPECT_EQ(r.calls[0].arguments["path"], "x");

  // No arguments at all: an empty object.
  r = tool_calls_in_text("<tool_call>{\"name\": \"list_files\"}</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_TRUE(r.calls[0].arguments.is_object());
  EXPECT_TRUE(r.calls[0].arguments.empty());
}

TEST(ToolCallText, ProseIsNotACall) {
  for (const char* text : {"The kernel is done.", "{curly prose}", "[1, 2, 3]", "{\"path\": \"k.cu\"}", ""}) {
    const auto r = tool_calls_in_text(text);
    EXPECT_TRUE(r.calls.empty()) << text;
    EXPECT_TRUE(r.errors.empty()) << text;
    EXPECT_EQ(r.text, std::string(text)) << text;
  }
}

TEST(ToolCallText, MalformedCallsAreWordsForTheModel) {
  auto r = tool_calls_in_text("<tool_call>{\"name\": \"evaluate\", \"arguments\": {\"path\": </tool_call>");
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_NE(r.errors[0].find("tool call 1: not valid JSON"), std::string::npos) << r.errors[0];

  r = tool_calls_in_text("<tool_call>{\"arguments\": {}}</tool_call><tool_call>[1]</tool_call>");
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 2u);
  EXPECT_NE(r.errors[0].find("tool call 1: no \"name\""), std::string::npos) << r.errors[0];
  EXPECT_NE(r.errors[1].find("tool call 2: a JSON array"), std::string::npos) << r.errors[1];

  // Arguments that are not an object: the call is kept, with the reason, for an error result.
  r = tool_calls_in_text("<tool_call>{\"name\": \"evaluate\", \"arguments\": [\"k.cu\"]}</tool_call>");
  ASSERT_EQ(r.calls.size(), 1u);
  EXPECT_TRUE(r.calls[0].arguments.is_null());
  EXPECT_NE(r.calls[0].arguments_error.find("not an object"), std::string::npos) << r.calls[0].arguments_error;

  // Nesting far past the bound: refused, not recursed.
  r = tool_calls_in_text("<tool_call>" + std::string(100000, '[') + "</tool_call>");
  EXPECT_TRUE(r.calls.empty());
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_LE(r.errors[0].size(), 200u);
}

TEST(ToolCallText, CompleteToolCallParsesRawArguments) {
  ToolCall c;
  c.name = "compile";
  c.raw_arguments = "\"{\\\"path\\\": \\\"a.cu\\\"}\"";  // encoded twice
  complete_tool_call(c);
  EXPECT_EQ(c.arguments["path"], "a.cu");
  EXPECT_TRUE(c.arguments_error.empty());
  EXPECT_EQ(c.id.rfind("call_kagent_", 0), 0u);

  ToolCall bad;
  bad.id = "x";
  bad.name = "compile";
  bad.raw_arguments = "{\"path\": ";
  complete_tool_call(bad);
  EXPECT_EQ(bad.id, "x");
  EXPECT_TRUE(bad.arguments.is_null());
  EXPECT_NE(bad.arguments_error.find("the arguments of tool call 'compile' are not valid JSON"), std::string::npos);
}
