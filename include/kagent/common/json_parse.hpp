#pragma once
// JSON text from outside kagent (op.json, plans, manifests, results and transcripts, an endpoint's
// replies, a model's tool-call arguments) parsed with bounds. nlohmann alone accepts what later
// crashes or misleads: nesting 10^4 deep (copies, dumps and error excerpts then recurse off the
// stack), duplicate keys (the last silently wins), a number such as 1e400 (an out_of_range
// exception that reads as an internal error), 10^5 keys in one ordered_json object (each insert
// searches the object linearly). parse_json refuses all of these, naming where, before anything
// recurses: the document is built by a SAX handler that keeps its own stack.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace kagent {

struct JsonLimits {
  int max_depth = 64;      // nested objects and arrays
  size_t max_keys = 4096;  // keys of one object
  // Values of every kind in the document (objects, arrays, strings, numbers, true/false/null).
  // The DOM costs some 50-100 bytes a value beyond the text, so "[[],[],...]" takes 20 to 50
  // times its size: readers of large texts bound this as well as the size. 0: no bound.
  size_t max_values = 0;
};

// Why a text was refused. byte: 0-based offset of a syntax error (npos when the fault is not a
// syntax error); path: where in the document ("inputs.x.shape[0]", "" for the top level);
// detail: what is wrong, without a location.
class JsonTextError : public std::runtime_error {
 public:
  JsonTextError(size_t byte, std::string path, const std::string& detail)
      : std::runtime_error(detail), byte_(byte), path_(std::move(path)) {}
  size_t byte() const { return byte_; }
  const std::string& path() const { return path_; }

 private:
  size_t byte_;
  std::string path_;
};

// Json is nlohmann::json or nlohmann::ordered_json (instantiated in json_parse.cpp).
// Throws JsonTextError for a syntax error or a broken limit, a duplicate key, a number out of range.
template <class Json>
Json parse_json(std::string_view text, const JsonLimits& limits = {});

// The same with the error as InputError: "<where>:<line>:<column>: not valid JSON: <detail>" for a
// syntax error, "<where>: key <path>: <detail>" (or "<where>: <detail>" at the top level) otherwise.
template <class Json>
Json parse_json_input(std::string_view text, const std::string& where, const JsonLimits& limits = {});

// "<where>..." as parse_json_input words it, for callers that catch JsonTextError themselves.
std::string json_text_error_message(const JsonTextError& e, std::string_view text, const std::string& where);

}  // namespace kagent
