// The compile tool's sass argument: 'summary' and 'listing' add a SASS section after the resource
// table (or say why there is none: no nvdisasm in this toolkit), anything else is the model's
// mistake; the schema the model reads lists both arguments. A compile that never ends is stopped
// at its limit and answered as a tool result the model reads. No GPU needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kagent/compile/sass.hpp"
#include "kagent/model_tools/kernel_tools.hpp"
#include "test_util.hpp"

using namespace kagent;
using nlohmann::json;

namespace {

class CompileToolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ctx_.op = load_op(test::examples_dir() / "vector_add/op.json");
    ctx_.compiler = &compiler_;
    ctx_.arch = "sm_90a";
    std::filesystem::copy_file(test::examples_dir() / "vector_add/cand_naive.cu", tmp_.path() / "ws" / "cand.cu");
    tools_ = model_tools::make_kernel_tools(ws_, ctx_);
  }
  model_tools::Tool& tool(const std::string& name) {
    for (auto& t : tools_)
      if (t->spec().name == name) return *t;
    throw std::runtime_error("no tool " + name);
  }
  model_tools::Tool& compile_tool() { return tool("compile"); }

  test::TempDir tmp_;
  model_tools::Workspace ws_{(std::filesystem::create_directories(tmp_.path() / "ws"), tmp_.path() / "ws")};
  Compiler compiler_{find_cuda_paths(), nullptr};
  model_tools::KernelToolContext ctx_;
  model_tools::ToolSet tools_;
};

}  // namespace

TEST_F(CompileToolTest, SassSummaryFollowsTheResourceTable) {
  auto r = compile_tool().run(json{{"path", "cand.cu"}, {"sass", "summary"}});
  ASSERT_FALSE(r.is_error) << r.text;
  const bool have = find_nvdisasm(find_cuda_paths()).has_value();
  if (have) {
    EXPECT_NE(r.text.find("kernel vector_add_grid_stride: "), std::string::npos) << r.text;
    EXPECT_NE(r.text.find("local memory: 0 loads (LDL), 0 stores (STL)"), std::string::npos) << r.text;
  } else {
    EXPECT_NE(r.text.find("no SASS: no nvdisasm"), std::string::npos) << r.text;
  }
  auto plain = compile_tool().run(json{{"path", "cand.cu"}});
  EXPECT_EQ(plain.text.find("SASS"), std::string::npos) << plain.text;
}

TEST_F(CompileToolTest, ABadSassValueIsTheModelsMistake) {
  try {
    compile_tool().run(json{{"path", "cand.cu"}, {"sass", "everything"}});
    FAIL() << "no ToolError";
  } catch (const model_tools::ToolError& e) {
    EXPECT_NE(std::string(e.what()).find("sass is 'summary' or 'listing', not 'everything'"), std::string::npos);
  }
  auto schema = compile_tool().spec().parameters;
  EXPECT_TRUE(schema["properties"].contains("sass"));
  EXPECT_TRUE(schema["properties"].contains("kernel"));
}

// A macro that expands exponentially (2^40 tokens): the compile is stopped at the time limit and
// the compile and profile tools answer with what happened and the limit, as a result the model
// reads, not an exception that would end the run.
TEST_F(CompileToolTest, ACompileStoppedAtItsLimitIsAToolResult) {
  std::string bomb =
      "/*kagent\n{\"launch\": [{\"kernel\": \"k\", \"grid\": [1], \"block\": [1], \"args\": [\"out\"]}]}\n*/\n"
      "#define A0 x\n";
  for (int i = 1; i <= 40; ++i)
    bomb += "#define A" + std::to_string(i) + " A" + std::to_string(i - 1) + " A" + std::to_string(i - 1) + "\n";
  bomb += "__device__ int v = sizeof(A40);\nextern \"C\" __global__ void k(float* out) { out[0] = 1.0f; }\n";
  std::ofstream(tmp_.path() / "ws" / "bomb.cu") << bomb;
  CompileLimits limits;
  limits.seconds = std::chrono::seconds(2);
  compiler_.set_limits(limits);
  for (const char* name : {"compile", "profile"}) {
    model_tools::ToolResult r;
    ASSERT_NO_THROW(r = tool(name).run(json{{"path", "bomb.cu"}})) << name;
    EXPECT_TRUE(r.is_error) << name;
    EXPECT_NE(r.text.find("compile FAILED"), std::string::npos) << name << ": " << r.text;
    EXPECT_NE(r.text.find("the compile was stopped after 2 s (limit)"), std::string::npos) << name << ": " << r.text;
    EXPECT_FALSE(r.ends_run) << name;
  }
}
