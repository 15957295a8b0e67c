#include <sys/stat.h>

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kagent/common/error.hpp"
#include "kagent/spec/op.hpp"
#include "test_util.hpp"

namespace kagent {
namespace {

namespace fs = std::filesystem;

const std::string kKernelBenchPy = R"(import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x):
        return torch.softmax(x, dim=1)

def get_inputs():
    return [torch.rand(16, 32)]

def get_init_inputs():
    return []
)";

// vector_add from docs/candidate.md; "b" comes before "a" so a sorted map would show.
const std::string kVectorAdd = R"J({
  "name": "vector_add",
  "reference": {"cuda": "ref.cu"},
  "inputs":  {"b": {"shape": [16777216], "dtype": "f32", "init": "randn"},
              "a": {"shape": [4096, 4096], "dtype": "f32", "init": "uniform(-1,1)"}},
  "outputs": {"out": {"shape": [16777216], "dtype": "f32"}}
})J";

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// A folder with ref.cu, ref.py and start.cu, into which each test writes its op.json.
class OpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.write("ref.cu", "/*kagent {} */\n");
    dir_.write("ref.py", kKernelBenchPy);
    dir_.write("start.cu", "// start\n");
  }

  fs::path write(const std::string& json, const std::string& name = "op.json") { return dir_.write(name, json); }

  // The InputError message of loading json; fails the test when it loads.
  std::string error_of(const std::string& json) {
    fs::path path = write(json);
    try {
      load_op(path);
    } catch (const InputError& e) {
      return e.what();
    }
    ADD_FAILURE() << "no error for:\n" << json;
    return "";
  }

  // A native op.json with the given extra top-level members and input a's spec.
  static std::string native(const std::string& input_a, const std::string& extra = "") {
    return R"({"name": "t", "reference": {"cuda": "ref.cu"}, )" + extra + R"("inputs": {"a": )" + input_a +
           R"(}, "outputs": {"out": {"shape": [4], "dtype": "f32"}}})";
  }

  std::string prefix() const { return (dir_.path() / "op.json").string() + ": "; }

  test::TempDir dir_;
};

TEST_F(OpTest, NativeOpLoadsWithInputOrderPreserved) {
  Op op = load_op(write(kVectorAdd));
  EXPECT_EQ(op.name, "vector_add");
  EXPECT_EQ(op.ref_kind, RefKind::cuda);
  EXPECT_EQ(op.reference, dir_.path() / "ref.cu");
  EXPECT_TRUE(op.reference.is_absolute());
  ASSERT_EQ(op.inputs.size(), 2u);
  EXPECT_EQ(op.inputs[0].name, "b");
  EXPECT_EQ(op.inputs[1].name, "a");
  EXPECT_EQ(op.inputs[1].shape, (std::vector<int64_t>{4096, 4096}));
  EXPECT_EQ(op.inputs[1].numel(), 16777216);
  EXPECT_EQ(op.inputs[1].bytes(), 4 * 16777216LL);
  EXPECT_EQ(op.inputs[0].init.kind, InitSpec::Kind::randn);
  EXPECT_EQ(op.inputs[1].init.kind, InitSpec::Kind::uniform);
  EXPECT_DOUBLE_EQ(op.inputs[1].init.a, -1.0);
  EXPECT_DOUBLE_EQ(op.inputs[1].init.b, 1.0);
  EXPECT_EQ(op.inputs[1].init.text, "uniform(-1,1)");
  ASSERT_EQ(op.outputs.size(), 1u);
  EXPECT_EQ(op.outputs[0].name, "out");
  EXPECT_EQ(op.outputs[0].dtype, DType::f32);
  EXPECT_EQ(op.tensor_names(), (std::vector<std::string>{"b", "a", "out"}));
  // Defaults.
  EXPECT_EQ(op.precision, Precision::fp32);
  EXPECT_DOUBLE_EQ(op.tolerance.atol, 1e-4);
  EXPECT_DOUBLE_EQ(op.tolerance.rtol, 1e-4);
  EXPECT_EQ(op.correctness_trials, 5);
  EXPECT_FALSE(op.start.has_value());
  EXPECT_FALSE(op.compile_baseline_ms.has_value());
}

