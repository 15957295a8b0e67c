// The ModelNew kind of candidate (candidate.hpp): which files are ModelNew solutions, and the one
// check kagent makes of one without Python (the worker checks the rest when it imports it).
#include <regex>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/spec/candidate.hpp"

namespace kagent {

std::string_view candidate_kind_name(CandidateKind k) {
  return k == CandidateKind::modelnew ? "modelnew" : "plan";
}

CandidateKind candidate_kind_of(const std::filesystem::path& path) {
  return path.extension() == ".py" ? CandidateKind::modelnew : CandidateKind::plan;
}

Candidate parse_modelnew_candidate(std::string source, const std::filesystem::path& path) {
  // A top-level class (column 0), as KernelBench imports it: `ModelNew` inside a function or a
  // string does not count.
  static const std::regex modelnew(R"((^|\n)class[ \t]+ModelNew\b)");
  std::smatch m;
  if (!std::regex_search(source, m, modelnew))
    throw InputError(fmt::format(
        "{}: defines no ModelNew: a KernelBench solution file defines a top-level class ModelNew(nn.Module) that "
        "takes the reference Model's constructor arguments and forward arguments",
        path.string()));
  Candidate cand;
  cand.kind = CandidateKind::modelnew;
  cand.path = path;
  cand.plan_line = line_of_offset(source, static_cast<size_t>(m.position(0)) + m[1].length());
  cand.source = std::move(source);
  return cand;
}

}  // namespace kagent
