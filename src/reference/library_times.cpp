#include "kagent/reference/library_times.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "kagent/common/utf8.hpp"

namespace kagent {

namespace {

std::optional<double> optional_number(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

void from_json(const nlohmann::json& j, RefLibraryCall& c) {
  c.kind = j.value("kind", "");
  c.library = j.value("library", "");
  c.op = j.value("op", "");
  c.args = j.value("args", "");
  c.calls = j.value("calls", 0);
  c.median_ms = optional_number(j, "median_ms");
  c.fastest_ms = optional_number(j, "fastest_ms");
  if (auto p = j.find("plan"); p != j.end() && p->is_object()) c.plan = *p;
  c.plan_note = j.value("plan_note", "");
  c.step_ms = optional_number(j, "step_ms");
  c.step = j.value("step", "");
  c.step_error = j.value("step_error", "");
}

void from_json(const nlohmann::json& j, RefLibraryTimes& t) {
  t.calls.clear();
  if (auto c = j.find("calls"); c != j.end() && c->is_array())
    for (const auto& e : *c) t.calls.push_back(e.get<RefLibraryCall>());
  t.total_ms = j.value("total_ms", 0.0);
  if (auto n = j.find("note"); n != j.end() && n->is_string()) t.note = n->get<std::string>();
  t.cached = j.value("cached", false);
}

void to_json(nlohmann::json& j, const RefLibraryCall& c) {
  j = {{"kind", c.kind},   {"library", c.library},
       {"op", c.op},       {"args", c.args},
       {"calls", c.calls}, {"median_ms", c.median_ms ? nlohmann::json(*c.median_ms) : nlohmann::json()}};
  if (c.fastest_ms) j["fastest_ms"] = *c.fastest_ms;
  if (!c.plan.is_null()) j["plan"] = c.plan;
  if (!c.plan_note.empty()) j["plan_note"] = c.plan_note;
  if (c.step_ms) j["step_ms"] = *c.step_ms;
  if (!c.step.empty()) j["step"] = c.step;
  if (!c.step_error.empty()) j["step_error"] = c.step_error;
}

void to_json(nlohmann::json& j, const RefLibraryTimes& t) {
  j = {{"calls", t.calls},
       {"total_ms", t.total_ms},
       {"note", t.note.empty() ? nlohmann::json() : nlohmann::json(t.note)},
       {"cached", t.cached}};
}

namespace {

// What kagent's own step for the call took, or why there is none: "; kagent's gemm step 0.1234 ms".
std::string step_text(const RefLibraryCall& c) {
  if (c.step_ms) return fmt::format("; kagent's {} step {:.4f} ms", c.kind, *c.step_ms);
  if (!c.step_error.empty())
    return fmt::format("; kagent's {} step failed ({})", c.kind, first_line(c.step_error, 160));
  if (!c.plan_note.empty()) return fmt::format("; no one {} step expresses it ({})", c.kind, c.plan_note);
  return "";
}

}  // namespace

std::string library_times_text(const RefLibraryTimes& t, std::optional<double> eager_ms, size_t max_rows) {
  if (t.calls.empty()) return "";
  bool conv = false;
  for (const auto& c : t.calls) conv = conv || c.fastest_ms.has_value();
  // kagent's steps over one forward, and PyTorch's calls for the same calls, where both were timed.
  double steps_ms = 0, same_ms = 0;
  size_t stepped = 0;
  for (const auto& c : t.calls)
    if (c.step_ms && c.median_ms) {
      steps_ms += *c.step_ms * c.calls;
      same_ms += std::min(*c.median_ms, c.fastest_ms.value_or(*c.median_ms)) * c.calls;
      ++stepped;
    }
  std::string s =
      "The reference's library calls, each timed alone on this GPU at this precision (its own arguments, L2 flushed, "
      "median): what cuBLAS and cuDNN take for its GEMMs and convolutions as PyTorch calls them";
  if (stepped)
    s += ", and what kagent's own plan step for the same call takes, timed the same way on buffers of the call's "
         "shapes (a gemm step runs cuBLASLt's heuristic algorithm, a conv step the cuDNN algorithm it measures "
         "fastest on its own buffers)";
  else
    s += ". A plan's gemm step calls cuBLASLt and its conv step cuDNN, each with an algorithm of its own choosing (a "
         "conv step times cuDNN's algorithms and keeps the fastest), so a step's time is near these and can be lower: "
         "evaluate one to know it";
  if (conv)
    s += ". For a convolution, \"as PyTorch runs it\" is eager's algorithm (cuDNN's heuristic) and \"fastest\" the "
         "fastest that PyTorch's benchmark mode finds among cuDNN's engines";
  s += ":\n";
  size_t shown = 0;
  double rest_ms = 0;
  size_t rest = 0, rest_timed = 0;
  for (const auto& c : t.calls) {
    if (shown == max_rows) {
      ++rest;
      if (c.median_ms) {
        ++rest_timed;
        rest_ms += *c.median_ms * c.calls;
      }
      continue;
    }
    ++shown;
    std::string time = "not timed";
    if (c.median_ms) {
      time = fmt::format("{:.4f} ms", *c.median_ms);
      if (c.fastest_ms) time += fmt::format(" as PyTorch runs it, {:.4f} ms fastest", *c.fastest_ms);
    }
    s += fmt::format("- {} ({}) {}: {}{}; {} call{} per forward\n", c.op, c.library, c.args, time, step_text(c),
                     c.calls, c.calls == 1 ? "" : "s");
  }
  if (rest)
    s += fmt::format("- and {} more distinct call{} ({})\n", rest, rest == 1 ? "" : "s",
                     rest_timed ? fmt::format("{:.4f} ms together", rest_ms) : std::string("not timed"));
  s += fmt::format("Together {:.4f} ms per forward", t.total_ms);
  if (eager_ms && *eager_ms > 0) {
    const double share = t.total_ms / *eager_ms;
    s += fmt::format(" against torch eager's {:.4f} ms ({:.0f}%)", *eager_ms, 100.0 * share);
    // Within 2% either way the figures agree to their noise; further above, the flushed L2 is the
    // likely difference: inside forward a call finds the operator before it's output in L2.
    if (share < 0.98)
      s += "; the rest is the work between them (elementwise operators, reductions, launches)";
    else if (share <= 1.02)
      s += ": eager's time is its library calls";
    else
      s += ": more than eager, since alone each call starts from a flushed L2, where inside forward it can find the "
           "operator before it's output there";
  }
  s += ".";
  if (stepped) {
    s += fmt::format(
        " kagent's steps: {:.4f} ms per forward against {:.4f} ms for the same calls as PyTorch runs "
        "them at its fastest",
        steps_ms, same_ms);
    if (stepped < t.calls.size()) s += fmt::format(" ({} of the {} distinct calls)", stepped, t.calls.size());
    s += ".";
  }
  if (!t.note.empty()) s += fmt::format(" ({})", t.note);
  return s + "\n";
}

}  // namespace kagent