TEST_F(OpTest, PythonReferenceOpLoadsAllSettings) {
  Op op = load_op(write(R"({
    "name": "softmax_rows", "reference": "ref.py", "precision": "fp16",
    "tolerance": {"atol": 0.05, "rtol": 0.02}, "correctness_trials": 7,
    "budget": {"turns": 12, "minutes": 30.5, "tokens": 100000}, "start": "start.cu",
    "llm": {"model": "m", "temperature": 0.2}, "description": "rows"
  })"));
  EXPECT_EQ(op.name, "softmax_rows");
  EXPECT_EQ(op.ref_kind, RefKind::python);
  EXPECT_EQ(op.reference, dir_.path() / "ref.py");
  EXPECT_EQ(op.precision, Precision::fp16);
  EXPECT_DOUBLE_EQ(op.tolerance.atol, 0.05);
  EXPECT_DOUBLE_EQ(op.tolerance.rtol, 0.02);
  EXPECT_EQ(op.correctness_trials, 7);
  EXPECT_EQ(op.budget.turns, 12);
  EXPECT_DOUBLE_EQ(op.budget.minutes, 30.5);
  EXPECT_EQ(op.budget.tokens, 100000);
  ASSERT_TRUE(op.start.has_value());
  EXPECT_EQ(*op.start, dir_.path() / "start.cu");
  EXPECT_EQ(op.llm["model"], "m");
  EXPECT_EQ(op.description, "rows");
  EXPECT_TRUE(op.inputs.empty());
  EXPECT_TRUE(op.tensor_names().empty());
}

TEST_F(OpTest, ToleranceDefaultsFollowPrecision) {
  Op op = load_op(write(R"({"name": "t", "reference": "ref.py", "precision": "bf16"})"));
  EXPECT_DOUBLE_EQ(op.tolerance.atol, 1e-2);
  EXPECT_DOUBLE_EQ(op.tolerance.rtol, 1e-2);
}

TEST_F(OpTest, PartialToleranceOverridesOnlyWhatItNames) {
  Op op = load_op(write(R"({"name": "t", "reference": "ref.py", "precision": "fp16", "tolerance": {"rtol": 0.5}})"));
  EXPECT_DOUBLE_EQ(op.tolerance.atol, 1e-2);
  EXPECT_DOUBLE_EQ(op.tolerance.rtol, 0.5);
}

TEST_F(OpTest, InitForms) {
  Op op = load_op(write(R"J({"name": "t", "reference": {"cuda": "ref.cu"},
    "inputs": {"a": {"shape": [4], "dtype": "f32", "init": "rand"},
               "b": {"shape": [4], "dtype": "f32", "init": "normal(0.5, 2)"},
               "c": {"shape": [4], "dtype": "i32", "init": "randint(-3,7)"},
               "d": {"shape": [4], "dtype": "f32"}},
    "outputs": {"out": {"shape": [4], "dtype": "f32"}}})J"));
  ASSERT_EQ(op.inputs.size(), 4u);
  EXPECT_EQ(op.inputs[0].init.kind, InitSpec::Kind::rand);
  EXPECT_EQ(op.inputs[1].init.kind, InitSpec::Kind::normal);
  EXPECT_DOUBLE_EQ(op.inputs[1].init.a, 0.5);
  EXPECT_DOUBLE_EQ(op.inputs[1].init.b, 2.0);
  EXPECT_EQ(op.inputs[2].init.kind, InitSpec::Kind::randint);
  EXPECT_DOUBLE_EQ(op.inputs[2].init.a, -3.0);
  EXPECT_DOUBLE_EQ(op.inputs[2].init.b, 7.0);
  EXPECT_EQ(op.inputs[2].dtype, DType::i32);
  EXPECT_EQ(op.inputs[2].bytes(), 16);
  EXPECT_EQ(op.inputs[3].init.kind, InitSpec::Kind::randn);  // default
}

TEST_F(OpTest, CompileBaselineForNativeReference) {
  Op op = load_op(write(native(R"({"shape": [4], "dtype": "f32"})", R"("compile_baseline_ms": 0.25, )")));
  ASSERT_TRUE(op.compile_baseline_ms.has_value());
  EXPECT_DOUBLE_EQ(*op.compile_baseline_ms, 0.25);
}

