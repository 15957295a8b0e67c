// The bounded JSON parse every reader of outside text uses: what nlohmann alone would accept
// silently, crash on, or report as an internal error is refused with the place named.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/common/json_parse.hpp"

using namespace kagent;

namespace {

template <class Json = nlohmann::json>
JsonTextError error_of(const std::string& text, const JsonLimits& limits = {}) {
  try {
    parse_json<Json>(text, limits);
  } catch (const JsonTextError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << text.substr(0, 200);
  return JsonTextError(0, "", "");
}

std::string nested(size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

}  // namespace

TEST(JsonParse, ParsesOrdinaryDocumentsAsNlohmannDoes) {
  const std::string text = R"({"b": [1, 2.5, -3, true, null, "s"], "a": {"x": {}}, "u": 18446744073709551615})";
  EXPECT_EQ(parse_json<nlohmann::json>(text), nlohmann::json::parse(text));
  auto ordered = parse_json<nlohmann::ordered_json>(text);
  EXPECT_EQ(ordered.begin().key(), "b");  // the file's order kept
  EXPECT_EQ(ordered, nlohmann::ordered_json::parse(text));
}

TEST(JsonParse, NestingIsRefusedBeforeAnythingRecursesAndTheErrorNamesWhere) {
  // 10^4 deep overflowed the stack in copies, dumps and error excerpts; 10^6 must not either.
  auto e = error_of(R"({"a": {"b": [)" + nested(1'000'000) + "]}}");
  EXPECT_NE(std::string(e.what()).find("nested deeper than 64"), std::string::npos) << e.what();
  EXPECT_EQ(e.path().rfind("a.b[0]", 0), 0u) << e.path();
  EXPECT_EQ(e.byte(), std::string::npos);  // not a syntax error
  EXPECT_NO_THROW(parse_json<nlohmann::json>(nested(63)));
  error_of<nlohmann::ordered_json>(nested(10'000));
  EXPECT_NO_THROW(parse_json<nlohmann::json>(nested(200), JsonLimits{.max_depth = 256}));
}

TEST(JsonParse, DuplicateKeysAreRefusedNamingTheKey) {
  auto e = error_of(R"({"inputs": {"x": {"shape": [1], "shape": [2]}}})");
  EXPECT_EQ(e.path(), "inputs.x.shape");
  EXPECT_NE(std::string(e.what()).find("duplicate key \"shape\""), std::string::npos) << e.what();
  // The same key in two objects is fine.
  EXPECT_NO_THROW(parse_json<nlohmann::json>(R"([{"a": 1}, {"a": 2}])"));
}

TEST(JsonParse, NumbersOutOfRangeNameTheirKeyNotAColumn) {
  auto e = error_of<nlohmann::ordered_json>(R"({"budget": {"minutes": 1e400}})");
  EXPECT_EQ(e.path(), "budget.minutes");
  EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
  EXPECT_EQ(error_of(R"({"shape": [4, -1e999]})").path(), "shape[1]");
  EXPECT_EQ(error_of("[" + std::string(400, '9') + "]").path(), "[0]");
}

TEST(JsonParse, ObjectsWithTooManyKeysAreRefusedQuickly) {
  // ordered_json finds keys by a linear search: 10^5 keys took minutes. Refused at the limit.
  std::string text = "{";
  for (int i = 0; i < 100'000; ++i) text += (i ? ",\"k" : "\"k") + std::to_string(i) + "\":0";
  text += "}";
  const auto t0 = std::chrono::steady_clock::now();
  auto e = error_of<nlohmann::ordered_json>(text);
  EXPECT_NE(std::string(e.what()).find("more than 4096 keys"), std::string::npos) << e.what();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(30));
}

TEST(JsonParse, SyntaxErrorsCarryTheirOffset) {
  auto e = error_of("{\n  \"a\": 1,,\n}");
  EXPECT_EQ(e.byte(), 11u);  // the second comma
  try {
    parse_json_input<nlohmann::json>("{\n  \"a\": 1,,\n}", "f.json");
    ADD_FAILURE();
  } catch (const InputError& err) {
    EXPECT_EQ(std::string(err.what()).rfind("f.json:2:10: not valid JSON: ", 0), 0u) << err.what();
  }
  try {
    parse_json_input<nlohmann::json>(R"({"a": {"a": 1, "a": 2}})", "f.json");
    ADD_FAILURE();
  } catch (const InputError& err) {
    EXPECT_EQ(std::string(err.what()).rfind("f.json: key a.a: duplicate key", 0), 0u) << err.what();
  }
  EXPECT_THROW(parse_json<nlohmann::json>(""), JsonTextError);
  EXPECT_THROW(parse_json<nlohmann::json>("{} x"), JsonTextError);
}

TEST(JsonParse, ValuesAreCountedAndABoundOnThemNamesWhere) {
  // Every kind counts: the object, the array, its items.
  EXPECT_NO_THROW(parse_json<nlohmann::json>(R"({"a": [1, "s", null, {}]})", JsonLimits{.max_values = 6}));
  auto e = error_of(R"({"a": [1, "s", null, {}, []]})", JsonLimits{.max_values = 6});
  EXPECT_NE(std::string(e.what()).find("more than 6 values"), std::string::npos) << e.what();
  EXPECT_EQ(e.path(), "a[4]");
  // 10^6 empty arrays (3 bytes each, some 50 bytes each as a DOM) stop at the bound.
  std::string many = "[";
  for (int i = 0; i < 1'000'000; ++i) many += "[],";
  many += "[]]";
  e = error_of(many, JsonLimits{.max_values = 1000});
  EXPECT_NE(std::string(e.what()).find("more than 1000 values"), std::string::npos) << e.what();
  EXPECT_NO_THROW(parse_json<nlohmann::json>(many)) << "no bound unless asked for";
}
