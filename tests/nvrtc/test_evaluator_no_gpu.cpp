// The Evaluator's GPU is lazy: constructing one touches no GPU, and compiling (with the plan
// checked against the operator) works on a machine without one. Needs NVRTC, not a GPU.
#include <gtest/gtest.h>

#include <string>

#include "kagent/common/error.hpp"
#include "kagent/compile/options.hpp"
#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

class EvaluatorNoGpu : public ::testing::Test {
 protected:
  void SetUp() override { cache = std::make_shared<CompileCache>(cache_dir.path()); }
  static Op vector_add() { return load_op(test::examples_dir() / "vector_add/op.json"); }
  static Candidate naive() { return load_candidate(test::examples_dir() / "vector_add/cand_naive.cu"); }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

  test::TempDir cache_dir;
  std::shared_ptr<CompileCache> cache;
  EvalOptions opts;
};

}  // namespace

// Constructing and compiling: on any machine, GPU or not.
TEST_F(EvaluatorNoGpu, CompilesAndChecksThePlanWithOrWithoutAGpu) {
  opts.arch = "sm_90a";  // what this test compiles for, whatever GPU there is
  Evaluator ev(opts, cache);
  CompileResult r = ev.compile(naive(), vector_add());
  EXPECT_TRUE(r.ok) << r.log;
  EXPECT_FALSE(r.cubin.empty());
  EXPECT_EQ(ev.arch(), "sm_90a");

  // A plan that names a tensor the operator does not have is bad input, found before any GPU.
  Candidate bad = naive();
  const std::string from = "\"args\": [\"a\", \"b\", \"out\"";
  auto at = bad.source.find(from);
  ASSERT_NE(at, std::string::npos) << "cand_naive.cu's plan changed";
  bad.source.replace(at, from.size(), "\"args\": [\"a\", \"nope\", \"out\"");
  bad = parse_candidate(bad.source, bad.path);
  EXPECT_THROW(ev.compile(bad, vector_add()), InputError);

  // A native operator resolves as it is, without a GPU.
  EXPECT_EQ(ev.resolve(vector_add()).op.inputs.size(), 2u);
}

// Without a GPU: compiling uses the compile-only default target; whatever needs the GPU throws
// EnvError saying why, as constructing one did before.
TEST_F(EvaluatorNoGpu, WhatNeedsTheGpuSaysWhyThereIsNone) {
  GpuInventory inv = query_gpus();
  if (!inv.gpus.empty()) GTEST_SKIP() << "this machine has a GPU";
  Evaluator ev(opts, cache);
  EXPECT_TRUE(has(ev.gpu_problem(), "no GPU to evaluate on")) << ev.gpu_problem();
  EXPECT_EQ(ev.arch(), kNoGpuArch);
  CompileResult r = ev.compile(naive(), vector_add());
  EXPECT_TRUE(r.ok) << r.log;
  try {
    ev.evaluate(vector_add(), naive());
    FAIL() << "evaluate ran without a GPU";
  } catch (const EnvError& e) {
    EXPECT_EQ(std::string(e.what()), ev.gpu_problem());
  }
  std::string why;
  EXPECT_THROW(ev.device_peaks(&why), EnvError);
  EXPECT_THROW(ev.runner(), EnvError);
}
