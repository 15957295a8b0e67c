// Thread-block clusters declared at compile time (__cluster_dims__) run as clusters under a plain
// plan: a kernel that reads its partner block's shared memory (distributed shared memory), with
// 200 KiB of dynamic shared memory per block, is correct; a grid that is not a whole number of
// clusters is a plan error that names both before anything launches. The grid comes from
// `num_sms`, the device's SM count bound by the runner. Skips, with the reason, without a GPU
// of compute capability 9.0 or newer (clusters are Hopper's).
#include <gtest/gtest.h>

#include "gpu_test.hpp"

using namespace kagent;

namespace {

class Cluster : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    GpuInfo g = query_gpus().gpus.at(0);
    if (g.cc_major < 9) GTEST_SKIP() << g.name << " is sm_" << g.cc_major << g.cc_minor << ": no thread-block clusters";
  }
  EvalReport eval(const std::string& fixture) {
    Op o = load_op(test::examples_dir() / "vector_add/op.json");
    return ev->evaluate(o, load_candidate(test::source_dir() / "tests/gpu/kernels" / fixture));
  }
  static bool has(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }
};

}  // namespace

TEST_F(Cluster, CompileTimeClustersWithLargeSharedMemoryRunAsClusters) {
  EvalReport r = eval("cluster_dsmem.cu");
  EXPECT_TRUE(r.outcome.correct) << failure_stage_name(r.outcome.failure_stage) << ": " << r.outcome.message;
  EXPECT_GE(r.reward.tier, 1) << r.reward.reason;
  EXPECT_EQ(r.outcome.device.sms, query_gpus().gpus.at(0).sm_count);
}

TEST_F(Cluster, AGridThatIsNotAWholeNumberOfClustersIsAPlanError) {
  EvalReport r = eval("cluster_partial_grid.cu");
  EXPECT_FALSE(r.outcome.correct);
  EXPECT_EQ(failure_stage_name(r.outcome.failure_stage), "plan") << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "is not a whole number of the kernel's 4x1x1 clusters")) << r.outcome.message;
  EXPECT_TRUE(has(r.outcome.message, "grid[0] = 65537 is not a multiple of 4")) << r.outcome.message;
  EXPECT_EQ(r.reward.tier, -1);
}
