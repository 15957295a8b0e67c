// The compile tool's sass argument: 'summary' and 'listing' add a SASS section after the resource
// table (or say why there is none: no nvdisasm in this toolkit), anything else is the model's
// mistake; the schema the model reads lists both arguments. No GPU needed.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "kagent/compile/sass.hpp"
#include "kagent/tools/kernel_tools.hpp"
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
    tools_ = tools::make_kernel_tools(ws_, ctx_);
  }
  tools::Tool& compile_tool() {
    for (auto& t : tools_)
      if (t->spec().name == "compile") return *t;
    throw std::runtime_error("no compile tool");
  }

  test::TempDir tmp_;
  tools::Workspace ws_{(std::filesystem::create_directories(tmp_.path() / "ws"), tmp_.path() / "ws")};
  Compiler compiler_{find_cuda_paths(), nullptr};
  tools::KernelToolContext ctx_;
  tools::ToolSet tools_;
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
  } catch (const tools::ToolError& e) {
    EXPECT_NE(std::string(e.what()).find("sass is 'summary' or 'listing', not 'everything'"), std::string::npos);
  }
  auto schema = compile_tool().spec().parameters;
  EXPECT_TRUE(schema["properties"].contains("sass"));
  EXPECT_TRUE(schema["properties"].contains("kernel"));
}
