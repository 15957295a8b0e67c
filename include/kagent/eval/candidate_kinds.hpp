#pragma once
// Which kinds of candidate there are, and which kind a file or a candidate is: the one registry that
// the evaluator's dispatch, kagent compile/eval/profile/check, bench's solution discovery, the
// agent's tools and its run folder's file names all ask. The built-in kinds are listed in
// src/eval/candidate_kinds.cpp, one line each; a program (a test) may register more while it runs.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "kagent/spec/candidate.hpp"

namespace kagent {

class CandidateKind;  // candidate_kind.hpp

// The built-in kinds in their listed order, then the registered ones in the order they came.
std::vector<const CandidateKind*> candidate_kinds();
// The kind one of whose extensions path has; the first built-in kind (plan) for any other name.
const CandidateKind& kind_of_file(const std::filesystem::path& path);
// The kind named by cand.kind; InputError for a name no kind has.
const CandidateKind& kind_of(const Candidate& cand);
// The kind of this name (CandidateKind::name); InputError "WHERE: no candidate kind is named ..."
// listing the kinds there are. (`where` by value: a reference parameter bound to a temporary makes
// GCC 13's -Wdangling-reference take the returned kind for a dangling one.)
const CandidateKind& kind_named(std::string_view name, std::string_view where);
// Every kind's name, in candidate_kinds()' order: what a request naming a kind may say.
std::vector<std::string> candidate_kind_names();

// The file's text as a candidate of kind_of_file(path): InputError naming the file on any problem.
Candidate parse_candidate(std::string source, const std::filesystem::path& path);
Candidate load_candidate(const std::filesystem::path& path);

// Registers a kind beside the built-in ones for as long as the registration lives. InputError when
// its name or one of its extensions is another kind's already. The kind must outlive the
// registration.
class KindRegistration {
 public:
  explicit KindRegistration(const CandidateKind& kind);
  ~KindRegistration();
  KindRegistration(const KindRegistration&) = delete;
  KindRegistration& operator=(const KindRegistration&) = delete;

 private:
  const CandidateKind& kind_;
};

}  // namespace kagent
