// Library steps in a launch plan (gemm through cuBLASLt, conv through cuDNN): parsed and checked
// against the operator's shapes before any GPU, every bad step an InputError naming its plan key.
#include <gtest/gtest.h>

#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/spec/candidate.hpp"
#include "kagent/spec/op.hpp"
#include "kagent/spec/plan_check.hpp"
#include "kagent/spec/plan_limits.hpp"
#include "test_util.hpp"

using namespace kagent;

namespace {

TensorSpec tensor(const std::string& name, std::vector<int64_t> shape, DType t = DType::f32) {
  return TensorSpec{name, std::move(shape), t, {}};
}

// nn.Linear(512, 256) on a batch of 128, then a Conv2d(3, 16, 3, stride 2, padding 1) of a 8x3x32x32 image.
Op model_op(Precision p = Precision::fp32) {
  Op op;
  op.name = "m";
  op.ref_kind = RefKind::cuda;
  op.precision = p;
  op.inputs = {tensor("x", {128, 512}),
               tensor("weight", {256, 512}),
               tensor("bias", {256}),
               tensor("img", {8, 3, 32, 32}),
               tensor("cw", {16, 3, 3, 3}),
               tensor("cb", {16}),
               tensor("h", {4, 64, 32}, DType::f16),
               tensor("hw", {4, 32, 16}, DType::f16)};
  op.outputs = {tensor("out", {128, 256}), tensor("y", {8, 16, 16, 16}), tensor("ho", {4, 64, 16}, DType::f16)};
  return op;
}

Candidate plan(const std::string& steps, const std::string& extra = "") {
  return parse_candidate("/*kagent\n{" + extra + "\"launch\": [" + steps + "]}\n*/\n", "cand.cu");
}

const char* kLinear =
    R"({"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "bias": "bias", "m": "x.shape[0]",
        "n": "weight.shape[0]", "k": "x.shape[1]", "activation": "relu"}})";
const char* kConv = R"({"conv": {"x": "img", "w": "cw", "y": "y", "bias": "cb", "stride": 2, "padding": [1, 1]}})";

