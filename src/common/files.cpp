#include "kagent/common/files.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

bool resolves_inside(const std::filesystem::path& folder, const std::filesystem::path& path,
                     std::filesystem::path* resolved) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // A trailing '/' would be an empty last component that no file inside shares.
  auto canonical = [&](const fs::path& p) {
    fs::path c = fs::weakly_canonical(fs::absolute(p, ec), ec);
    return !c.has_filename() && c.has_relative_path() ? c.parent_path() : c;
  };
  const fs::path inside = canonical(folder);
  if (ec) return false;
  const fs::path target = canonical(path);
  if (ec) return false;
  if (resolved != nullptr) *resolved = target;
  // Component by component: "/a/bc" is not inside "/a/b".
  return std::mismatch(inside.begin(), inside.end(), target.begin(), target.end()).first == inside.end();
}

std::string read_text_file(const std::filesystem::path& path, size_t max_bytes) {
  // O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever before the type check.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    if (err == ENOENT) throw InputError(fmt::format("{}: no such file", path.string()));
    throw InputError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(err)));
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    if (dir) throw InputError(fmt::format("{}: is a directory, expected a file", path.string()));
    throw InputError(fmt::format("{}: not a regular file (a FIFO, device or socket is not read)", path.string()));
  }
  auto too_large = [&](size_t size) {
    ::close(fd);
    return InputError(fmt::format("{}: {} bytes, more than the {} bytes kagent reads from one input file",
                                  path.string(), size, max_bytes));
  };
  if (static_cast<uint64_t>(st.st_size) > max_bytes) throw too_large(static_cast<size_t>(st.st_size));
  // The size is only a hint (/proc files say 0, a file may grow): read to the end, up to the cap.
  std::string text;
  text.resize(static_cast<size_t>(st.st_size) + 1);
  size_t done = 0;
  for (;;) {
    if (done == text.size()) {
      if (text.size() > max_bytes) throw too_large(text.size());
      text.resize(std::min(std::max<size_t>(text.size() * 2, 4096), max_bytes + 1));
    }
    ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw InputError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(err)));
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  if (done > max_bytes) throw too_large(done);
  ::close(fd);
  text.resize(done);
  return text;
}

void write_file_atomic(const std::filesystem::path& path, std::string_view contents) {
  // The temporary lives in the target's folder so rename(2) stays on one file system (atomic).
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  auto tmp = path;
  tmp += fmt::format(".tmp.{}.{:x}", ::getpid(), rng());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0)
    throw Error(ExitCode::environment, fmt::format("{}: cannot create: {}", tmp.string(), std::strerror(errno)));
  size_t done = 0;
  while (done < contents.size()) {
    ssize_t n = ::write(fd, contents.data() + done, contents.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(ExitCode::environment, fmt::format("{}: write failed: {}", tmp.string(), std::strerror(err)));
    }
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw Error(ExitCode::environment, fmt::format("{}: rename failed: {}", path.string(), std::strerror(err)));
  }
}

int line_of_offset(std::string_view text, size_t offset) {
  if (offset > text.size()) offset = text.size();
  int line = 1;
  for (size_t i = 0; i < offset; ++i)
    if (text[i] == '\n') ++line;
  return line;
}

int column_of_offset(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  size_t newline = text.rfind('\n', offset == 0 ? 0 : offset - 1);
  if (offset == 0 || newline == std::string_view::npos) return static_cast<int>(offset) + 1;
  return static_cast<int>(offset - newline);
}

}  // namespace kagent
