// Every bundled example compiles, its plan matches its kernels and its op's tensors; the
// deliberately broken one fails with its own line number. Runs in CI (NVRTC only).
#include <gtest/gtest.h>

#include <set>

#include "kagent/common/error.hpp"
#include "kagent/common/files.hpp"
#include "kagent/compile/compiler.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/plan_check.hpp"
#include "test_util.hpp"

using namespace kagent;
namespace fs = std::filesystem;

namespace {

std::vector<fs::path> example_files(const std::string& ext) {
  std::vector<fs::path> out;
  for (auto& e : fs::recursive_directory_iterator(test::examples_dir()))
    if (e.is_regular_file() && e.path().extension() == ext) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

bool is_deliberately_broken(const fs::path& p) { return p.filename().string().find("compile_error") != std::string::npos; }

}  // namespace

TEST(Examples, EveryOpLoads) {
  auto ops = example_files(".json");
  int loaded = 0;
  for (const auto& p : ops) {
    if (p.filename() != "op.json") continue;
    EXPECT_NO_THROW(load_op(p)) << p;
    ++loaded;
  }
  EXPECT_GE(loaded, 3) << "expected vector_add, softmax and a KernelBench-style example";
}

TEST(Examples, EveryCandidateCompilesAndMatchesItsPlanAndOp) {
  test::TempDir cache_dir;
  Compiler compiler(find_cuda_paths(), std::make_shared<CompileCache>(cache_dir.path()));
  int compiled = 0;
  for (const auto& p : example_files(".cu")) {
    if (is_deliberately_broken(p)) continue;
    SCOPED_TRACE(p.string());
    Candidate cand = load_candidate(p);
    auto r = compiler.compile(cand, "sm_90a");
    ASSERT_TRUE(r.ok) << r.log;
    EXPECT_NO_THROW(check_plan_kernels(cand, kernel_signatures(r.kernels)));
    auto op_path = p.parent_path() / "op.json";
    if (fs::exists(op_path)) {
      Op op = load_op(op_path);
      if (op.ref_kind == RefKind::cuda) {
        EXPECT_NO_THROW(check_plan_tensors(cand, op.tensor_names()));
      }
    }
    ++compiled;
  }
  EXPECT_GE(compiled, 5);
}

// The GPU tests' fixtures (tests/gpu/kernels, tests/gpu/ops) compile too, so a GPU run never fails
// on a typo; their plans match their kernels, bar the one whose point is that it does not.
TEST(Examples, EveryGpuTestFixtureCompiles) {
  test::TempDir cache_dir;
  Compiler compiler(find_cuda_paths(), std::make_shared<CompileCache>(cache_dir.path()));
  int compiled = 0;
  for (const char* dir : {"tests/gpu/kernels", "tests/gpu/ops"}) {
    for (auto& e : fs::recursive_directory_iterator(test::source_dir() / dir)) {
      if (!e.is_regular_file() || e.path().extension() != ".cu") continue;
      SCOPED_TRACE(e.path().string());
      Candidate cand = load_candidate(e.path());
      auto r = compiler.compile(cand, "sm_90a");
      ASSERT_TRUE(r.ok) << r.log;
      if (e.path().filename() != "wrong_arg_count.cu") {
        EXPECT_NO_THROW(check_plan_kernels(cand, kernel_signatures(r.kernels)));
      }
      ++compiled;
    }
  }
  EXPECT_GE(compiled, 20);
}

TEST(Examples, DeliberateCompileErrorReportsItsLine) {
  int seen = 0;
  Compiler compiler(find_cuda_paths(), nullptr);
  for (const auto& p : example_files(".cu")) {
    if (!is_deliberately_broken(p)) continue;
    auto r = compiler.compile(load_candidate(p), "sm_90a");
    EXPECT_FALSE(r.ok);
    // The file marks the broken line with "COMPILE ERROR HERE"; the log must name that line.
    std::string src = read_text_file(p);
    int line = line_of_offset(src, src.find("COMPILE ERROR HERE"));
    EXPECT_NE(r.log.find(p.string() + "(" + std::to_string(line) + "): error"), std::string::npos) << r.log;
    ++seen;
  }
  EXPECT_GE(seen, 1);
}
