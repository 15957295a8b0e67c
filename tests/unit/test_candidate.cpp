#include <gtest/gtest.h>

#include <string>

#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kind.hpp"
#include "kagent/spec/candidate.hpp"
#include "test_util.hpp"

namespace kagent {
namespace {

// The example from docs/candidate.md, with the plan starting on line 2.
const std::string kExample = R"(// softmax candidate
/*kagent
{
  "scratch": {"partial": {"dtype": "f32", "shape": ["x.shape[0]", 64]}},
  "launch": [
    {"kernel": "row_max", "grid": ["x.shape[0]", 64], "block": [256], "smem": 1024,
     "args": ["x", "partial", "i32:x.shape[1]"]},
    {"kernel": "row_softmax", "grid": ["x.shape[0]"], "block": [256],
     "args": ["x", "partial", "out", "i32:x.shape[1]"]}
  ]
}
*/
extern "C" __global__ void row_max(const float* x, float* partial, int cols) { /* ... */ }
extern "C" __global__ void row_softmax(const float* x, const float* partial, float* out, int cols) { /* ... */ }
)";

// A candidate whose plan (on line 1) is "{" + body + "}".
std::string with_plan(const std::string& body) {
  return "/*kagent\n{" + body + "}\n*/\nextern \"C\" __global__ void k(float* a) {}\n";
}

const std::string kOneLaunch = R"("launch": [{"kernel": "k", "grid": [1], "block": [32], "args": ["a"]}])";

// The InputError message for source; fails the test when parsing succeeds.
std::string error_of(const std::string& source) {
  try {
    parse_candidate(source, "cand.cu");
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << source;
  return "";
}

std::string option_error(const std::string& option) {
  try {
    check_candidate_option(option, "cand.cu:1: plan key options[0]");
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "option accepted: " << option;
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

const std::vector<int64_t> kX = {8, 100};
const std::vector<int64_t>* shapes(std::string_view name) {
  return name == "x" ? &kX : nullptr;
}

TEST(Candidate, ExampleFromSpecParses) {
  Candidate c = parse_candidate(kExample, "softmax.cu");
  EXPECT_EQ(c.path, "softmax.cu");
  EXPECT_EQ(c.plan_line, 2);
  EXPECT_EQ(c.source, kExample);

  ASSERT_EQ(c.plan.scratch.size(), 1u);
  EXPECT_EQ(c.plan.scratch[0].name, "partial");
  EXPECT_EQ(c.plan.scratch[0].dtype, DType::f32);
  ASSERT_EQ(c.plan.scratch[0].shape.size(), 2u);
  EXPECT_EQ(c.plan.scratch[0].shape[0].eval_int(shapes), 8);
  EXPECT_EQ(c.plan.scratch[0].shape[1].eval_int(shapes), 64);

  ASSERT_EQ(c.plan.launches.size(), 2u);
  const Launch& first = c.plan.launches[0];
  EXPECT_EQ(first.kernel, "row_max");
  ASSERT_EQ(first.grid.size(), 2u);
  EXPECT_EQ(first.grid[0].eval_int(shapes), 8);
  EXPECT_EQ(first.grid[1].eval_int(shapes), 64);
  ASSERT_EQ(first.block.size(), 1u);
  EXPECT_EQ(first.block[0].eval_int(shapes), 256);
  EXPECT_EQ(first.smem.eval_int(shapes), 1024);
  ASSERT_EQ(first.args.size(), 3u);
  EXPECT_TRUE(first.args[0].is_tensor);
  EXPECT_EQ(first.args[0].tensor, "x");
  EXPECT_EQ(first.args[0].size_bytes(), 8u);
  EXPECT_TRUE(first.args[1].is_tensor);
  EXPECT_EQ(first.args[1].tensor, "partial");
  EXPECT_FALSE(first.args[2].is_tensor);
  EXPECT_EQ(first.args[2].scalar_type, ScalarType::i32);
  EXPECT_EQ(first.args[2].text, "i32:x.shape[1]");
  EXPECT_EQ(first.args[2].value.eval_int(shapes), 100);
  EXPECT_EQ(first.args[2].size_bytes(), 4u);

  const Launch& second = c.plan.launches[1];
  EXPECT_EQ(second.kernel, "row_softmax");
  EXPECT_EQ(second.smem.eval_int(shapes), 0);  // default
  EXPECT_EQ(second.args.size(), 4u);
  EXPECT_EQ(second.args[2].tensor, "out");
  EXPECT_TRUE(c.plan.options.empty());
}

TEST(Candidate, LoadCandidateReadsTheFile) {
  test::TempDir dir;
  auto path = dir.write("c.cu", kExample);
  Candidate c = load_candidate(path);
  EXPECT_EQ(c.path, path);
  EXPECT_EQ(c.plan.launches.size(), 2u);
}

// A UTF-8 byte-order mark before the plan comment (an editor on Windows) is dropped, not handed to
// NVRTC as an unknown token; the plan's line stays the same.
TEST(Candidate, AByteOrderMarkIsDropped) {
  test::TempDir dir;
  Candidate c = load_candidate(dir.write("bom.cu", std::string("\xEF\xBB\xBF") + kExample));
  EXPECT_EQ(c.plan.launches.size(), 2u);
  EXPECT_EQ(c.source.rfind("// softmax candidate", 0), 0u) << c.source.substr(0, 20);
  EXPECT_EQ(c.plan_line, load_candidate(dir.write("plain.cu", kExample)).plan_line);
}

TEST(Candidate, ScalarTypesHaveNamesAndSizes) {
  EXPECT_EQ(scalar_type_name(ScalarType::i32), "i32");
  EXPECT_EQ(scalar_type_size(ScalarType::i32), 4u);
  EXPECT_EQ(scalar_type_size(ScalarType::i64), 8u);
  EXPECT_EQ(scalar_type_size(ScalarType::u32), 4u);
  EXPECT_EQ(scalar_type_size(ScalarType::f32), 4u);
  EXPECT_EQ(scalar_type_name(ScalarType::f64), "f64");
  EXPECT_EQ(scalar_type_size(ScalarType::f64), 8u);
}

TEST(Candidate, AllScalarTypesParse) {
  Candidate c = parse_candidate(with_plan(R"J("launch": [{"kernel": "k", "grid": [1], "block": [1],
                 "args": ["i64:numel(a)", "u32:7", "f32:0.5", "f64:1e-3"]}])J"),
                                "cand.cu");
  const auto& args = c.plan.launches[0].args;
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[0].scalar_type, ScalarType::i64);
  EXPECT_EQ(args[1].scalar_type, ScalarType::u32);
  EXPECT_EQ(args[2].scalar_type, ScalarType::f32);
  EXPECT_DOUBLE_EQ(args[2].value.eval(shapes).as_double(), 0.5);
  EXPECT_EQ(args[3].scalar_type, ScalarType::f64);
  EXPECT_EQ(args[3].size_bytes(), 8u);
}

TEST(Candidate, NoPlanBlock) {
  std::string msg = error_of("extern \"C\" __global__ void k() {}\n");
  EXPECT_EQ(msg, "cand.cu: no launch plan: expected a /*kagent { ... } */ comment block (see docs/candidate.md)");
}

TEST(Candidate, TwoPlanBlocksNameBothLines) {
  std::string src = with_plan(kOneLaunch) + "\n/*kagent\n{" + kOneLaunch + "}\n*/\n";
  std::string msg = error_of(src);
  EXPECT_TRUE(contains(msg, "cand.cu:")) << msg;
  EXPECT_TRUE(contains(msg, "lines 1 and 6")) << msg;
}

TEST(Candidate, UnterminatedPlanBlockNamesItsLine) {
  std::string msg = error_of("// a\n// b\n/*kagent\n{" + kOneLaunch + "}\n");
  EXPECT_TRUE(contains(msg, "cand.cu:3:")) << msg;
  EXPECT_TRUE(contains(msg, "not terminated")) << msg;
}

TEST(Candidate, MalformedJsonReportsTheFileLine) {
  // The plan starts on line 3; the stray comma is on line 6 of the file.
  std::string src =
      "// header\n"
      "\n"
      "/*kagent\n"
      "{\n"
      "  \"launch\": [\n"
      "    {\"kernel\": \"k\",, \"grid\": [1]}\n"
      "  ]\n"
      "}\n"
      "*/\n";
  std::string msg = error_of(src);
  EXPECT_TRUE(contains(msg, "cand.cu:6: launch plan is not valid JSON: ")) << msg;
  EXPECT_FALSE(contains(msg, "[json.exception")) << msg;
}

TEST(Candidate, UnknownTopLevelKey) {
  std::string msg = error_of(with_plan(kOneLaunch + R"(, "lanuch": [])"));
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key lanuch: unknown key")) << msg;
  EXPECT_TRUE(contains(msg, "scratch, launch, options")) << msg;
}

TEST(Candidate, MissingLaunch) {
  std::string msg = error_of(with_plan(R"("options": [])"));
  EXPECT_TRUE(contains(msg, "plan key launch: missing")) << msg;
}

TEST(Candidate, EmptyLaunchArray) {
  std::string msg = error_of(with_plan(R"("launch": [])"));
  EXPECT_TRUE(contains(msg, "plan key launch: expected a non-empty array")) << msg;
}

TEST(Candidate, UnknownLaunchKey) {
  std::string msg =
      error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1], "block": [1], "args": [], "stream": 1}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].stream: unknown key")) << msg;
}

