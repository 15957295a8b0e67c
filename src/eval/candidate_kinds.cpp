// The registry of candidate kinds (candidate_kinds.hpp) and the list of the built-in ones.
#include "kagent/eval/candidate_kinds.hpp"

#include <algorithm>
#include <mutex>

#include <fmt/format.h>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/eval/candidate_kind.hpp"

namespace kagent {

// Each kind is defined in its own file; this list is the one place that names them all. The first
// is also the kind of a file whose extension no kind claims.
const CandidateKind& plan_kind();      // plan_kind.cpp: a .cu with a /*kagent*/ launch plan
const CandidateKind& modelnew_kind();  // modelnew_kind.cpp: a KernelBench ModelNew .py

namespace {

const std::vector<const CandidateKind*>& built_in_kinds() {
  static const std::vector<const CandidateKind*> kinds = {&plan_kind(), &modelnew_kind()};
  return kinds;
}

// The kinds registered at run time (KindRegistration), guarded by mutex(): bench and check look
// kinds up from several threads.
std::vector<const CandidateKind*>& registered() {
  static std::vector<const CandidateKind*> kinds;
  return kinds;
}
std::mutex& mutex() {
  static std::mutex m;
  return m;
}

bool claims(const CandidateKind& kind, const std::string& extension) {
  const std::vector<std::string> own = kind.extensions();
  return std::find(own.begin(), own.end(), extension) != own.end();
}

}  // namespace

std::vector<const CandidateKind*> candidate_kinds() {
  std::vector<const CandidateKind*> all = built_in_kinds();
  std::lock_guard<std::mutex> lock(mutex());
  all.insert(all.end(), registered().begin(), registered().end());
  return all;
}

const CandidateKind& kind_of_file(const std::filesystem::path& path) {
  const std::string extension = path.extension().string();
  for (const CandidateKind* k : candidate_kinds())
    if (claims(*k, extension)) return *k;
  return *built_in_kinds().front();
}

const CandidateKind& kind_named(std::string_view name, std::string_view where) {
  for (const CandidateKind* k : candidate_kinds())
    if (k->name() == name) return *k;
  std::string known;
  for (const std::string& n : candidate_kind_names()) known += (known.empty() ? "" : ", ") + n;
  throw InputError(fmt::format("{}: no candidate kind is named '{}' (the kinds: {})", where, name, known));
}

std::vector<std::string> candidate_kind_names() {
  std::vector<std::string> out;
  for (const CandidateKind* k : candidate_kinds()) out.emplace_back(k->name());
  return out;
}

const CandidateKind& kind_of(const Candidate& cand) {
  return kind_named(cand.kind, cand.path.string());
}

Candidate parse_candidate(std::string source, const std::filesystem::path& path) {
  // A UTF-8 byte-order mark (editors on Windows write one) is no token NVRTC knows; it carries nothing.
  if (source.rfind("\xEF\xBB\xBF", 0) == 0) source.erase(0, 3);
  return kind_of_file(path).parse(std::move(source), path);
}

Candidate load_candidate(const std::filesystem::path& path) {
  return parse_candidate(read_text_file(path), path);
}

KindRegistration::KindRegistration(const CandidateKind& kind) : kind_(kind) {
  for (const CandidateKind* k : candidate_kinds()) {
    if (k->name() == kind.name())
      throw InputError(fmt::format("candidate kind '{}': a kind of that name is registered already", kind.name()));
    for (const std::string& e : kind.extensions())
      if (claims(*k, e))
        throw InputError(
            fmt::format("candidate kind '{}': extension {} is the '{}' kind's", kind.name(), e, k->name()));
  }
  std::lock_guard<std::mutex> lock(mutex());
  registered().push_back(&kind);
}

KindRegistration::~KindRegistration() {
  std::lock_guard<std::mutex> lock(mutex());
  auto& kinds = registered();
  kinds.erase(std::remove(kinds.begin(), kinds.end(), &kind_), kinds.end());
}

}  // namespace kagent
