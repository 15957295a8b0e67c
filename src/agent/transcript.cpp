#include "kagent/agent/transcript.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>

#include <fmt/format.h>

#include "kagent/common/error.hpp"

namespace kagent::agent {

Transcript::Transcript(const std::filesystem::path& path) : path_(path) {
  f_ = std::fopen(path.c_str(), "a");
  if (f_ == nullptr) throw EnvError(fmt::format("{}: cannot open the transcript for writing", path.string()));
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
  std::ifstream in(path);
  if (!in) throw InputError(fmt::format("{}: no transcript to resume from", path.string()));
  std::vector<nlohmann::json> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
      if (in.peek() == EOF) break;  // a line torn by a kill: the run resumes before it
      throw InputError(fmt::format("{}: line {} is not a JSON object", path.string(), out.size() + 1));
    }
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace kagent::agent
