#pragma once
// JSON Lines files kagent appends to and reads back (results.jsonl, transcript.jsonl). A kill in
// the middle of a write leaves a last line without its newline: the one kind of damage that is
// expected. Writers cut it off before appending; readers leave it out. Any other bad line is an
// error: a complete line was written whole, so if it does not parse, the file is not ours.
#include <cstddef>
#include <filesystem>
#include <functional>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/json_parse.hpp"

namespace kagent {

// Cuts a last line that has no newline off the file open as fd (O_RDWR), so that the next append
// starts a line of its own. Throws InputError naming path when it cannot.
void cut_torn_last_line(int fd, const std::filesystem::path& path);

struct JsonlLine {
  int number = 0;  // 1-based line number in the file
  nlohmann::json value;
};

// What one line may hold, beyond the file's own bound (64 MiB, files.hpp): 0 bytes for no bound
// of its own.
struct JsonlLimits {
  size_t max_line_bytes = 0;
  JsonLimits json;
};

// Every line of a JSON Lines file as a JSON object (bounded: json_parse.hpp; empty lines are
// skipped), handed to `each` in order, one at a time, so that only one line's document is alive
// at once. An unterminated last line that is not a JSON object is a torn write and left out (its
// line number is returned, 0 when there is none); any other bad line, or one over `limits`, throws
// InputError "<path>:<line>: <what>".
int for_each_jsonl(const std::filesystem::path& path, const std::function<void(JsonlLine&&)>& each,
                   const JsonlLimits& limits = {});

// The same, every line kept.
std::vector<JsonlLine> read_jsonl(const std::filesystem::path& path, const JsonlLimits& limits = {});

}  // namespace kagent
