#pragma once
// The set-up GPU tests share: skip, with the reason, on a machine without a GPU; otherwise an
// Evaluator on GPU 0 with this build's kagent-runner and a compile cache of the test's own.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "kagent/gpu/libraries.hpp"
#include "kagent/sandbox/process.hpp"
#include "test_util.hpp"

namespace kagent::test {

// Whether python3 with a CUDA-enabled torch runs here; else *why says what is missing.
inline bool torch_with_gpu(std::string* why) {
  auto r = run_capture({"python3", "-c", "import torch; assert torch.cuda.is_available()"}, std::chrono::seconds(120));
  if (r.started && r.exit_code == 0) return true;
  *why = "python3 with torch and a GPU is needed: " + r.output;
  return false;
}

}  // namespace kagent::test

// Skip the test (from its body: GTEST_SKIP returns from the enclosing function) when the
// library a plan's step needs cannot be loaded, with the loader's reason.
#define KAGENT_SKIP_WITHOUT_CUBLASLT()                                       \
  do {                                                                       \
    std::string kagent_why_;                                                 \
    if (!::kagent::load_cublaslt(&kagent_why_)) GTEST_SKIP() << kagent_why_; \
  } while (0)
#define KAGENT_SKIP_WITHOUT_CUDNN()                                       \
  do {                                                                    \
    std::string kagent_why_;                                              \
    if (!::kagent::load_cudnn(&kagent_why_)) GTEST_SKIP() << kagent_why_; \
  } while (0)

namespace kagent::test {

class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GpuInventory inv = query_gpus();
    if (inv.gpus.empty()) GTEST_SKIP() << "no GPU: " << inv.problem;
    opts.runner_path = (binary_dir() / "kagent-runner").string();
    opts.timeout = std::chrono::seconds(120);
    cache = std::make_shared<CompileCache>(cache_dir.path());
    ev = std::make_unique<Evaluator>(opts, cache);
  }

  TempDir cache_dir;
  std::shared_ptr<CompileCache> cache;
  EvalOptions opts;
  std::unique_ptr<Evaluator> ev;
};

}  // namespace kagent::test