// The error of checking `c` against the op, or "" (and a test failure) when there is none.
std::string error_of(const Candidate& c, const Op& op = model_op()) {
  try {
    check_plan_limits(c, op, launch_limits(90));
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string parse_error(const std::string& steps, const std::string& extra = "") {
  try {
    plan(steps, extra);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for " << steps;
  return "";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST(LibraryStep, LinearAndConvParseAndCheck) {
  Candidate c = plan(std::string(kLinear) + ", " + kConv, R"("graph": true, )");
  ASSERT_EQ(c.plan.launches.size(), 2u);
  EXPECT_TRUE(c.plan.graph);
  const Launch& g = c.plan.launches[0];
  EXPECT_EQ(g.kind, StepKind::gemm);
  EXPECT_TRUE(g.gemm.trans_b);
  EXPECT_FALSE(g.gemm.trans_a);
  EXPECT_EQ(g.gemm.activation, Activation::relu);
  EXPECT_EQ(g.gemm.bias, "bias");
  EXPECT_EQ(c.plan.launches[1].kind, StepKind::conv);
  EXPECT_NO_THROW(check_plan_limits(c, model_op(), launch_limits(90)));
  // Library steps name no kernel: a candidate without kernels passes the kernel check.
  EXPECT_NO_THROW(check_plan_kernels(c, {}));
}

TEST(LibraryStep, GemmShapesResolveWithPackedDefaults) {
  Candidate c = plan(kLinear);
  const Op op = model_op();
  std::map<std::string, StepTensor> t;
  for (const auto& s : op.inputs) t[s.name] = {s.shape, s.dtype, true};
  for (const auto& s : op.outputs) t[s.name] = {s.shape, s.dtype, false};
  StepTensorLookup look = [&](std::string_view n) -> const StepTensor* {
    auto it = t.find(std::string(n));
    return it == t.end() ? nullptr : &it->second;
  };
  auto shapes = [&](std::string_view n) -> const std::vector<int64_t>* {
    auto it = t.find(std::string(n));
    return it == t.end() ? nullptr : &it->second.shape;
  };
  StepIntEval eval = [&](const Expr& e, const std::string&) { return e.eval_int(shapes); };
  GemmShape s = resolve_gemm(c.plan.launches[0].gemm, "launch[0]", look, eval);
  EXPECT_EQ(s.m, 128);
  EXPECT_EQ(s.n, 256);
  EXPECT_EQ(s.k, 512);
  EXPECT_EQ(s.lda, 512);  // x stored 128 x 512
  EXPECT_EQ(s.ldb, 512);  // weight stored 256 x 512 (trans_b)
  EXPECT_EQ(s.ldd, 256);
  EXPECT_EQ(s.batch, 1);

  // A batched half-precision product: h [4, 64, 32] @ hw [4, 32, 16] into ho [4, 64, 16].
  Candidate b = plan(R"({"gemm": {"a": "h", "b": "hw", "d": "ho", "m": 64, "n": 16, "k": 32, "batch": 4}})");
  GemmShape bs = resolve_gemm(b.plan.launches[0].gemm, "launch[0]", look, eval);
  EXPECT_EQ(bs.stride_a, 64 * 32);
  EXPECT_EQ(bs.stride_b, 32 * 16);
  EXPECT_EQ(bs.stride_d, 64 * 16);
  EXPECT_EQ(bs.dtype, DType::f16);

  ConvShape cs = resolve_conv(plan(kConv).plan.launches[0].conv, "launch[0]", look, eval);
  EXPECT_EQ(cs.spatial, 2);
  EXPECT_EQ(cs.c_out, 16);
  EXPECT_EQ(cs.out, (std::vector<int64_t>{16, 16}));
  EXPECT_EQ(cs.stride, (std::vector<int64_t>{2, 2}));
}

TEST(LibraryStep, ParseErrorsNameTheKey) {
  EXPECT_TRUE(has(parse_error(R"({"gemm": {"a": "x", "b": "weight", "d": "out", "m": 1, "n": 1}})"),
                  "plan key launch[0].gemm.k: missing"));
  EXPECT_TRUE(has(parse_error(R"({"gemm": {"a": "x", "b": "w", "d": "out", "m": 1, "n": 1, "k": 1, "transb": true}})"),
                  "launch[0].gemm.transb: unknown key"));
  EXPECT_TRUE(has(parse_error(R"({"gemm": {"a": "x", "b": "w", "d": "o", "m": 0, "n": 1, "k": 1}})"),
                  "launch[0].gemm.m: expected an integer >= 1"));
  EXPECT_TRUE(has(parse_error(R"({"gemm": {"a": "x", "b": "w", "d": "o", "m": 1, "n": 1, "k": 1, "beta": 1}})"),
                  "launch[0].gemm.beta: beta = 1 needs \"c\""));
  EXPECT_TRUE(
      has(parse_error(R"({"gemm": {"a": "x", "b": "w", "d": "o", "m": 1, "n": 1, "k": 1, "activation": "gelu"}})"),
          "expected one of none, relu, gelu_tanh"));
  EXPECT_TRUE(has(parse_error(R"({"conv": {"x": "img", "w": "cw", "y": "y", "activation": "gelu_tanh"}})"),
                  "launch[0].conv.activation: expected one of none, relu"));
  EXPECT_TRUE(has(parse_error(R"({"conv": {"x": "img", "w": "cw", "y": "y", "output_padding": 1}})"),
                  "only a transposed convolution"));
  EXPECT_TRUE(has(parse_error(R"({"conv": {"x": "img", "w": "cw", "y": "y"}, "gemm": {}})"),
                  "a library step is an object with one key"));
  EXPECT_TRUE(
      has(parse_error(R"({"conv": {"x": "img", "w": "cw", "y": "y", "compute": "fp16"}})"), "launch[0].conv.compute"));
  EXPECT_TRUE(has(parse_error(kConv, R"("graph": 1, )"), "plan key graph: expected true or false"));
}

TEST(LibraryStep, ShapeErrorsNameTheStepAndTheTensor) {
  // k larger than x's columns: x is too small for the product.
  std::string e = error_of(plan(R"({"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "m": 128,
      "n": 256, "k": 1024}})"));
  EXPECT_TRUE(has(e, "cand.cu:1: plan key launch[0].gemm.lda: lda = 512 is less than the 1024 columns") ||
              has(e, "launch[0].gemm.a"))
      << e;
  // B read as k x n = 512 x 512: more than the weight's 256 x 512 elements.
  e = error_of(plan(R"({"gemm": {"a": "x", "b": "weight", "d": "out", "m": 128, "n": 512, "k": 512}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm.b: 'weight'")) << e;
  EXPECT_TRUE(has(e, "is too small")) << e;
  // The output is too small for m x n.
  e = error_of(plan(R"({"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "m": 128, "n": 512,
      "k": 512}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm")) << e;
  // A bias of the wrong length.
  e = error_of(plan(R"({"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "bias": "cb", "m": 128,
      "n": 256, "k": 512}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm.bias: 'cb' has 16 elements [16]; the bias is one value per column of D (n = 256)"))
      << e;
  // Mixed dtypes.
  e = error_of(plan(R"({"gemm": {"a": "x", "b": "hw", "d": "out", "m": 128, "n": 16, "k": 32}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm.b: 'hw' is f16 but 'x' is f32")) << e;
  // A convolution whose output tensor has the wrong shape says what the shape should be.
  e = error_of(plan(R"({"conv": {"x": "img", "w": "cw", "y": "y"}})"));
  EXPECT_TRUE(has(e,
                  "launch[0].conv.y: 'y' has shape [8, 16, 16, 16]; this convolution of x [8, 3, 32, 32] with w "
                  "[16, 3, 3, 3] gives [8, 16, 30, 30]"))
      << e;
  // Groups that do not divide the channels, and a weight of the wrong channel count.
  e = error_of(plan(R"({"conv": {"x": "img", "w": "cw", "y": "y", "groups": 2, "stride": 2, "padding": 1}})"));
  EXPECT_TRUE(has(e, "launch[0].conv.groups: groups = 2 does not divide the 3 input channels")) << e;
  e = error_of(plan(R"({"conv": {"x": "img", "w": "weight", "y": "y"}})"));
  EXPECT_TRUE(has(e, "launch[0].conv.w: 'weight' has shape [256, 512]: rank 4 like x")) << e;
  e = error_of(plan(R"({"conv": {"x": "img", "w": "cw", "y": "y", "stride": [2, 2, 2]}})"));
  EXPECT_TRUE(has(e, "launch[0].conv.stride: 3 values for 2 spatial dimensions")) << e;
  // Unknown names are caught with the list of known tensors.
  e = error_of(plan(R"({"gemm": {"a": "q", "b": "weight", "d": "out", "m": 1, "n": 1, "k": 1}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm.a: unknown tensor 'q' (known tensors: x, weight")) << e;
}

TEST(LibraryStep, AStepMayNotWriteAnInputOrItsOwnOperands) {
  std::string e = error_of(plan(R"({"gemm": {"a": "out", "b": "weight", "trans_b": true, "d": "x", "m": 128,
      "n": 512, "k": 256}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm.d: 'x' is an operator input: a library step writes only outputs and scratch"))
      << e;
  e = error_of(plan(R"({"conv": {"x": "img", "w": "cw", "y": "img", "stride": 2, "padding": 1}})"));
  EXPECT_TRUE(has(e, "launch[0].conv.y: 'img' is an operator input")) << e;
  // Into scratch is fine; a product that reads the matrix it writes is not.
  Candidate ok = plan(std::string(R"({"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "t", "m": 128,
      "n": 256, "k": 512}})"),
                      R"("scratch": {"t": {"dtype": "f32", "shape": [128, 256]}}, )");
  EXPECT_NO_THROW(check_plan_limits(ok, model_op(), launch_limits(90)));
  e = error_of(plan(R"({"gemm": {"a": "out", "b": "weight", "d": "out", "m": 128, "n": 256, "k": 256}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm.d: 'out' is also read as A")) << e;
}

TEST(LibraryStep, Tf32IsRefusedUnderFp32AndAllowedUnderTf32) {
  const std::string step = R"({"gemm": {"a": "x", "b": "weight", "trans_b": true, "d": "out", "m": 128, "n": 256,
      "k": 512, "compute": "tf32"}})";
  std::string e = error_of(plan(step));
  EXPECT_TRUE(has(e, "launch[0].gemm.compute: \"compute\": \"tf32\" under the fp32 precision")) << e;
  EXPECT_NO_THROW(check_plan_limits(plan(step), model_op(Precision::tf32), launch_limits(90)));
  EXPECT_THROW(check_plan_precision(plan(step), Precision::fp32), InputError);
  // TF32 is a property of f32 operands only.
  e = error_of(plan(R"({"gemm": {"a": "h", "b": "hw", "d": "ho", "m": 64, "n": 16, "k": 32, "batch": 4,
      "compute": "tf32"}})"),
               model_op(Precision::tf32));
  EXPECT_TRUE(has(e, "launch[0].gemm.compute: \"tf32\" applies to f32 tensors")) << e;
}

