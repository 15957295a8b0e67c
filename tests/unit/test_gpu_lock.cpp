// GpuLock and FileLock: measurements on one GPU queue up across threads and processes (flock on a file per
// GPU UUID), the waiter is told, and a lock file that cannot be made does not stop the work.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "kagent/common/error.hpp"
#include "kagent/eval/gpu_lock.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace std::chrono_literals;

TEST(GpuLock, PathIsNamedAfterTheGpuAndSanitized) {
  EXPECT_EQ(gpu_lock_path("/c", "GPU-1a2b-3c", 1), std::filesystem::path("/c/locks/gpu-GPU-1a2b-3c.lock"));
  EXPECT_EQ(gpu_lock_path("/c", "../../etc/x", 0).filename(), "gpu-etcx.lock");
  EXPECT_EQ(gpu_lock_path("/c", "", 3).filename(), "gpu-index3.lock");
}

TEST(GpuLock, SecondHolderWaitsUntilTheFirstReleases) {
  test::TempDir dir;
  const auto path = gpu_lock_path(dir.path(), "GPU-x", 0);
  auto first = std::make_unique<GpuLock>(path);
  ASSERT_TRUE(first->held());
  std::atomic<bool> told{false}, inside{false};
  std::thread second([&] {
    GpuLock l(path, [&] { told = true; });
    EXPECT_TRUE(l.held());
    inside = true;
  });
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (!told && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(1ms);
  ASSERT_TRUE(told) << "the second holder was not told it waits";
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(inside) << "the second holder got in while the first held the lock";
  first.reset();
  second.join();
  EXPECT_TRUE(inside);
  // Free again: a third holder gets it at once, without being told to wait.
  bool waited = false;
  GpuLock third(path, [&] { waited = true; });
  EXPECT_TRUE(third.held());
  EXPECT_FALSE(waited);
}

TEST(GpuLock, UnwritableCacheGoesOnUnlocked) {
  GpuLock l("/proc/kagent-no-such/locks/gpu-x.lock");
  EXPECT_FALSE(l.held());
}

// The lock itself (common/file_lock.hpp), where a shared file's writers need it or nothing: a file
// that cannot be locked is an error naming it, not a silent write without the lock.
TEST(FileLock, UnopenableLockIsAnEnvironmentErrorNamingTheFile) {
  try {
    FileLock l("/proc/kagent-no-such/x.lock");
    FAIL() << "no error";
  } catch (const EnvError& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/kagent-no-such/x.lock"), std::string::npos) << e.what();
  }
}

TEST(FileLock, CreatesItsFolderAndIsFreeAgainOnceReleased) {
  test::TempDir dir;
  const auto path = dir.path() / "a" / "b.lock";
  { FileLock l(path); }
  EXPECT_TRUE(std::filesystem::exists(path));
  bool waited = false;
  FileLock again(path, [&] { waited = true; });
  EXPECT_FALSE(waited);
}
