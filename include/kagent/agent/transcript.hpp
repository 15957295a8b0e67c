#pragma once
// transcript.jsonl: one JSON object per line, every request's reply, tool call, tool result,
// evaluation and stop, each line flushed to disk as it is written so a killed run loses nothing.
// `kagent optimize --resume` rebuilds the conversation from it. The events' shapes are in
// transcript_events.hpp.
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kagent::agent {

class Transcript {
 public:
  // Opens (creating, or appending when resuming) the file, cutting a torn last line first; throws
  // EnvError when it cannot.
  explicit Transcript(const std::filesystem::path& path);
  ~Transcript();
  Transcript(const Transcript&) = delete;
  Transcript& operator=(const Transcript&) = delete;

  // Adds "t" (seconds since the epoch) and writes one line, then fflush + fsync.
  void write(nlohmann::json event);

  // Every line of a transcript; a torn last line (unterminated, killed mid-write) is skipped, any
  // other bad line is InputError naming the file and line, and so is a transcript of a newer
  // format version than this kagent's (transcript_events.hpp: the events, typed, and the version).
  static std::vector<nlohmann::json> read(const std::filesystem::path& path);

 private:
  std::FILE* f_ = nullptr;
  std::filesystem::path path_;
};

}  // namespace kagent::agent
