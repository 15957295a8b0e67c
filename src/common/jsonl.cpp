#include "kagent/common/jsonl.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/common/json_parse.hpp"

namespace kagent {

void cut_torn_last_line(int fd, const std::filesystem::path& path) {
  const off_t size = ::lseek(fd, 0, SEEK_END);
  if (size < 0)
    throw InputError(fmt::format("{}: cannot repair a torn last line ({})", path.string(), std::strerror(errno)));
  // Back from the end to the last newline, a block at a time.
  off_t keep = size;
  char block[4096];
  while (keep > 0) {
    const off_t from = keep > static_cast<off_t>(sizeof block) ? keep - static_cast<off_t>(sizeof block) : 0;
    const ssize_t n = ::pread(fd, block, static_cast<size_t>(keep - from), from);
    if (n != keep - from)
      throw InputError(fmt::format("{}: cannot repair a torn last line (read failed)", path.string()));
    const void* nl = ::memrchr(block, '\n', static_cast<size_t>(n));
    if (nl != nullptr) {
      keep = from + (static_cast<const char*>(nl) - block) + 1;
      break;
    }
    keep = from;
  }
  if (keep != size && ::ftruncate(fd, keep) != 0)
    throw InputError(fmt::format("{}: cannot repair a torn last line ({})", path.string(), std::strerror(errno)));
}

int for_each_jsonl(const std::filesystem::path& path, const std::function<void(JsonlLine&&)>& each,
                   const JsonlLimits& limits) {
  const std::string text = read_text_file(path);
  size_t pos = 0;
  int number = 0;
  while (pos < text.size()) {
    ++number;
    const size_t nl = text.find('\n', pos);
    const bool terminated = nl != std::string::npos;
    std::string_view line(text.data() + pos, (terminated ? nl : text.size()) - pos);
    pos = terminated ? nl + 1 : text.size();
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    if (limits.max_line_bytes > 0 && line.size() > limits.max_line_bytes) {
      if (!terminated) return number;  // torn
      throw InputError(fmt::format("{}:{}: a line of {} bytes: at most {} bytes are read per line", path.string(),
                                   number, line.size(), limits.max_line_bytes));
    }
    try {
      nlohmann::json j = parse_json<nlohmann::json>(line, limits.json);
      if (!j.is_object()) {
        if (!terminated) return number;  // torn
        throw InputError(
            fmt::format("{}:{}: expected a JSON object, got a JSON {}", path.string(), number, j.type_name()));
      }
      each({number, std::move(j)});
    } catch (const JsonTextError& e) {
      if (!terminated) return number;  // a line torn by a kill: what came before stands
      const std::string where = fmt::format("{}:{}", path.string(), number);
      if (e.byte() != std::string::npos)
        throw InputError(fmt::format("{}: not valid JSON at column {}: {}", where, e.byte() + 1, e.what()));
      throw InputError(json_text_error_message(e, line, where));
    }
  }
  return 0;
}

std::vector<JsonlLine> read_jsonl(const std::filesystem::path& path, const JsonlLimits& limits) {
  std::vector<JsonlLine> out;
  for_each_jsonl(
      path, [&](JsonlLine&& line) { out.push_back(std::move(line)); }, limits);
  return out;
}

}  // namespace kagent