TEST(Candidate, KernelMustBeAnIdentifier) {
  std::string msg = error_of(with_plan(R"("launch": [{"kernel": "k<1>", "grid": [1], "block": [1], "args": []}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].kernel")) << msg;
}

TEST(Candidate, GridWithNoItems) {
  std::string msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [], "block": [1], "args": []}])"));
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key launch[0].grid: expected an array of 1 to 3")) << msg;
  EXPECT_TRUE(contains(msg, "got 0 items")) << msg;
}

TEST(Candidate, GridWithFourItems) {
  std::string msg =
      error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1, 2, 3, 4], "block": [1], "args": []}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].grid: expected an array of 1 to 3")) << msg;
  EXPECT_TRUE(contains(msg, "got 4 items")) << msg;
}

TEST(Candidate, BlockWithFourItems) {
  std::string msg =
      error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1], "block": [1, 1, 1, 1], "args": []}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].block")) << msg;
}

TEST(Candidate, ZeroLiteralGridIsRefused) {
  std::string msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [4, 0], "block": [1], "args": []}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].grid[1]")) << msg;
}

TEST(Candidate, FloatGridItemIsRefused) {
  std::string msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1.5], "block": [1], "args": []}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].grid[0]: expected an integer or an expression string")) << msg;
}

