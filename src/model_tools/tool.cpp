#include "kagent/model_tools/tool.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kagent/common/saturate.hpp"

namespace kagent::model_tools {

namespace {

// A value as the model sent it, short enough for an error message.
std::string shown(const nlohmann::json& value) {
  std::string s = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

const nlohmann::json* find_arg(const nlohmann::json& args, const std::string& name) {
  if (!args.is_object()) return nullptr;
  auto it = args.find(name);
  // A null counts as absent: models often send null for optional arguments they do not use.
  if (it == args.end() || it->is_null()) return nullptr;
  return &*it;
}

bool is_continuation(char c) {
  return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

size_t count_lines(std::string_view s) {
  if (s.empty()) return 0;
  size_t n = static_cast<size_t>(std::count(s.begin(), s.end(), '\n'));
  return s.back() == '\n' ? n : n + 1;
}

std::string marker(size_t bytes, size_t lines) {
  return fmt::format("[... {} bytes, {} line{} left out ...]", bytes, lines, lines == 1 ? "" : "s");
}

}  // namespace

std::optional<std::chrono::milliseconds> Tool::time_left() const {
  if (!deadline_) return std::nullopt;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - std::chrono::steady_clock::now());
  return std::max(left, std::chrono::milliseconds(1000));
}

std::string arg_string(const nlohmann::json& args, const std::string& name) {
  const nlohmann::json* v = find_arg(args, name);
  if (v == nullptr) throw ToolError(fmt::format("argument '{}' is required (a string)", name));
  if (!v->is_string()) throw ToolError(fmt::format("argument '{}' must be a string, got {}", name, shown(*v)));
  return v->get<std::string>();
}

std::optional<int64_t> arg_int(const nlohmann::json& args, const std::string& name, int64_t lo, int64_t hi) {
  const nlohmann::json* v = find_arg(args, name);
  if (v == nullptr) return std::nullopt;
  auto bad = [&] {
    return ToolError(fmt::format("argument '{}' must be an integer from {} to {}, got {}", name, lo, hi, shown(*v)));
  };
  // JSON has one number type; some models write 400.0 for 400. Whole values are fine.
  auto n = json_integer(*v, lo, hi);
  if (!n) throw bad();
  return n;
}

std::string cut_middle(const std::string& text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  // The marker's longest form (every byte and line left out) is reserved from the budget, so the
  // result stays within max_bytes whenever max_bytes can hold a marker at all.
  size_t reserve = marker(text.size(), text.size()).size() + 2;
  size_t budget = max_bytes > reserve ? max_bytes - reserve : 0;
  size_t head_budget = budget * 2 / 3;
  size_t tail_budget = budget - head_budget;
  // A line boundary is "near" within a quarter of the part (at most 2 KiB): a little less text
  // for a cut the model can read line by line.
  auto near = [](size_t part) { return std::min<size_t>(part / 4, 2048); };

  size_t head_end = head_budget;
  if (head_budget > 0) {
    size_t nl = text.rfind('\n', head_budget - 1);
    if (nl != std::string::npos && nl + 1 + near(head_budget) >= head_budget) {
      head_end = nl + 1;
    } else {
      while (head_end > 0 && is_continuation(text[head_end])) --head_end;  // never split a UTF-8 sequence
    }
  }

  size_t tail_start = text.size() - tail_budget;
  if (tail_budget > 0) {
    size_t nl = text.find('\n', tail_start - 1);
    if (nl != std::string::npos && nl + 1 <= tail_start + near(tail_budget)) {
      tail_start = nl + 1;
    } else {
      while (tail_start < text.size() && is_continuation(text[tail_start])) ++tail_start;
    }
  }
  tail_start = std::max(tail_start, head_end);

  std::string_view left_out(text.data() + head_end, tail_start - head_end);
  std::string out = text.substr(0, head_end);
  if (!out.empty() && out.back() != '\n') out += '\n';
  out += marker(left_out.size(), count_lines(left_out));
  out += '\n';
  out.append(text, tail_start);
  return out;
}

}  // namespace kagent::model_tools