// A native operator's FLOPs for the compute floor: a number, or an expression of its tensors' shapes;
// a PyTorch reference's are counted by the reference server, so the key is refused there.
TEST_F(OpTest, FlopsForNativeReferences) {
  Op op = load_op(write(native(R"({"shape": [64, 32], "dtype": "f32"})", R"("flops": 1.5e9, )")));
  ASSERT_TRUE(op.flops.has_value());
  EXPECT_DOUBLE_EQ(*op.flops, 1.5e9);
  EXPECT_EQ(op.flops_source, "given by the op.json");
  op = load_op(write(native(R"({"shape": [64, 32], "dtype": "f32"})", R"("flops": "2 * a.shape[0] * a.shape[1]", )")));
  EXPECT_DOUBLE_EQ(*op.flops, 2.0 * 64 * 32);
  EXPECT_FALSE(load_op(write(native(R"({"shape": [4], "dtype": "f32"})"))).flops.has_value());
  EXPECT_TRUE(contains(error_of(native(R"({"shape": [4], "dtype": "f32"})", R"("flops": 0, )")),
                       "key flops: expected a positive count, got 0"));
  EXPECT_TRUE(contains(error_of(native(R"({"shape": [4], "dtype": "f32"})", R"("flops": "q.shape[0]", )")),
                       "key flops: 'q.shape[0]'"));
  EXPECT_TRUE(contains(error_of(native(R"({"shape": [4], "dtype": "f32"})", R"("flops": [1], )")),
                       "key flops: expected a number or an expression"));
  EXPECT_TRUE(contains(error_of(R"({"name": "t", "reference": "ref.py", "flops": 10})"),
                       "key flops: only for native references"));
}

TEST_F(OpTest, UnknownTopLevelKey) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "tolerence": {}})");
  EXPECT_TRUE(contains(msg, prefix() + "key tolerence: unknown key (allowed: name, reference, precision, tolerance"))
      << msg;
}

TEST_F(OpTest, UnknownNestedKey) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "budget": {"hours": 1}})");
  EXPECT_TRUE(contains(msg, prefix() + "key budget.hours: unknown key (allowed: turns, minutes, tokens)")) << msg;
}

TEST_F(OpTest, MissingName) {
  std::string msg = error_of(R"({"reference": "ref.py"})");
  EXPECT_TRUE(contains(msg, prefix() + "key name: missing")) << msg;
}

TEST_F(OpTest, MissingReferenceFileNamesKeyAndResolvedPath) {
  std::string msg = error_of(R"({"name": "t", "reference": {"cuda": "nope/ref.cu"}})");
  EXPECT_TRUE(contains(msg, prefix() + "key reference.cuda: file not found: ")) << msg;
  EXPECT_TRUE(contains(msg, (dir_.path() / "nope" / "ref.cu").string())) << msg;
}

TEST_F(OpTest, MissingPythonReferenceFile) {
  std::string msg = error_of(R"({"name": "t", "reference": "other.py"})");
  EXPECT_TRUE(contains(msg, prefix() + "key reference: file not found: " + (dir_.path() / "other.py").string())) << msg;
}

TEST_F(OpTest, ReferenceStringMustBeAPythonFile) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.cu"})");
  EXPECT_TRUE(contains(msg, prefix() + "key reference: expected a path to a .py file")) << msg;
}

TEST_F(OpTest, ReferenceObjectWithOtherKeys) {
  std::string msg = error_of(R"({"name": "t", "reference": {"triton": "ref.py"}})");
  EXPECT_TRUE(contains(msg, prefix() + "key reference.triton: unknown key (allowed: cuda)")) << msg;
}

TEST_F(OpTest, MissingStartFile) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "start": "s.cu"})");
  EXPECT_TRUE(contains(msg, prefix() + "key start: file not found")) << msg;
}

