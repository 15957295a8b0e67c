#include <gtest/gtest.h>

#include <string>

#include "kagent/common/error.hpp"
#include "kagent/eval/candidate_kinds.hpp"
#include "kagent/spec/plan_check.hpp"

namespace kagent {
namespace {

// The docs/candidate.md softmax example: two kernels, a scratch buffer, plan on line 2.
const std::string kSource = R"(// softmax
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
)";

Candidate example() {
  return parse_candidate(kSource, "cand.cu");
}

// A candidate with one launch of kernel k, the given grid and args, and optional scratch.
Candidate one_launch(const std::string& grid, const std::string& args, const std::string& scratch = "") {
  std::string plan = "/*kagent\n{" + (scratch.empty() ? "" : "\"scratch\": " + scratch + ", ") +
                     "\"launch\": [{\"kernel\": \"k\", \"grid\": " + grid + ", \"block\": [32], \"args\": " + args +
                     "}]}\n*/\n";
  return parse_candidate(plan, "cand.cu");
}

const std::vector<KernelSignature> kKernels = {
    {"row_max", {8, 8, 4}},
    {"row_softmax", {8, 8, 8, 4}},
};

const std::vector<std::string> kOpTensors = {"x", "out"};

std::string kernels_error(const Candidate& c, const std::vector<KernelSignature>& kernels) {
  try {
    check_plan_kernels(c, kernels);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

std::string tensors_error(const Candidate& c, const std::vector<std::string>& tensors) {
  try {
    check_plan_tensors(c, tensors);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(PlanCheck, ExamplePassesBothChecks) {
  Candidate c = example();
  EXPECT_NO_THROW(check_plan_kernels(c, kKernels));
  EXPECT_NO_THROW(check_plan_tensors(c, kOpTensors));
}

TEST(PlanCheck, UnknownKernelListsDefinedKernels) {
  std::string msg = kernels_error(example(), {{"row_max", {8, 8, 4}}, {"softmax_v2", {8, 8, 8, 4}}});
  EXPECT_TRUE(contains(msg, "cand.cu:2: plan key launch[1].kernel: kernel 'row_softmax' is not defined")) << msg;
  EXPECT_TRUE(contains(msg, "row_max, softmax_v2")) << msg;
}

TEST(PlanCheck, UnknownKernelWhenSourceDefinesNone) {
  std::string msg = kernels_error(example(), {});
  EXPECT_TRUE(contains(msg, "launch[0].kernel")) << msg;
  EXPECT_TRUE(contains(msg, "none")) << msg;
}

TEST(PlanCheck, WrongArgumentCount) {
  std::string msg = kernels_error(example(), {{"row_max", {8, 8, 4}}, {"row_softmax", {8, 8, 8, 4, 4}}});
  EXPECT_TRUE(contains(msg,
                       "cand.cu:2: plan key launch[1].args: kernel 'row_softmax' takes 5 parameters, the plan "
                       "passes 4 arguments"))
      << msg;
}

TEST(PlanCheck, WrongArgumentSize) {
  // row_max's third parameter declared as a 64-bit integer, but the plan passes i32.
  std::string msg = kernels_error(example(), {{"row_max", {8, 8, 8}}, {"row_softmax", {8, 8, 8, 4}}});
  EXPECT_TRUE(contains(msg, "cand.cu:2: plan key launch[0].args[2]")) << msg;
  EXPECT_TRUE(contains(msg, "'i32:x.shape[1]'")) << msg;
  EXPECT_TRUE(contains(msg, "kernel 'row_max'")) << msg;
  EXPECT_TRUE(contains(msg, "of 4 bytes, but parameter 2 is 8 bytes")) << msg;
}

TEST(PlanCheck, TensorPassedWhereScalarExpected) {
  std::string msg = kernels_error(example(), {{"row_max", {8, 4, 4}}, {"row_softmax", {8, 8, 8, 4}}});
  EXPECT_TRUE(contains(msg, "launch[0].args[1]")) << msg;
  EXPECT_TRUE(contains(msg, "'partial'")) << msg;
  EXPECT_TRUE(contains(msg, "tensor pointer of 8 bytes, but parameter 1 is 4 bytes")) << msg;
}

TEST(PlanCheck, UnknownTensorArgument) {
  std::string msg = tensors_error(one_launch("[1]", R"(["x", "y"])"), kOpTensors);
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key launch[0].args[1]: unknown tensor 'y'")) << msg;
  EXPECT_TRUE(contains(msg, "known tensors: x, out")) << msg;
}

TEST(PlanCheck, UnknownTensorInGridExpression) {
  std::string msg = tensors_error(one_launch(R"J([1, "cdiv(numel(z), 256)"])J", R"(["x"])"), kOpTensors);
  EXPECT_TRUE(contains(msg, "plan key launch[0].grid[1]: unknown tensor 'z' in 'cdiv(numel(z), 256)'")) << msg;
}

TEST(PlanCheck, UnknownTensorInScalarArgument) {
  std::string msg = tensors_error(one_launch("[1]", R"J(["x", "i64:numel(w)"])J"), kOpTensors);
  EXPECT_TRUE(contains(msg, "plan key launch[0].args[1]: unknown tensor 'w'")) << msg;
}

TEST(PlanCheck, ScalarArgumentsOfTheOperatorAreKnownByName) {
  Candidate c = one_launch("[1]", R"J(["x", "f32:s * 2"])J");
  EXPECT_NO_THROW(check_plan_tensors(c, kOpTensors, {"s"}));
  std::string msg = tensors_error(c, kOpTensors);
  EXPECT_TRUE(contains(msg, "plan key launch[0].args[1]: unknown scalar 's' in 's * 2'")) << msg;
  EXPECT_TRUE(contains(msg, "scalar arguments and the device's figures: num_sms")) << msg;
}

TEST(PlanCheck, TheDeviceSmCountIsKnownAsNumSms) {
  // A persistent kernel: one block per SM, a scratch slot per block, the count passed in.
  Candidate c = one_launch(R"(["num_sms * 2"])", R"J(["x", "i32:num_sms"])J",
                           R"({"partial": {"dtype": "f32", "shape": ["num_sms"]}})");
  EXPECT_NO_THROW(check_plan_tensors(c, kOpTensors));
  EXPECT_NO_THROW(check_plan_tensors(c, kOpTensors, {"num_sms"}));  // an operator scalar of that name
}

TEST(PlanCheck, UnknownTensorInScratchShape) {
  std::string msg =
      tensors_error(one_launch("[1]", R"(["x"])", R"({"p": {"dtype": "f32", "shape": ["q.shape[0]"]}})"), kOpTensors);
  EXPECT_TRUE(contains(msg, "plan key scratch.p.shape[0]: unknown tensor 'q'")) << msg;
}

TEST(PlanCheck, ScratchBufferUsableAsArgumentAndInExpressions) {
  Candidate c = one_launch(R"(["p.shape[0]"])", R"J(["x", "p", "i32:numel(p)"])J",
                           R"({"p": {"dtype": "f32", "shape": ["x.shape[0]", 4]}})");
  EXPECT_NO_THROW(check_plan_tensors(c, kOpTensors));
}

TEST(PlanCheck, ScratchShadowingAnOperatorTensor) {
  std::string msg =
      tensors_error(one_launch("[1]", R"(["x"])", R"({"out": {"dtype": "f32", "shape": [4]}})"), kOpTensors);
  EXPECT_TRUE(contains(msg, "cand.cu:1: plan key scratch.out: scratch buffer 'out' has the name of an operator tensor"))
      << msg;
  EXPECT_TRUE(contains(msg, "x, out")) << msg;
}

}  // namespace
}  // namespace kagent
