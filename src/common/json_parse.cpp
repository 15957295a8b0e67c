#include "kagent/common/json_parse.hpp"

#include <string>
#include <type_traits>
#include <unordered_set>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"

namespace kagent {

namespace {

// nlohmann's message without its "[json.exception.x.y] " prefix and "parse error at line L,
// column C: " (the caller names the place).
std::string bare_message(const std::string& what) {
  std::string_view s = what;
  if (s.starts_with("[json.exception")) {
    size_t close = s.find("] ");
    if (close != std::string_view::npos) s.remove_prefix(close + 2);
  }
  if (s.starts_with("parse error")) {
    size_t colon = s.find(": ");
    if (colon != std::string_view::npos) s.remove_prefix(colon + 2);
  }
  return std::string(s);
}

// Builds the document on its own stack (nlohmann's recursive parts never see a deep one) and
// tracks the path of the value being read, for messages.
template <class Json>
class BoundedSax {
 public:
  using number_integer_t = typename Json::number_integer_t;
  using number_unsigned_t = typename Json::number_unsigned_t;
  using number_float_t = typename Json::number_float_t;
  using string_t = typename Json::string_t;
  using binary_t = typename Json::binary_t;

  BoundedSax(Json& root, const JsonLimits& limits) : root_(root), limits_(limits) {}

  bool null() { return value(Json(nullptr)); }
  bool boolean(bool v) { return value(Json(v)); }
  bool number_integer(number_integer_t v) { return value(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return value(Json(v)); }
  bool number_float(number_float_t v, const string_t&) { return value(Json(v)); }
  bool string(string_t& v) { return value(Json(std::move(v))); }
  bool binary(binary_t&) { return refuse("binary values are not JSON"); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& k) {
    Frame& f = frames_.back();
    if (f.keys.size() >= limits_.max_keys)
      return refuse(fmt::format("more than {} keys in one object", limits_.max_keys));
    if (!f.keys.insert(k).second) {
      f.key = k;
      return refuse(fmt::format("duplicate key \"{}\" (each key may appear once)", k));
    }
    f.key = k;
    return true;
  }

  template <class Exception>
  bool parse_error(std::size_t position, const std::string&, const Exception& ex) {
    // 406: a number out of range (1e400) is not a syntax error: name its key, not a column.
    const bool range = std::is_same_v<Exception, nlohmann::detail::out_of_range>;
    error_ = JsonTextError(range ? std::string::npos : (position > 0 ? position - 1 : 0), path(true),
                           range ? "number out of range: " + bare_message(ex.what()) : bare_message(ex.what()));
    failed_ = true;
    return false;
  }

  bool failed() const { return failed_; }
  const JsonTextError& error() const { return error_; }

 private:
  struct Frame {
    Json* value = nullptr;
    std::string key;                       // objects: the key being read
    size_t index = 0;                      // arrays: elements started so far
    std::unordered_set<std::string> keys;  // objects: the keys seen
  };

  Json& root_;
  JsonLimits limits_;
  std::vector<Frame> frames_;
  bool started_ = false;
  bool failed_ = false;
  size_t values_ = 0;
  JsonTextError error_{std::string::npos, "", ""};

  // Counts one more value; false (with the error set) past limits_.max_values.
  bool count_value() {
    if (limits_.max_values == 0 || ++values_ <= limits_.max_values) return true;
    failed_ = true;
    error_ = JsonTextError(std::string::npos, path(true),
                           fmt::format("more than {} values (objects, arrays, strings, numbers, true/false/null) "
                                       "in one document",
                                       limits_.max_values));
    return false;
  }

  // Places v where the parser is now and returns where it went.
  Json* place(Json&& v) {
    if (frames_.empty()) {
      started_ = true;
      root_ = std::move(v);
      return &root_;
    }
    Frame& f = frames_.back();
    if (f.value->is_array()) {
      ++f.index;
      f.value->push_back(std::move(v));
      return &f.value->back();
    }
    Json& slot = (*f.value)[f.key];
    slot = std::move(v);
    return &slot;
  }

  bool value(Json&& v) {
    if (!count_value()) return false;
    place(std::move(v));
    return true;
  }

  bool open(Json&& container) {
    if (!count_value()) return false;
    if (static_cast<int>(frames_.size()) >= limits_.max_depth) {
      failed_ = true;
      error_ = JsonTextError(std::string::npos, path(true),
                             fmt::format("nested deeper than {} levels of objects and arrays", limits_.max_depth));
      return false;
    }
    Json* at = place(std::move(container));
    frames_.push_back(Frame{at, {}, 0, {}});
    return true;
  }

  bool close() {
    frames_.pop_back();
    return true;
  }

  bool refuse(const std::string& what) {
    failed_ = true;
    error_ = JsonTextError(std::string::npos, path(false), what);
    return false;
  }

  // "a.b[2].c". pending: the value being read has not been placed yet (an array's next index).
  std::string path(bool pending) const {
    std::string out;
    for (size_t i = 0; i < frames_.size(); ++i) {
      const Frame& f = frames_[i];
      const bool innermost = i + 1 == frames_.size();
      if (f.value->is_array()) {
        size_t index = innermost && pending ? f.index : (f.index > 0 ? f.index - 1 : 0);
        out += fmt::format("[{}]", index);
      } else {
        out += (out.empty() ? "" : ".") + f.key;
      }
    }
    // 64 levels of "[0]" would crowd out the message itself.
    constexpr size_t kShown = 120;
    return out.size() > kShown ? out.substr(0, kShown - 3) + "..." : out;
  }
};

}  // namespace

template <class Json>
Json parse_json(std::string_view text, const JsonLimits& limits) {
  Json root;
  BoundedSax<Json> sax(root, limits);
  const bool ok = Json::sax_parse(text.begin(), text.end(), &sax, nlohmann::json::input_format_t::json, true);
  if (sax.failed()) throw sax.error();
  if (!ok) throw JsonTextError(text.size(), "", "not valid JSON");
  return root;
}

std::string json_text_error_message(const JsonTextError& e, std::string_view text, const std::string& where) {
  if (e.byte() != std::string::npos)
    return fmt::format("{}:{}:{}: not valid JSON: {}", where, line_of_offset(text, e.byte()),
                       column_of_offset(text, e.byte()), e.what());
  if (e.path().empty()) return fmt::format("{}: {}", where, e.what());
  return fmt::format("{}: key {}: {}", where, e.path(), e.what());
}

template <class Json>
Json parse_json_input(std::string_view text, const std::string& where, const JsonLimits& limits) {
  try {
    return parse_json<Json>(text, limits);
  } catch (const JsonTextError& e) {
    throw InputError(json_text_error_message(e, text, where));
  }
}

template nlohmann::json parse_json<nlohmann::json>(std::string_view, const JsonLimits&);
template nlohmann::ordered_json parse_json<nlohmann::ordered_json>(std::string_view, const JsonLimits&);
template nlohmann::json parse_json_input<nlohmann::json>(std::string_view, const std::string&, const JsonLimits&);
template nlohmann::ordered_json parse_json_input<nlohmann::ordered_json>(std::string_view, const std::string&,
                                                                         const JsonLimits&);

}  // namespace kagent