TEST(LibraryStep, BatchStridesAndTransposedConvolutions) {
  // A weight shared by every batch index (stride_b 0), and outputs that would overlap.
  Candidate shared = plan(R"({"gemm": {"a": "h", "b": "hw", "stride_b": 0, "d": "ho", "m": 64, "n": 16, "k": 32,
      "batch": 4}})");
  EXPECT_NO_THROW(check_plan_limits(shared, model_op(), launch_limits(90)));
  std::string e = error_of(plan(R"({"gemm": {"a": "h", "b": "hw", "d": "ho", "stride_d": 16, "m": 64, "n": 16,
      "k": 32, "batch": 4}})"));
  EXPECT_TRUE(has(e, "launch[0].gemm.stride_d: stride_d = 16: the 4 output matrices of 64 x 16 (ldd 16) overlap")) << e;
  // ConvTranspose2d(16, 3, 3, stride 2, padding 1, output_padding 1): y [8, 16, 16, 16] -> [8, 3, 32, 32].
  Op op = model_op();
  op.inputs.push_back(tensor("ty", {8, 16, 16, 16}));
  op.inputs.push_back(tensor("tw", {16, 3, 3, 3}));
  op.outputs.push_back(tensor("timg", {8, 3, 32, 32}));
  EXPECT_NO_THROW(check_plan_limits(plan(R"({"conv": {"x": "ty", "w": "tw", "y": "timg", "transposed": true,
      "stride": 2, "padding": 1, "output_padding": 1}})"),
                                    op, launch_limits(90)));
  e = error_of(plan(R"({"conv": {"x": "ty", "w": "tw", "y": "timg", "transposed": true, "stride": 2, "padding": 1,
      "output_padding": 2}})"),
               op);
  EXPECT_TRUE(has(e, "output_padding 2 must be smaller than the stride (2) or the dilation (1)")) << e;
  // Depthwise: groups = channels, weight [C, 1, k, k].
  op.inputs.push_back(tensor("dw", {16, 1, 3, 3}));
  op.outputs.push_back(tensor("dy", {8, 16, 16, 16}));
  EXPECT_NO_THROW(check_plan_limits(plan(R"({"conv": {"x": "ty", "w": "dw", "y": "dy", "groups": 16,
      "padding": 1}})"),
                                    op, launch_limits(90)));
}