// Every path an op.json names stays inside its folder once symlinks are followed: an op.json is
// data people download, and kagent pastes the reference into the prompt and copies start into the
// model's workspace. Each path key, with an absolute path, a "../" path, a symlink leading out (to
// a file and to a folder) and a legitimate subfolder path (also through a symlink that stays in).
TEST(OpPaths, EveryPathKeyStaysInsideTheOpFolder) {
  test::TempDir t;
  t.write("outside/secret.cu", "/*kagent {} */\n// a private file\n");
  t.write("outside/secret.py", kKernelBenchPy);
  t.write("op/sub/ref.cu", "/*kagent {} */\n");
  t.write("op/sub/ref.py", kKernelBenchPy);
  for (const char* ext : {"cu", "py"}) {
    fs::create_symlink(t / (std::string("outside/secret.") + ext), t / (std::string("op/link.") + ext));
    fs::create_symlink(std::string("sub/ref.") + ext, t / (std::string("op/inner.") + ext));
  }
  fs::create_symlink(t / "outside", t / "op/linkdir");
  const fs::path op_path = t / "op/op.json";
  const std::string op_folder = fs::weakly_canonical(t / "op").string();

  struct Key {
    std::string key, ext;
    std::function<std::string(const std::string&)> op;  // the op.json naming path under key
  };
  const std::vector<Key> keys = {
      {"reference", "py",
       [](const std::string& p) {
         return nlohmann::json{{"name", "t"}, {"reference", p}}.dump();
       }},
      {"reference.cuda", "cu",
       [](const std::string& p) {
         return nlohmann::json{{"name", "t"},
                               {"reference", {{"cuda", p}}},
                               {"inputs", {{"a", {{"shape", {4}}, {"dtype", "f32"}}}}},
                               {"outputs", {{"out", {{"shape", {4}}, {"dtype", "f32"}}}}}}
             .dump();
       }},
      {"start", "cu",
       [](const std::string& p) {
         return nlohmann::json{{"name", "t"}, {"reference", "sub/ref.py"}, {"start", p}}.dump();
       }},
  };
  for (const Key& k : keys) {
    const std::string secret = "secret." + k.ext;
    std::vector<std::string> escaping = {(t / "outside" / secret).string(), "../outside/" + secret,
                                         "sub/../../outside/" + secret, "link." + k.ext, "linkdir/" + secret};
    if (k.ext == "cu") escaping.push_back("/proc/self/environ");
    for (const std::string& p : escaping) {
      t.write("op/op.json", k.op(p));
      std::string msg;
      try {
        load_op(op_path);
        ADD_FAILURE() << k.key << " = " << p << " loaded";
      } catch (const InputError& e) {
        msg = e.what();
      }
      EXPECT_TRUE(contains(msg, op_path.string() + ": key " + k.key + ": '" + k.key + "' names '" + p + "'")) << msg;
      EXPECT_TRUE(
          contains(msg, "outside the op's folder " + op_folder + ": paths in an op.json must stay inside its folder"))
          << msg;
    }
    for (const std::string& p : {"sub/ref." + k.ext, "./sub/../sub/ref." + k.ext, "inner." + k.ext}) {
      t.write("op/op.json", k.op(p));
      Op op = load_op(op_path);
      const fs::path& got = k.key == "start" ? *op.start : op.reference;
      EXPECT_EQ(got, (t / "op" / p).lexically_normal()) << k.key << " = " << p;
    }
  }
}

TEST_F(OpTest, BadDtype) {
  std::string msg = error_of(native(R"({"shape": [4], "dtype": "float32"})"));
  EXPECT_TRUE(contains(msg, prefix() + "key inputs.a.dtype: expected one of f32, f16, bf16, f64, i64, i32, i16, i8, "
                                       "u8, bool, got \"float32\""))
      << msg;
}

TEST_F(OpTest, NegativeShape) {
  std::string msg = error_of(native(R"({"shape": [4, -3], "dtype": "f32"})"));
  EXPECT_EQ(msg, prefix() + "key inputs.a.shape[1]: expected a positive integer, got -3");
}

TEST_F(OpTest, EmptyShape) {
  std::string msg = error_of(native(R"({"shape": [], "dtype": "f32"})"));
  EXPECT_TRUE(contains(msg, prefix() + "key inputs.a.shape: expected a non-empty array")) << msg;
}

TEST_F(OpTest, ZerosInitIsRefusedWithReason) {
  std::string msg = error_of(native(R"({"shape": [4], "dtype": "f32", "init": "zeros"})"));
  EXPECT_TRUE(contains(msg, prefix() + "key inputs.a.init: 'zeros' is refused")) << msg;
  EXPECT_TRUE(contains(msg, "hide outputs the kernel never writes")) << msg;
}

