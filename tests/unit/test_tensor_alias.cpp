#include <gtest/gtest.h>

#include "kagent/protocol/tensor_alias.hpp"

namespace kagent {
namespace {

IpcTensorRef ref(const std::string& name, const std::string& handle, uint64_t offset, uint64_t bytes) {
  return {name, handle, offset, bytes};
}

TEST(TensorAlias, OverlapNeedsTheSameAllocationAndIntersectingRanges) {
  EXPECT_TRUE(tensors_overlap(ref("a", "h1", 0, 100), ref("b", "h1", 50, 100)));
  EXPECT_TRUE(tensors_overlap(ref("a", "h1", 0, 100), ref("b", "h1", 0, 100)));
  EXPECT_FALSE(tensors_overlap(ref("a", "h1", 0, 100), ref("b", "h1", 100, 100)));  // adjacent blocks
  EXPECT_FALSE(tensors_overlap(ref("a", "h1", 0, 100), ref("b", "h2", 0, 100)));
  EXPECT_FALSE(tensors_overlap(ref("a", "h1", 0, 0), ref("b", "h1", 0, 100)));
}

TEST(TensorAlias, AnOutputInItsInputsMemoryIsNamed) {
  // The solution returned x itself; the reference's output is a tensor of its own.
  std::vector<IpcTensorRef> sol = {ref("x", "h1", 512, 4096), ref("out", "h1", 512, 4096)};
  std::vector<IpcTensorRef> refs = {ref("x", "r1", 0, 4096), ref("out", "r2", 0, 4096)};
  auto msg = aliased_output(sol, refs, {"out"}, {"x"});
  ASSERT_TRUE(msg.has_value());
  EXPECT_NE(msg->find("output 'out' is stored in its input 'x'"), std::string::npos) << *msg;
}

TEST(TensorAlias, SeparateOutputsPass) {
  // Same caching-allocator segment, different blocks: not aliased.
  std::vector<IpcTensorRef> sol = {ref("x", "h1", 0, 4096), ref("out", "h1", 4096, 4096)};
  std::vector<IpcTensorRef> refs = {ref("x", "r1", 0, 4096), ref("out", "r2", 0, 4096)};
  EXPECT_FALSE(aliased_output(sol, refs, {"out"}, {"x"}).has_value());
}

TEST(TensorAlias, AllowedWhereTheReferenceAliasesToo) {
  std::vector<IpcTensorRef> sol = {ref("x", "h1", 0, 4096), ref("out", "h1", 0, 4096)};
  std::vector<IpcTensorRef> refs = {ref("x", "r1", 0, 4096), ref("out", "r1", 0, 4096)};
  EXPECT_FALSE(aliased_output(sol, refs, {"out"}, {"x"}).has_value());
}

}  // namespace
}  // namespace kagent
