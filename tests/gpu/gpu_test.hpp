#pragma once
// The set-up GPU tests share: skip, with the reason, on a machine without a GPU; otherwise an
// Evaluator on GPU 0 with this build's kagent-runner and a compile cache of the test's own.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>

#include "kagent/eval/evaluator.hpp"
#include "kagent/gpu/devices.hpp"
#include "test_util.hpp"

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