TEST(Candidate, UnknownScalarType) {
  std::string src = with_plan(R"("launch": [
      {"kernel": "k", "grid": [1], "block": [1], "args": ["a"]},
      {"kernel": "k", "grid": [1], "block": [1], "args": ["a", "a", "q32:n"]}])");
  EXPECT_EQ(error_of(src),
            "cand.cu:1: plan key launch[1].args[2]: 'q32:n' has unknown scalar type 'q32' (expected i32, i64, u32, "
            "f32, f64)");
}

TEST(Candidate, ArgumentThatIsNeitherTensorNorScalar) {
  std::string msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1], "block": [1], "args": ["a+1"]}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].args[0]: 'a+1' is neither a tensor name nor a scalar")) << msg;
}

TEST(Candidate, NonStringArgument) {
  std::string msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1], "block": [1], "args": [5]}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].args[0]: expected a tensor name")) << msg;
}

TEST(Candidate, BadExpressionInGridNamesKeyAndColumn) {
  std::string msg = error_of(
      with_plan(R"J("launch": [{"kernel": "k", "grid": [1, "cdiv(numel(a), 256"], "block": [1], "args": []}])J"));
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key launch[0].grid[1]: bad expression 'cdiv(numel(a), 256'")) << msg;
  EXPECT_TRUE(contains(msg, "expected ')' at column 19")) << msg;
}

TEST(Candidate, BadExpressionInScalarArgument) {
  std::string msg =
      error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1], "block": [1], "args": ["i32:a.shape[]"]}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].args[0]: bad expression 'a.shape[]'")) << msg;
}

