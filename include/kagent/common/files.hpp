#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace kagent {

// The most bytes read_text_file reads unless told otherwise: far above any op.json, candidate,
// manifest, results file or transcript kagent meets, far below what would exhaust memory.
constexpr size_t kMaxInputFileBytes = size_t{64} << 20;

// Reads a whole regular file (a FIFO, a device such as /dev/zero or a socket would block or never
// end) of at most max_bytes; throws InputError naming the path when it is missing, not a regular
// file, too large or unreadable.
std::string read_text_file(const std::filesystem::path& path, size_t max_bytes = kMaxInputFileBytes);

// Writes a file atomically: a temporary file in the same folder, then rename(2), so readers
// (and other kagent processes) never see a half-written file. Throws Error on failure.
void write_file_atomic(const std::filesystem::path& path, std::string_view contents);

// Whether `path` lies inside `folder` once both are made absolute and every symlink in them is
// followed (std::filesystem::weakly_canonical: a missing tail is normalized lexically). "../x",
// an absolute path elsewhere and a symlink that leads out are all outside. `resolved`, when given,
// receives where path leads. Paths named by data files people download (an op.json, a problem
// folder) are held to this: otherwise a file could make kagent read any file of the host (an API
// key in /proc/self/environ) into a prompt.
bool resolves_inside(const std::filesystem::path& folder, const std::filesystem::path& path,
                     std::filesystem::path* resolved = nullptr);

// 1-based line number of a byte offset in text, and its 1-based column.
int line_of_offset(std::string_view text, size_t offset);
int column_of_offset(std::string_view text, size_t offset);

}  // namespace kagent