TEST_F(OpTest, UnknownInit) {
  std::string msg = error_of(native(R"({"shape": [4], "dtype": "f32", "init": "ones"})"));
  EXPECT_TRUE(contains(msg, prefix() + "key inputs.a.init: unknown init 'ones'")) << msg;
}

TEST_F(OpTest, InitParameterChecks) {
  EXPECT_TRUE(contains(error_of(native(R"J({"shape": [4], "dtype": "f32", "init": "normal(0,0)"})J")), "std > 0"));
  EXPECT_TRUE(contains(error_of(native(R"J({"shape": [4], "dtype": "i32", "init": "randint(5,5)"})J")), "lo < hi"));
  EXPECT_TRUE(
      contains(error_of(native(R"J({"shape": [4], "dtype": "f32", "init": "uniform(1,x)"})J")), "unknown init"));
}

TEST_F(OpTest, OutputsTakeNoInit) {
  std::string msg = error_of(R"({"name": "t", "reference": {"cuda": "ref.cu"},
    "inputs": {"a": {"shape": [4], "dtype": "f32"}},
    "outputs": {"out": {"shape": [4], "dtype": "f32", "init": "randn"}}})");
  EXPECT_TRUE(contains(msg, prefix() + "key outputs.out.init: unknown key (allowed: shape, dtype)")) << msg;
}

TEST_F(OpTest, DuplicateTensorNameAcrossInputsAndOutputs) {
  std::string msg = error_of(R"({"name": "t", "reference": {"cuda": "ref.cu"},
    "inputs": {"a": {"shape": [4], "dtype": "f32"}},
    "outputs": {"a": {"shape": [4], "dtype": "f32"}}})");
  EXPECT_TRUE(contains(msg, prefix() + "key outputs.a: duplicate tensor name 'a'")) << msg;
}

TEST_F(OpTest, TensorNameMustBeAnIdentifier) {
  std::string msg = error_of(R"({"name": "t", "reference": {"cuda": "ref.cu"},
    "inputs": {"a.b": {"shape": [4], "dtype": "f32"}},
    "outputs": {"out": {"shape": [4], "dtype": "f32"}}})");
  EXPECT_TRUE(contains(msg, prefix() + "key inputs.a.b: a tensor name must be an identifier")) << msg;
}

TEST_F(OpTest, NativeReferenceNeedsInputsAndOutputs) {
  std::string msg = error_of(R"({"name": "t", "reference": {"cuda": "ref.cu"},
    "inputs": {"a": {"shape": [4], "dtype": "f32"}}})");
  EXPECT_TRUE(contains(msg, prefix() + "key outputs: missing")) << msg;
  msg = error_of(R"({"name": "t", "reference": {"cuda": "ref.cu"}, "inputs": {},
    "outputs": {"out": {"shape": [4], "dtype": "f32"}}})");
  EXPECT_TRUE(contains(msg, prefix() + "key inputs: expected a non-empty object")) << msg;
}

TEST_F(OpTest, InputsOnAPythonReference) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py",
    "inputs": {"a": {"shape": [4], "dtype": "f32"}}})");
  EXPECT_TRUE(contains(msg, prefix() + "key inputs: only for native references")) << msg;
}

TEST_F(OpTest, CompileBaselineOnAPythonReference) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "compile_baseline_ms": 1.0})");
  EXPECT_TRUE(contains(msg, prefix() + "key compile_baseline_ms: only for native references")) << msg;
}

TEST_F(OpTest, BadPrecision) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "precision": "fp8"})");
  EXPECT_EQ(msg, prefix() + "key precision: expected one of fp32, tf32, fp16, bf16, got \"fp8\"");
  msg = error_of(R"({"name": "t", "reference": "ref.py", "precision": 32})");
  EXPECT_EQ(msg, prefix() + "key precision: expected one of fp32, tf32, fp16, bf16, got 32");
}

