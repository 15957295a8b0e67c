#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include "kagent/compile/cache.hpp"
#include "test_util.hpp"

using namespace kagent;

TEST(CompileCache, RoundTrip) {
  test::TempDir dir;
  CompileCache cache(dir.path());
  EXPECT_FALSE(cache.get("00aa").has_value());
  CacheEntry e{{{"ok", true}, {"log", "warn"}}, std::string("\x7f" "ELF\0binary", 10)};
  cache.put("00aa", e);
  auto got = cache.get("00aa");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->meta["log"], "warn");
  EXPECT_EQ(got->cubin, e.cubin);
}

TEST(CompileCache, CorruptEntryIsAMiss) {
  test::TempDir dir;
  CompileCache cache(dir.path());
  cache.put("bbcc", {{{"ok", true}}, "cubin"});
  // Find the entry file and truncate it, as a crash of a non-atomic writer would.
  for (auto& f : std::filesystem::recursive_directory_iterator(dir.path()))
    if (f.is_regular_file()) std::ofstream(f.path(), std::ios::trunc) << "KAGENTC1\xff\xff";
  EXPECT_FALSE(cache.get("bbcc").has_value());
}

TEST(CompileCache, UnwritableDirDoesNotThrow) {
  CompileCache cache("/proc/kagent-no-such-dir");
  EXPECT_NO_THROW(cache.put("ccdd", {{{"ok", true}}, "x"}));
  EXPECT_FALSE(cache.get("ccdd").has_value());
}

TEST(CompileCache, ConcurrentWritersNeverExposePartialEntries) {
  // Several processes write large entries under one key while the parent reads: every read is a
  // miss or a complete entry from one writer, never a mix.
  test::TempDir dir;
  CompileCache cache(dir.path());
  constexpr int kWriters = 4;
  std::vector<pid_t> pids;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      std::string body(1 << 20, static_cast<char>('a' + w));
      for (int i = 0; i < 20; ++i) cache.put("eeff", {{{"writer", w}}, body});
      _exit(0);
    }
    pids.push_back(pid);
  }
  for (int i = 0; i < 200; ++i) {
    if (auto e = cache.get("eeff")) {
      int w = e->meta["writer"];
      ASSERT_EQ(e->cubin.size(), size_t{1} << 20);
      ASSERT_EQ(e->cubin.find_first_not_of(static_cast<char>('a' + w)), std::string::npos);
    }
  }
  for (pid_t p : pids) {
    int status = 0;
    waitpid(p, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_TRUE(cache.get("eeff").has_value());
  // No temporary files are left behind.
  for (auto& f : std::filesystem::recursive_directory_iterator(dir.path())) {
    if (f.is_regular_file()) {
      EXPECT_EQ(f.path().extension(), ".kc") << f.path();
    }
  }
}
