#include "kagent/agent/transcript.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "kagent/agent/transcript_events.hpp"
#include "kagent/common/error.hpp"
#include "kagent/common/jsonl.hpp"

namespace kagent::agent {

Transcript::Transcript(const std::filesystem::path& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) throw EnvError(fmt::format("{}: cannot open the transcript for writing", path.string()));
  // A run killed mid-write left a partial last line: cut it, or the next line would continue it
  // and the resume after this one would fail on the merged line.
  try {
    cut_torn_last_line(fd, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  f_ = ::fdopen(fd, "a");
  if (f_ == nullptr) {
    ::close(fd);
    throw EnvError(fmt::format("{}: cannot open the transcript for writing", path.string()));
  }
}

Transcript::~Transcript() {
  if (f_ != nullptr) std::fclose(f_);
}

void Transcript::write(nlohmann::json event) {
  using namespace std::chrono;
  event["t"] = duration<double>(system_clock::now().time_since_epoch()).count();
  const std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), f_) != line.size() || std::fflush(f_) != 0)
    throw EnvError(fmt::format("{}: cannot write the transcript (disk full?)", path_.string()));
  fsync(fileno(f_));  // the line survives a crash of the machine, not only of kagent
}

std::vector<nlohmann::json> Transcript::read(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw InputError(fmt::format("{}: no transcript to resume from", path.string()));
  std::vector<nlohmann::json> out;
  for (auto& line : read_jsonl(path)) out.push_back(std::move(line.value));  // a torn last line is left out
  check_transcript_version(out, path);                                       // a newer format is refused, not misread
  return out;
}

}  // namespace kagent::agent
