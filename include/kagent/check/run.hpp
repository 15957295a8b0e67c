#pragma once
// Running check entries: each kernel (and its baseline: a file, or the kernel's file at a git
// ref) through the full evaluation on one of the GPUs given, one worker per GPU (bench's worker
// pool, common/worker_pool.hpp).
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kagent/check/verdict.hpp"
#include "kagent/compile/cache.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/spec/op_overrides.hpp"

namespace kagent::check {

// The kernel's file as it was at git `ref` (`git show REF:./file`, run in the file's folder).
// nullopt when the file did not exist there (a new kernel: `note` says so). InputError when git
// is missing, the folder is not in a repository, or the ref is unknown.
std::optional<std::string> source_at_ref(const std::filesystem::path& kernel, const std::string& ref,
                                         std::string* note);

// Reads every entry's baseline (a file, or the kernel at a git ref) before anything runs, so a
// wrong ref is bad input (exit 2), not a failed check. A kernel new at the ref gets a note instead.
void resolve_baselines(std::vector<CheckEntry>& entries);

struct CheckOptions {
  std::vector<int> gpus = {0};
  EvalOptions eval;  // its gpu is set per worker
  std::shared_ptr<CompileCache> cache;
  OpOverrides overrides;  // --atol/--rtol/--tolerance over every entry's op
};

// Verdicts in entry order. `done` is called (serialized) as each entry finishes. Ops must load
// (bad input is the caller's to report before this); kernels that do not parse or compile fail;
// without a GPU or reference environment, entries that compile are "unchecked".
std::vector<Verdict> run_checks(const std::vector<CheckEntry>& entries, const CheckOptions& o,
                                const std::function<void(const Verdict&)>& done);

}  // namespace kagent::check