// tf32: fp32 tensors with TF32 math allowed; its tolerance is its own (looser than fp32's).
TEST_F(OpTest, Tf32PrecisionParsesWithItsOwnTolerance) {
  Op op = load_op(write(R"({"name": "t", "reference": "ref.py", "precision": "tf32"})"));
  EXPECT_EQ(op.precision, Precision::tf32);
  EXPECT_FALSE(op.tolerance_given);
  EXPECT_DOUBLE_EQ(op.tolerance.atol, default_tolerance(Precision::tf32).atol);
  EXPECT_DOUBLE_EQ(op.tolerance.rtol, default_tolerance(Precision::tf32).rtol);
  EXPECT_GT(op.tolerance.atol, default_tolerance(Precision::fp32).atol);
  EXPECT_TRUE(allows_tf32(op.precision));
  EXPECT_FALSE(allows_tf32(Precision::fp32));
}

// --precision: the tolerance follows the precision unless op.json set one.
TEST_F(OpTest, WithPrecisionKeepsAGivenTolerance) {
  Op plain = load_op(write(R"({"name": "t", "reference": "ref.py"})"));
  Op tf32 = with_precision(plain, Precision::tf32);
  EXPECT_EQ(tf32.precision, Precision::tf32);
  EXPECT_DOUBLE_EQ(tf32.tolerance.atol, default_tolerance(Precision::tf32).atol);
  Op given = load_op(write(R"({"name": "t", "reference": "ref.py", "tolerance": {"atol": 0.003}})"));
  EXPECT_TRUE(given.tolerance_given);
  Op given_tf32 = with_precision(given, Precision::tf32);
  EXPECT_DOUBLE_EQ(given_tf32.tolerance.atol, 0.003);
  EXPECT_DOUBLE_EQ(given_tf32.tolerance.rtol, 1e-4);
}

TEST_F(OpTest, NegativeTolerance) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "tolerance": {"atol": -1}})");
  EXPECT_TRUE(contains(msg, prefix() + "key tolerance.atol: expected a number >= 0")) << msg;
}

TEST_F(OpTest, CorrectnessTrialsRange) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "correctness_trials": 0})");
  EXPECT_TRUE(contains(msg, prefix() + "key correctness_trials: expected an integer from 1 to 100, got 0")) << msg;
  msg = error_of(R"({"name": "t", "reference": "ref.py", "correctness_trials": 2.5})");
  EXPECT_TRUE(contains(msg, "key correctness_trials")) << msg;
}

TEST_F(OpTest, BudgetValues) {
  EXPECT_TRUE(
      contains(error_of(R"({"name": "t", "reference": "ref.py", "budget": {"turns": 0}})"), "key budget.turns"));
  EXPECT_TRUE(contains(error_of(R"({"name": "t", "reference": "ref.py", "budget": {"minutes": 0}})"),
                       "key budget.minutes: expected a number > 0"));
  EXPECT_TRUE(
      contains(error_of(R"({"name": "t", "reference": "ref.py", "budget": {"tokens": -5}})"), "key budget.tokens"));
}

TEST_F(OpTest, LlmMustBeAnObject) {
  std::string msg = error_of(R"({"name": "t", "reference": "ref.py", "llm": "gpt"})");
  EXPECT_TRUE(contains(msg, prefix() + "key llm: expected an object")) << msg;
}

TEST_F(OpTest, MalformedJsonReportsLineAndColumn) {
  // Line 3 lacks the comma before "reference"; the parser stops at the end of that token
  // (column 13), as nlohmann itself reports it.
  std::string msg = error_of("{\n  \"name\": \"t\"\n  \"reference\": \"ref.py\"\n}\n");
  EXPECT_TRUE(contains(msg, (dir_.path() / "op.json").string() + ":3:13: not valid JSON: ")) << msg;
  EXPECT_FALSE(contains(msg, "[json.exception")) << msg;
}

TEST_F(OpTest, TopLevelMustBeAnObject) {
  std::string msg = error_of("[1, 2]");
  EXPECT_TRUE(contains(msg, prefix() + "expected a JSON object")) << msg;
}

TEST_F(OpTest, MissingFile) {
  try {
    load_op(dir_.path() / "absent.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), (dir_.path() / "absent.json").string())) << e.what();
  }
}

TEST_F(OpTest, OtherExtensionIsRefused) {
  fs::path path = write("{}", "op.yaml");
  try {
    load_op(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), path.string() + ": expected an op.json")) << e.what();
  }
}

