// Who else holds a GPU's memory: the process-tree part runs everywhere; NVML's answer needs a GPU
// (without one, memory_contention says why it cannot tell, and the evaluator then does not judge).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "kagent/gpu/memory_users.hpp"

namespace kagent {
namespace {

TEST(MemoryUsers, AProcessDescendsFromItselfAndItsParentsNotFromItsChildren) {
  EXPECT_TRUE(descends_from(getpid(), {getpid()}));
  EXPECT_TRUE(descends_from(getpid(), {getppid()}));
  EXPECT_FALSE(descends_from(getppid(), {getpid()}));
  pid_t child = fork();
  if (child == 0) {
    pause();
    _exit(0);
  }
  ASSERT_GT(child, 0);
  EXPECT_TRUE(descends_from(child, {12345678, getpid()}));
  EXPECT_FALSE(descends_from(getpid(), {child}));
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
}

TEST(MemoryUsers, AnUnknownGpuIsSaidNotGuessed) {
  MemoryContention c = memory_contention("GPU-00000000-0000-0000-0000-000000000000", {getpid()});
  EXPECT_FALSE(c.note.empty());  // NVML absent (CI) or the GPU unknown: either way, said
  EXPECT_EQ(c.others_bytes, 0u);
}

}  // namespace
}  // namespace kagent
