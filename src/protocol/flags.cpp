// Typed flags, their words and their JSON (see kagent/protocol/flags.hpp).
#include "kagent/protocol/flags.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "kagent/protocol/protocol.hpp"

namespace kagent {

namespace {

constexpr FlagKind kKinds[] = {FlagKind::note,
                               FlagKind::degenerate_reference,
                               FlagKind::weak_reference,
                               FlagKind::timing_untrusted,
                               FlagKind::cupti_disagrees,
                               FlagKind::below_memory_floor,
                               FlagKind::torch_ops,
                               FlagKind::scale_within_atol};

// NaN and infinities as null (JSON has neither), read back as NaN.
nlohmann::json number(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
}
double number_from(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return 0;
  const auto& v = j.at(key);
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

}  // namespace

std::string_view flag_kind_name(FlagKind k) {
  switch (k) {
    case FlagKind::note:
      return "note";
    case FlagKind::degenerate_reference:
      return "degenerate_reference";
    case FlagKind::weak_reference:
      return "weak_reference";
    case FlagKind::timing_untrusted:
      return "timing_untrusted";
    case FlagKind::cupti_disagrees:
      return "cupti_disagrees";
    case FlagKind::below_memory_floor:
      return "below_memory_floor";
    case FlagKind::torch_ops:
      return "torch_ops";
    case FlagKind::scale_within_atol:
      return "scale_within_atol";
  }
  return "note";
}

FlagKind flag_kind_from(std::string_view name) {
  for (FlagKind k : kKinds)
    if (flag_kind_name(k) == name) return k;
  return FlagKind::note;
}

std::string flag_text(const Flag& f) {
  switch (f.kind) {
    case FlagKind::note:
      return f.detail;
    case FlagKind::degenerate_reference:
      return fmt::format("degenerate reference: output '{}' {}", f.subject, f.detail);
    case FlagKind::weak_reference:
      return fmt::format("weak reference: output '{}' {}", f.subject, f.detail);
    case FlagKind::timing_untrusted:
    case FlagKind::cupti_disagrees:
      return fmt::format("cupti: {}", f.detail);
    case FlagKind::below_memory_floor:
      return fmt::format("suspicious: median {:.4f} ms is below the memory floor {:.4f} ms ({})", f.value, f.limit,
                         f.detail);
    case FlagKind::torch_ops:
      return fmt::format("torch ops: {}", f.detail);
    case FlagKind::scale_within_atol:
      return fmt::format("scale within atol: output '{}' {}", f.subject, f.detail);
  }
  return f.detail;
}

std::optional<Flag> cupti_flag(const CuptiCheck& c) {
  if (!c.ran || c.problem.empty()) return std::nullopt;
  const bool uncovered = c.launches_seen != c.launches_expected || c.off_stream > 0;
  if (uncovered)
    return Flag{FlagKind::timing_untrusted, "", static_cast<double>(c.launches_seen),
                static_cast<double>(c.launches_expected), c.problem};
  return Flag{FlagKind::cupti_disagrees, "", c.event_ms, c.kernel_ms, c.problem};
}

bool untrusts_timing(const Flag& f) {
  return f.kind == FlagKind::timing_untrusted || f.kind == FlagKind::torch_ops;
}

const Flag* untrusted_timing(const std::vector<Flag>& flags) {
  for (const auto& f : flags)
    if (untrusts_timing(f)) return &f;
  return nullptr;
}

void to_json(nlohmann::json& j, const Flag& f) {
  j = {{"kind", flag_kind_name(f.kind)}, {"text", flag_text(f)}, {"detail", f.detail}};
  if (!f.subject.empty()) j["subject"] = f.subject;
  j["value"] = number(f.value);
  j["limit"] = number(f.limit);
}

void from_json(const nlohmann::json& j, Flag& f) {
  f = Flag{};
  if (j.is_string()) {  // the form of older versions: the text alone
    f.detail = j.get<std::string>();
    return;
  }
  f.kind = flag_kind_from(j.value("kind", "note"));
  if (f.kind == FlagKind::note && j.value("kind", "note") != "note") {
    f.detail = j.value("text", "");  // a kind this version does not know: its words still read
    return;
  }
  if (!j.contains("detail")) {  // written by hand, or by something else: keep its words as they are
    f.kind = FlagKind::note;
    f.detail = j.value("text", "");
    return;
  }
  f.subject = j.value("subject", "");
  j.at("detail").get_to(f.detail);
  f.value = number_from(j, "value");
  f.limit = number_from(j, "limit");
}

}  // namespace kagent