TEST_F(OpTest, KernelBenchFileUsedDirectly) {
  fs::path path = dir_.write("23_Softmax.py", kKernelBenchPy);
  Op op = load_op(path);
  EXPECT_EQ(op.name, "23_Softmax");
  EXPECT_EQ(op.ref_kind, RefKind::python);
  EXPECT_EQ(op.reference, path);
  EXPECT_TRUE(op.reference.is_absolute());
  EXPECT_EQ(op.precision, Precision::fp32);
  EXPECT_EQ(op.correctness_trials, 5);
  EXPECT_TRUE(op.inputs.empty());
}

TEST_F(OpTest, PythonFileMissingGetInitInputs) {
  std::string text = kKernelBenchPy.substr(0, kKernelBenchPy.find("def get_init_inputs"));
  fs::path path = dir_.write("bad.py", text);
  try {
    load_op(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    std::string msg = e.what();
    EXPECT_TRUE(contains(msg, path.string() + ": expected top-level def get_init_inputs (a KernelBench problem file "
                                              "defines Model, get_inputs and get_init_inputs)"))
        << msg;
    EXPECT_FALSE(contains(msg, "expected top-level class Model")) << msg;
  }
}

TEST_F(OpTest, PythonDefinitionsMustBeTopLevel) {
  // Indented definitions (inside a class or function) do not count.
  fs::path path =
      dir_.write("nested.py", "class Model:\n    def get_inputs(): pass\n    def get_init_inputs(): pass\n");
  try {
    load_op(path);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "def get_inputs, def get_init_inputs")) << e.what();
  }
}

TEST(OpKernelBench, RealKernelBenchFileLoads) {
  fs::path path = test::shared_dir() / "kernelbench" / "level1" / "23_Softmax.py";
  if (!fs::exists(path)) GTEST_SKIP() << "KernelBench not found at " << path << " (shared/ is optional)";
  Op op = load_op(path);
  EXPECT_EQ(op.name, "23_Softmax");
  EXPECT_EQ(op.ref_kind, RefKind::python);
  EXPECT_TRUE(op.reference.is_absolute());
  EXPECT_TRUE(fs::exists(op.reference));
}

TEST(DType, ParsesExactlyTheShortNames) {
  for (std::string_view name : {"f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "bool"}) {
    auto t = parse_dtype(name);
    ASSERT_TRUE(t.has_value()) << name;
    EXPECT_EQ(dtype_name(*t), name);
  }
  EXPECT_EQ(parse_dtype("bool"), DType::boolean);
  EXPECT_FALSE(parse_dtype("float32").has_value());
  EXPECT_FALSE(parse_dtype("F32").has_value());
  EXPECT_FALSE(parse_dtype("").has_value());
  EXPECT_EQ(dtype_size(DType::bf16), 2u);
  EXPECT_EQ(dtype_size(DType::i64), 8u);
  EXPECT_TRUE(dtype_is_float(DType::f16));
  EXPECT_FALSE(dtype_is_float(DType::u8));
  EXPECT_EQ(dtype_choices(), "f32, f16, bf16, f64, i64, i32, i16, i8, u8, bool");
}

TEST(OpDefaults, PrecisionNamesAndTolerances) {
  EXPECT_EQ(precision_name(Precision::fp32), "fp32");
  EXPECT_EQ(precision_name(Precision::tf32), "tf32");
  for (auto p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16})
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  EXPECT_FALSE(parse_precision("FP32").has_value());
  EXPECT_FALSE(parse_precision("").has_value());
  EXPECT_EQ(precision_name(Precision::fp16), "fp16");
  EXPECT_EQ(precision_name(Precision::bf16), "bf16");
  EXPECT_DOUBLE_EQ(default_tolerance(Precision::fp32).atol, 1e-4);
  EXPECT_DOUBLE_EQ(default_tolerance(Precision::fp16).rtol, 1e-2);
  EXPECT_DOUBLE_EQ(default_tolerance(Precision::bf16).atol, 1e-2);
  EXPECT_DOUBLE_EQ(default_tolerance(Precision::tf32).atol, 5e-2);  // measured, see op.cpp
}

