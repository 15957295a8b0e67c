#pragma once
// "Did you mean": after a usage error, the subcommand or option nearest what was typed (a typo such
// as `kagent optimze` or `compile --arhc sm_80`), so that the user is not left with CLI11's bare
// "A subcommand is required" or "File does not exist: sm_80".
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace kagent::cli {

// Edit distance (insertions, deletions, substitutions, adjacent swaps) between two words.
int edit_distance(const std::string& a, const std::string& b);

// The nearest of `names` to `typed` when it is close enough to be a typo (at most 2 edits, and
// fewer than half its length); "" otherwise.
std::string nearest_name(const std::string& typed, const std::vector<std::string>& names);

// One line per typo found in the arguments, "" when none: an unknown subcommand, or a `--option`
// the subcommand does not have, each with the name it is nearest.
std::string usage_suggestions(CLI::App& app, const std::vector<std::string>& args);

}  // namespace kagent::cli
