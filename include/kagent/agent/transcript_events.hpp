#pragma once
// The events of transcript.jsonl, typed once: one struct per "type", each with to_json/from_json.
// Writers (the agent loop, the run record, the optimize run) build these structs; readers (resume,
// bench's record of a run) parse lines into them with parse_event, so a key is spelled in one place.
//
// Versioning: the format's version is carried by the events that open a kagent process's part of
// the run, "start" and "resume" (key "version"), not by every line. A transcript is one document: it
// is opened by one kagent and continued by the processes that resume it, and each of those says which format it
// wrote; the other lines stay as they were (no extra key on every message). A transcript that
// names no version is version 1 (every transcript written before versions were recorded), and
// Transcript::read refuses one that names a newer version than this kagent's, naming the file
// and both versions, rather than resuming from events it may misread.
//
// Readers are lenient where the old readers were (a count that is not a number is 0, a turn out
// of range is left out) and strict where they were (a message must parse).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/agent/run_record.hpp"
#include "kagent/llm/message.hpp"

namespace kagent::agent {

// The transcript format this kagent writes and reads.
inline constexpr int kTranscriptVersion = 1;

// "start": a fresh run's first event.
struct StartEvent {
  static constexpr const char* kType = "start";
  int version = kTranscriptVersion;
  std::string op;   // the op's name
  std::string llm;  // LlmConfig::describe()
  int budget_turns = 0;
  double budget_minutes = 0;
  int64_t budget_tokens = 0;
  std::string gpu;  // "available", or why not
};

// "resume": a later kagent process (optimize --resume) that continues the run.
struct ResumeEvent {
  static constexpr const char* kType = "resume";
  int version = kTranscriptVersion;
  int turns = 0;  // the turns the run had before this resume
  std::string llm;
};

// What a model's reply adds to its "message" event.
struct ReplyFacts {
  std::optional<int> turn;
  std::string stop_reason;
  llm::Usage usage;  // input_tokens, output_tokens, tokens_estimated
  double latency_s = 0;
  int attempts = 0;
  bool empty = false;
};

// What a tool result adds to its "message" event.
struct ToolResultFacts {
  nlohmann::json record;  // the tool's structured result (null when there is none)
  bool malformed = false;
};

// "message": one message of the conversation (opening prompts, the model's replies, tool results,
// nudges), in order; resume rebuilds the conversation from these.
struct MessageEvent {
  static constexpr const char* kType = "message";
  llm::Message message;
  std::optional<ReplyFacts> reply;      // a model's reply
  std::optional<ToolResultFacts> tool;  // a tool's result
};

// "endpoint_error": the request that ended the run (the folder stays resumable).
struct EndpointErrorEvent {
  static constexpr const char* kType = "endpoint_error";
  int turn = 0;
  int exit_code = 0;
  std::string message;
};

// "evaluation": a candidate evaluated (candidates/NNN.cu), and whether it is the best so far.
struct EvaluationEvent {
  static constexpr const char* kType = "evaluation";
  CandidateScore score;
  bool best = false;
  nlohmann::json report;  // report_json of the evaluation
};

// "session_end": the wall time of the kagent process whose part of the run ends (a run's time sums
// the parts of every process that worked on it).
struct SessionEndEvent {
  static constexpr const char* kType = "session_end";
  double wall_s = 0;
};

// "stop": why the run stopped ("finish", a budget, ...).
struct StopEvent {
  static constexpr const char* kType = "stop";
  std::string reason;
  int turns = 0;
};

// A line of a type this kagent does not know (kept as it is).
struct OtherEvent {
  nlohmann::json json;
};
// An unknown event is written back exactly as it was read.
inline void to_json(nlohmann::json& j, const OtherEvent& e) {
  j = e.json;
}

using TranscriptEvent = std::variant<StartEvent, ResumeEvent, MessageEvent, EndpointErrorEvent, EvaluationEvent,
                                     SessionEndEvent, StopEvent, OtherEvent>;

void to_json(nlohmann::json& j, const StartEvent& e);
void from_json(const nlohmann::json& j, StartEvent& e);
void to_json(nlohmann::json& j, const ResumeEvent& e);
void from_json(const nlohmann::json& j, ResumeEvent& e);
void to_json(nlohmann::json& j, const MessageEvent& e);
void from_json(const nlohmann::json& j, MessageEvent& e);
void to_json(nlohmann::json& j, const EndpointErrorEvent& e);
void from_json(const nlohmann::json& j, EndpointErrorEvent& e);
void to_json(nlohmann::json& j, const EvaluationEvent& e);
void from_json(const nlohmann::json& j, EvaluationEvent& e);
void to_json(nlohmann::json& j, const SessionEndEvent& e);
void from_json(const nlohmann::json& j, SessionEndEvent& e);
void to_json(nlohmann::json& j, const StopEvent& e);
void from_json(const nlohmann::json& j, StopEvent& e);

// One line as its event, by its "type". Throws nlohmann::json::exception for a known type of the
// wrong shape (callers report it as a damaged transcript).
TranscriptEvent parse_event(const nlohmann::json& line);
std::vector<TranscriptEvent> parse_events(const std::vector<nlohmann::json>& lines);

// The version a transcript's lines say they were written in: the highest "version" of its start
// and resume events, 1 when none names one. InputError naming `path` when a version is not a
// positive integer, or is newer than kTranscriptVersion (naming both versions).
int check_transcript_version(const std::vector<nlohmann::json>& lines, const std::filesystem::path& path);

}  // namespace kagent::agent
