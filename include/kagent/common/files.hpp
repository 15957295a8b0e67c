#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace kagent {

// Reads a whole file; throws InputError naming the path when it is missing or unreadable.
std::string read_text_file(const std::filesystem::path& path);

// Writes a file atomically: a temporary file in the same folder, then rename(2), so readers
// (and other kagent processes) never see a half-written file. Throws Error on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

// 1-based line number of a byte offset in text.
int line_of_offset(std::string_view text, size_t offset);

}  // namespace kagent