// The sentence the task prompt and the reports carry: what each precision allows.
TEST(OpDefaults, PrecisionRuleSaysWhatIsAllowed) {
  const std::string fp32 = precision_rule(Precision::fp32, Tolerance{1e-4, 1e-4});
  EXPECT_NE(fp32.find("IEEE fp32"), std::string::npos) << fp32;
  EXPECT_NE(fp32.find("No TF32"), std::string::npos) << fp32;
  EXPECT_NE(fp32.find("3xTF32 with each K slice summed in fp32 registers"), std::string::npos)
      << fp32 << "\nthe guide recommends it for fp32 GEMMs";
  EXPECT_NE(fp32.find("atol 0.0001, rtol 0.0001"), std::string::npos) << fp32;
  const std::string tf32 = precision_rule(Precision::tf32, Tolerance{0.01, 0.02});
  EXPECT_NE(tf32.find("TF32 tensor-core math is allowed"), std::string::npos) << tf32;
  EXPECT_NE(tf32.find("atol 0.01, rtol 0.02"), std::string::npos) << tf32;
  EXPECT_NE(precision_rule(Precision::bf16, Tolerance{}).find("bf16 tensor-core math is allowed"), std::string::npos);
}

// Hostile op.json files (issue 16): bad input named by its key, exit 2, never an internal error.
TEST_F(OpTest, NumbersOutOfRangeNameTheKey) {
  std::string msg = error_of(native(R"({"shape": [4], "dtype": "f32"})", R"("budget": {"minutes": 1e400}, )"));
  EXPECT_TRUE(contains(msg, prefix() + "key budget.minutes: number out of range")) << msg;
}

TEST_F(OpTest, DuplicateKeysAreRefused) {
  std::string msg = error_of(native(R"({"shape": [4], "dtype": "f32", "dtype": "f16"})"));
  EXPECT_TRUE(contains(msg, "key inputs.a.dtype: duplicate key")) << msg;
}

TEST_F(OpTest, DeepNestingIsRefusedNamingTheKey) {
  std::string deep = std::string(10000, '[') + std::string(10000, ']');
  std::string msg = error_of(native(R"({"shape": [4], "dtype": "f32"})", R"("description": )" + deep + ", "));
  EXPECT_TRUE(contains(msg, "key description")) << msg;
  EXPECT_TRUE(contains(msg, "nested deeper than")) << msg;
}

TEST_F(OpTest, NonFiniteInitParametersAreRefused) {
  for (const char* init :
       {"uniform(nan,1)", "uniform(-inf,inf)", "normal(0,inf)", "normal(nan,1)", "randint(0,1e400)"}) {
    std::string msg = error_of(native(std::string(R"({"shape": [4], "dtype": "f32", "init": ")") + init + "\"}"));
    EXPECT_TRUE(contains(msg, "key inputs.a.init")) << init << ": " << msg;
  }
}

TEST_F(OpTest, AFifoOrADeviceIsRefusedNotReadForever) {
  fs::path fifo = dir_.path() / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    load_op(fifo);
    ADD_FAILURE();
  } catch (const InputError& e) {
    EXPECT_TRUE(contains(e.what(), "fifo.json")) << e.what();
  }
}

// op.json files are shared and downloaded: a large one is refused before its DOM is built.
TEST_F(OpTest, AnOpJsonIsBoundedInSizeAndValues) {
  std::string big =
      native(R"({"shape": [4], "dtype": "f32"})", R"("pad": ")" + std::string(size_t{2} << 20, ' ') + "\", ");
  auto e = error_of(big);
  EXPECT_NE(e.find(prefix()), std::string::npos) << e.substr(0, 300);
  EXPECT_NE(e.find("1048576 bytes"), std::string::npos) << e.substr(0, 300);
  EXPECT_THROW(parse_op_json(big, dir_.path() / "op.json"), InputError);
  std::string items;
  for (int i = 0; i < 70'000; ++i) items += "0,";
  e = error_of(native(R"({"shape": [4], "dtype": "f32"})", R"("pad": [)" + items + "0], "));
  EXPECT_NE(e.find("more than 65536 values"), std::string::npos) << e.substr(0, 300);
}

}  // namespace
}  // namespace kagent