// An RNN cell's [x, h] @ W^T as two products on the column blocks of one weight W [H, I + H]: the
// second starts offset_b = I elements into W and steps ldb = I + H between rows, adding into D.
TEST(LibraryStep, OperandOffsetsAddressABlockOfATensor) {
  Op op = model_op();
  op.inputs.push_back(tensor("xi", {8, 16}));
  op.inputs.push_back(tensor("hi", {8, 32}));
  op.inputs.push_back(tensor("w", {32, 48}));
  op.outputs.push_back(tensor("hn", {8, 32}));
  const std::string first = R"({"gemm": {"a": "xi", "b": "w", "trans_b": true, "ldb": 48, "d": "hn", "m": 8,
      "n": 32, "k": 16}})";
  const std::string second = R"({"gemm": {"a": "hi", "b": "w", "trans_b": true, "ldb": "w.shape[1]",
      "offset_b": "xi.shape[1]", "c": "hn", "beta": 1, "d": "hn", "m": 8, "n": 32, "k": 32}})";
  Candidate c = plan(first + ", " + second);
  EXPECT_NO_THROW(check_plan_limits(c, op, launch_limits(90)));

  std::map<std::string, StepTensor> t;
  for (const auto& s : op.inputs) t[s.name] = {s.shape, s.dtype, true};
  for (const auto& s : op.outputs) t[s.name] = {s.shape, s.dtype, false};
  StepTensorLookup look = [&](std::string_view n) -> const StepTensor* {
    auto it = t.find(std::string(n));
    return it == t.end() ? nullptr : &it->second;
  };
  auto shapes = [&](std::string_view n) -> const std::vector<int64_t>* {
    auto it = t.find(std::string(n));
    return it == t.end() ? nullptr : &it->second.shape;
  };
  StepIntEval eval = [&](const Expr& e, const std::string&) { return e.eval_int(shapes); };
  GemmShape s = resolve_gemm(c.plan.launches[1].gemm, "launch[1]", look, eval);
  EXPECT_EQ(s.offset_b, 16);
  EXPECT_EQ(s.ldb, 48);
  EXPECT_EQ(s.offset_a, 0);
  EXPECT_EQ(s.offset_c, 0);
  EXPECT_EQ(s.offset_d, 0);

  // One element too far: W's block of 32 rows x 32 columns from offset 17 with ld 48 ends past W.
  std::string e = error_of(plan(R"({"gemm": {"a": "hi", "b": "w", "trans_b": true, "ldb": 48, "offset_b": 17,
      "d": "hn", "m": 8, "n": 32, "k": 32}})"),
                           op);
  EXPECT_TRUE(has(e, "launch[0].gemm.b: 'w' (f32 [32, 48], 1536 elements) is too small")) << e;
  EXPECT_TRUE(has(e, "from offset_b = 17 reach element 1537")) << e;
  // Writing a column block of D: offset_d with ldd.
  EXPECT_NO_THROW(check_plan_limits(plan(R"({"gemm": {"a": "xi", "b": "w", "trans_b": true, "ldb": 48,
      "d": "hn", "ldd": 32, "offset_d": 16, "m": 8, "n": 16, "k": 16}})"),
                                    op, launch_limits(90)));
  // Negative offsets, offset_c without c, and C = D at different offsets are refused.
  e = error_of(plan(R"({"gemm": {"a": "xi", "b": "w", "trans_b": true, "ldb": 48, "offset_b": "0 - 1", "d": "hn",
      "m": 8, "n": 32, "k": 16}})"),
               op);
  EXPECT_TRUE(has(e, "launch[0].gemm.offset_b: offset_b = -1 is negative")) << e;
  EXPECT_TRUE(has(parse_error(R"({"gemm": {"a": "x", "b": "w", "d": "o", "m": 1, "n": 1, "k": 1, "offset_c": 2}})"),
                  "launch[0].gemm.offset_c: given without \"c\""));
  e = error_of(plan(R"({"gemm": {"a": "xi", "b": "w", "trans_b": true, "ldb": 48, "c": "hn", "beta": 1,
      "offset_c": 1, "d": "hn", "m": 4, "n": 16, "k": 16}})"),
               op);
  EXPECT_TRUE(
      has(e, "C and D are the same tensor: they need the same ldc/ldd, stride_c/stride_d and offset_c/offset_d"))
      << e;
  EXPECT_TRUE(has(parse_error(R"({"gemm": {"a": "x", "b": "w", "d": "o", "m": 1, "n": 1, "k": 1, "offset_a": -1}})"),
                  "launch[0].gemm.offset_a"));
}