TEST(Candidate, BadExpressionInSmem) {
  std::string msg =
      error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1], "block": [1], "smem": "4 *", "args": []}])"));
  EXPECT_TRUE(contains(msg, "plan key launch[0].smem: bad expression")) << msg;
}

TEST(Candidate, BadScratchDtype) {
  std::string msg = error_of(with_plan(R"("scratch": {"partial": {"dtype": "float32", "shape": [4]}}, )" + kOneLaunch));
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key scratch.partial.dtype: expected one of f32, f16")) << msg;
  EXPECT_TRUE(contains(msg, "\"float32\"")) << msg;
}

TEST(Candidate, ScratchNeedsAShape) {
  std::string msg = error_of(with_plan(R"("scratch": {"partial": {"dtype": "f32", "shape": []}}, )" + kOneLaunch));
  EXPECT_TRUE(contains(msg, "plan key scratch.partial.shape")) << msg;
}

TEST(Candidate, ScratchNameMustBeAnIdentifier) {
  std::string msg = error_of(with_plan(R"("scratch": {"my-buf": {"dtype": "f32", "shape": [4]}}, )" + kOneLaunch));
  EXPECT_TRUE(contains(msg, "plan key scratch.my-buf")) << msg;
}

TEST(Candidate, UnknownScratchKey) {
  std::string msg =
      error_of(with_plan(R"("scratch": {"p": {"dtype": "f32", "shape": [4], "align": 16}}, )" + kOneLaunch));
  EXPECT_TRUE(contains(msg, "plan key scratch.p.align: unknown key")) << msg;
}

TEST(Candidate, ScratchKeepsFileOrder) {
  Candidate c = parse_candidate(
      with_plan(R"("scratch": {"zz": {"dtype": "f32", "shape": [4]}, "aa": {"dtype": "i32", "shape": [2]}}, )" +
                kOneLaunch),
      "cand.cu");
  ASSERT_EQ(c.plan.scratch.size(), 2u);
  EXPECT_EQ(c.plan.scratch[0].name, "zz");
  EXPECT_EQ(c.plan.scratch[1].name, "aa");
  EXPECT_EQ(c.plan.scratch[1].dtype, DType::i32);
}

TEST(Candidate, AcceptedOptionsAreKept) {
  Candidate c =
      parse_candidate(with_plan(kOneLaunch + R"(, "options": ["--use_fast_math", "--maxrregcount=64"])"), "cand.cu");
  EXPECT_EQ(c.plan.options, (std::vector<std::string>{"--use_fast_math", "--maxrregcount=64"}));
}

TEST(Candidate, RefusedOptionInPlanNamesItsKey) {
  std::string msg = error_of(with_plan(kOneLaunch + R"(, "options": ["--use_fast_math", "-rdc=true"])"));
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key options[1]: option '-rdc=true' is refused")) << msg;
}

TEST(CandidateOption, RefusesRelocatableDeviceCode) {
  EXPECT_TRUE(contains(option_error("-rdc=true"), "launch grids")) << option_error("-rdc=true");
  EXPECT_TRUE(contains(option_error("--relocatable-device-code=true"), "launch grids"));
  EXPECT_TRUE(contains(option_error("-rdc"), "refused"));
}

TEST(CandidateOption, RefusesDeviceCompileAndLinkTimeOptimization) {
  EXPECT_TRUE(contains(option_error("-dc"), "launch grids"));
  EXPECT_TRUE(contains(option_error("--device-c"), "launch grids"));
  EXPECT_TRUE(contains(option_error("-dlto"), "launch grids"));
  EXPECT_TRUE(contains(option_error("--dlink-time-opt"), "launch grids"));
  EXPECT_TRUE(contains(option_error("-ewp"), "launch grids"));
}

