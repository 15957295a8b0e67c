#pragma once
// The runner's flags on an evaluation, as typed values: what kind of doubt, about which output,
// with the number behind it and the bound it crossed. Consumers act on the kind (the reward
// withholds the speed tiers when the timing is not trusted, `kagent check` fails such an entry
// and warns on a weak reference); people read flag_text, the line printed after "flag: ".
//
// JSON: {"kind": "weak_reference", "subject": "out", "value": ..., "limit": ..., "detail": "...",
// "text": "<flag_text>"}. Older results (results.jsonl, transcripts) carry a flag as a plain
// string: it loads as kind `note` with that string as its text.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace kagent {

enum class FlagKind {
  note,                  // free text (a flag from an older version, or a kind this version does not know)
  degenerate_reference,  // an output of the reference is all (near) zero or constant
  weak_reference,        // an output of the reference cannot tell right from wrong on most elements
  // CUPTI saw the plan's launches missing from the runner's stream, or kernels outside that
  // stream and context: the event-timed span does not cover the work, the time is not the kernel's.
  timing_untrusted,
  // CUPTI disagrees in a way the timed span still covers: device-launched kernels (nested in their
  // parent's grid), or a span shorter than the kernels' durations beyond the clocks' slack.
  cupti_disagrees,
  below_memory_floor,  // the median is below bytes moved / theoretical peak bandwidth (advisory)
  // A ModelNew solution whose GPU time is mostly PyTorch's own operators' kernels (or that ran no
  // kernel of its own): the time is not the solution's kernels' time (--torch-ops cap; allow
  // permits it). Under --torch-ops fail: PyTorch computed part of the work (the evaluation fails).
  torch_ops,
  // An output whose scale (largest |reference|) is within atol: no element can fail, so it was
  // judged by its relative L2 error (output_rules.hpp). value: that scale; limit: atol.
  scale_within_atol,
};

struct Flag {
  FlagKind kind = FlagKind::note;
  std::string subject;  // the output it is about (reference flags); empty otherwise
  // The figure behind it and the bound it crossed: max |ref| and 1e-6 (all zero); the constant
  // value (constant); launches seen and expected (timing_untrusted); the timed span and the
  // kernels' durations in ms, summed over the samples (cupti_disagrees); median and floor in ms
  // (below_memory_floor); PyTorch's share of the kernel time and the bound 0.5 (torch_ops). 0
  // where a kind has none.
  double value = 0, limit = 0;
  std::string detail;  // the words after the kind's fixed part (for a note: all of its text)
};

std::string_view flag_kind_name(FlagKind k);
// Unknown names read as note (a newer kagent's kind).
FlagKind flag_kind_from(std::string_view name);

// The line people read (after "flag: "): "degenerate reference: output 'out' is constant (1)",
// "weak reference: output 'out' ...", "cupti: ...", "suspicious: median ... below the memory floor ...".
std::string flag_text(const Flag& f);

struct CuptiCheck;  // protocol.hpp
// The flag of a CUPTI cross-check that found problems (nullopt when it agreed or did not run), its
// detail the problems as CuptiCheck::problem lists them. timing_untrusted when the plan's launches
// were not all seen on the runner's stream (launches_seen != launches_expected) or kernels ran off
// it (off_stream): then the events did not cover the work. cupti_disagrees otherwise: a
// device-launched kernel completes inside its parent's grid, so inside the span, and a span
// shorter than the kernels beyond the clocks' slack is a disagreement of durations, not of work.
std::optional<Flag> cupti_flag(const CuptiCheck& c);

// Whether the flag means the measured time is not the kernel's time (no speed tier, check fails):
// timing_untrusted and torch_ops.
bool untrusts_timing(const Flag& f);
// The first such flag, or nullptr.
const Flag* untrusted_timing(const std::vector<Flag>& flags);

void to_json(nlohmann::json& j, const Flag& f);
void from_json(const nlohmann::json& j, Flag& f);

}  // namespace kagent