// The example of docs/candidate.md: KernelBench level3/33_VanillaRNN with the tensors the reference
// server reports for it (forward's x and initial_hidden, the state_dict's i2h and h2o layers).
TEST(LibraryStep, TheVanillaRnnExampleChecksAgainstItsSignature) {
  Op op;
  op.name = "33_VanillaRNN";
  op.ref_kind = RefKind::python;
  op.inputs = {
      tensor("x", {256, 16384}),   tensor("initial_hidden", {256, 16384}), tensor("i2h_weight", {16384, 32768}),
      tensor("i2h_bias", {16384}), tensor("h2o_weight", {8192, 16384}),    tensor("h2o_bias", {8192})};
  op.outputs = {tensor("out", {256, 8192})};
  Candidate c = load_candidate(test::examples_dir() / "kernelbench_library/level3/33_VanillaRNN.cu");
  EXPECT_NO_THROW(check_plan_limits(c, op, launch_limits(90)));
  ASSERT_EQ(c.plan.launches.size(), 4u);
  ASSERT_TRUE(c.plan.launches[1].gemm.offset_b.has_value());
  EXPECT_EQ(c.plan.launches[1].gemm.offset_b->text(), "x.shape[1]");
}

// The fuzz target's plan seeds (tests/fuzz/seeds/plan) are plans its fixed operator accepts, so
// the fuzzer starts from inputs that reach the library steps' shape checks.
TEST(LibraryStep, FuzzPlanSeedsPassTheFuzzTargetsOperator) {
  Op op;
  op.name = "fuzz";
  op.ref_kind = RefKind::cuda;
  op.inputs = {tensor("x", {64, 1024})};
  op.outputs = {tensor("out", {64, 1024})};
  op.scalars = {ScalarArg::from_json("s", 2), ScalarArg::from_json("f", 0.5)};
  int seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(test::source_dir() / "tests/fuzz/seeds/plan")) {
    if (e.path().extension() != ".cu") continue;
    SCOPED_TRACE(e.path().string());
    EXPECT_NO_THROW(check_plan_limits(load_candidate(e.path()), op, launch_limits(90)));
    ++seeds;
  }
  EXPECT_GE(seeds, 3);
}
