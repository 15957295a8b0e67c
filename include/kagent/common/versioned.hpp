#pragma once
// Versioned JSON messages and files: each carries a "version"; a reader that gets one it does not
// know refuses it, naming the message (or file) and both versions, instead of guessing at fields.
#include <string_view>

#include <nlohmann/json.hpp>

namespace kagent {

// Throws EnvError (a stale build or cache is the environment's) when j's "version" is missing or
// not `known`: "<what> has version 2; this <reader> reads version 1".
void require_version(const nlohmann::json& j, int known, std::string_view what, std::string_view reader);

}  // namespace kagent
