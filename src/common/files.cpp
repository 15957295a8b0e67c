#include "kagent/common/files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent {

std::string read_text_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(fmt::format("{}: no such file", path.string()));
  if (std::filesystem::is_directory(path, ec))
    throw InputError(fmt::format("{}: is a directory, expected a file", path.string()));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(fmt::format("{}: cannot read: {}", path.string(), std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file_atomic(const std::filesystem::path& path, std::string_view contents) {
  // The temporary lives in the target's folder so rename(2) stays on one file system (atomic).
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  auto tmp = path;
  tmp += fmt::format(".tmp.{}.{:x}", ::getpid(), rng());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error(ExitCode::environment, fmt::format("{}: cannot create: {}", tmp.string(), std::strerror(errno)));
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

}  // namespace kagent