TEST(CandidateOption, RefusesArchitecture) {
  std::string msg = option_error("--gpu-architecture=sm_80");
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key options[0]: option '--gpu-architecture=sm_80' is refused")) << msg;
  EXPECT_TRUE(contains(msg, "set by the harness")) << msg;
  EXPECT_TRUE(contains(option_error("-arch=sm_90"), "set by the harness"));
}

TEST(CandidateOption, RefusesIncludePaths) {
  EXPECT_TRUE(contains(option_error("-I/tmp/evil"), "include paths"));
  EXPECT_TRUE(contains(option_error("--include-path=/tmp"), "include paths"));
}

TEST(CandidateOption, RefusesNonOptions) {
  EXPECT_TRUE(contains(option_error("use_fast_math"), "starting with '-'"));
}

TEST(CandidateOption, AcceptsOrdinaryOptions) {
  EXPECT_NO_THROW(check_candidate_option("--use_fast_math", "x"));
  EXPECT_NO_THROW(check_candidate_option("--maxrregcount=64", "x"));
  EXPECT_NO_THROW(check_candidate_option("-lineinfo", "x"));
  // Prefix-only matches must not be refused: -dopt is not -dc.
  EXPECT_NO_THROW(check_candidate_option("-dopt=on", "x"));
}

// Hostile plans (issue 16): refused with the plan key, never a crash or an internal error.
TEST(CandidateBounds, DeepNestingDuplicateKeysAndHugeNumbers) {
  std::string msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1], "block": [32], "args": )" +
                                       std::string(10000, '[') + std::string(10000, ']') + "}]"));
  EXPECT_NE(msg.find("plan key launch[0].args"), std::string::npos) << msg;
  EXPECT_NE(msg.find("nested deeper"), std::string::npos) << msg;
  msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [1e400], "block": [32], "args": []}])"));
  EXPECT_NE(msg.find("plan key launch[0].grid[0]: number out of range"), std::string::npos) << msg;
  msg = error_of(with_plan(R"("launch": [{"kernel": "k", "kernel": "j", "grid": [1], "block": [32], "args": []}])"));
  EXPECT_NE(msg.find("plan key launch[0].kernel: duplicate key"), std::string::npos) << msg;
  std::string chain = "1";
  for (int i = 0; i < 100000; ++i) chain += "+1";
  msg = error_of(with_plan(R"("launch": [{"kernel": "k", "grid": [")" + chain + R"("], "block": [32], "args": []}])"));
  EXPECT_NE(msg.find("plan key launch[0].grid[0]"), std::string::npos) << msg.substr(0, 300);
  EXPECT_LT(msg.size(), 400u) << "the expression is shown shortened";
}

TEST(ModelNewCandidate, APyFileIsTheModelNewKind) {
  const std::string src =
      "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n";
  Candidate c = parse_candidate(src, "solutions/19_ReLU.py");
  EXPECT_EQ(c.kind, "modelnew");
  EXPECT_EQ(c.plan_line, 3);
  EXPECT_EQ(c.source, src);
  EXPECT_TRUE(c.plan.launches.empty());
  EXPECT_EQ(kind_of_file("k.cu").name(), "plan");
  EXPECT_EQ(kind_of(c).name(), "modelnew");
}

TEST(ModelNewCandidate, AFileWithoutATopLevelModelNewIsRefusedWithAClearError) {
  for (const std::string& src : {std::string("class Model(torch.nn.Module):\n    pass\n"),
                                 std::string("def f():\n    class ModelNew:\n        pass\n"),
                                 std::string("# class ModelNew is below\nx = 'class ModelNewer'\n")}) {
    try {
      parse_candidate(src, "sol.py");
      ADD_FAILURE() << "accepted:\n" << src;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("sol.py: defines no ModelNew"), std::string::npos) << e.what();
    }
  }
}

TEST(ModelNewCandidate, LoadCandidateReadsAPyFileAsModelNew) {
  test::TempDir t;
  t.write("sol.py", "class ModelNew:\n    pass\n");
  Candidate c = load_candidate(t.path() / "sol.py");
  EXPECT_EQ(c.kind, "modelnew");
}

}  // namespace
}  // namespace kagent
