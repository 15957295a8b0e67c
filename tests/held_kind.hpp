#pragma once
// A candidate kind for tests of building ahead (judge/prebuild.hpp): its prebuild of a candidate
// whose text holds "held" waits until the test releases it, so a test decides which candidate's
// build is over first. Registered for as long as a HeldKind lives.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>

#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/eval/candidate_kinds.hpp"

namespace kagent::test {

class HeldKind : public CandidateKind {
 public:
  HeldKind() : registration_(std::make_unique<KindRegistration>(*this)) {}
  ~HeldKind() override {
    release();
    registration_.reset();
  }

  void release() {
    std::lock_guard lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  std::string_view name() const override { return "held"; }
  std::string_view noun() const override { return "a held candidate"; }
  std::vector<std::string> extensions() const override { return {".held"}; }
  Candidate parse(std::string source, const std::filesystem::path& path) const override {
    Candidate c;
    c.kind = "held";
    c.path = path;
    c.source = std::move(source);
    return c;
  }
  CompileResult compile(const Candidate&, const Op*, const Compiler&, const std::string& arch) const override {
    CompileResult r;
    r.ok = true;
    r.arch = arch;
    return r;
  }
  void prebuild(const Candidate& cand, const Compiler&, const std::string&) const override {
    if (cand.source.find("held") == std::string::npos) return;
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return released_; });
  }
  std::unique_ptr<KindEvaluation> evaluation(EvalContext&) const override {
    throw InputError("a held candidate is evaluated by a fake backend only");
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool released_ = false;
  std::unique_ptr<KindRegistration> registration_;
};

}  // namespace kagent::test
