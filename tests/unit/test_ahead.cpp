// The evaluator's helper thread for work started ahead (eval/ahead.hpp): what is started is taken by
// its key, on one thread that outlives the jobs, at most kHeld at once, failures left to the turn.
#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <string>
#include <thread>

#include "kagent/eval/ahead.hpp"

using namespace kagent;

namespace {

struct Counted : AheadWork {
  Counted(std::string k, std::atomic<int>* gone) : key(std::move(k)), gone(gone) {}
  ~Counted() override { ++*gone; }
  std::string key;
  std::thread::id made_on = std::this_thread::get_id();
  std::atomic<int>* gone;
};

std::function<std::unique_ptr<AheadWork>()> make(const std::string& key, std::atomic<int>* gone,
                                                 std::atomic<int>* made = nullptr) {
  return [key, gone, made] {
    if (made) ++*made;
    return std::make_unique<Counted>(key, gone);
  };
}

const Counted& as_counted(const std::unique_ptr<AheadWork>& w) {
  return dynamic_cast<const Counted&>(*w);
}

}  // namespace

TEST(AheadSlot, WorkIsTakenByItsKeyAndMadeOnAHelperThread) {
  std::atomic<int> gone = 0;
  AheadSlot slot;
  slot.start("a", make("a", &gone));
  slot.start("b", make("b", &gone));
  EXPECT_EQ(slot.take("x"), nullptr);  // never started: the others stay
  EXPECT_EQ(slot.held(), (std::vector<std::string>{"a", "b"}));
  auto b = slot.take("b");
  auto a = slot.take("a");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(as_counted(a).key, "a");
  EXPECT_EQ(as_counted(b).key, "b");
  // The children a job starts are tied to the thread that started them: a helper, not the caller.
  EXPECT_NE(as_counted(a).made_on, std::this_thread::get_id());
  EXPECT_NE(as_counted(b).made_on, std::this_thread::get_id());
  EXPECT_EQ(slot.take("a"), nullptr);  // taken once
  EXPECT_TRUE(slot.held().empty());
}

TEST(AheadSlot, AKeyAlreadyHeldIsNotStartedAgain) {
  std::atomic<int> gone = 0, made = 0;
  {
    AheadSlot slot;
    slot.start("a", make("a", &gone, &made));
    slot.start("a", make("a", &gone, &made));
    EXPECT_NE(slot.take("a"), nullptr);
  }
  EXPECT_EQ(made, 1);
  EXPECT_EQ(gone, 1);
}

TEST(AheadSlot, ASourceAnnouncedSeveralTimesGetsAWorkEach) {
  std::atomic<int> gone = 0, made = 0;
  {
    AheadSlot slot;
    slot.start("a", make("a", &gone, &made), 3);
    slot.start("a", make("a", &gone, &made), 3);  // announced again before any was taken: still three
    EXPECT_EQ(slot.held().size(), 3u);
    EXPECT_NE(slot.take("a"), nullptr);
    slot.start("a", make("a", &gone, &made), 3);  // one taken: one more
    EXPECT_NE(slot.take("a"), nullptr);
    EXPECT_NE(slot.take("a"), nullptr);
    EXPECT_NE(slot.take("a"), nullptr);
    EXPECT_EQ(slot.take("a"), nullptr);
  }
  EXPECT_EQ(made, 4);
  EXPECT_EQ(gone, 4);
}

TEST(AheadSlot, TheOldestIsDiscardedBeyondWhatItHolds) {
  std::atomic<int> gone = 0, made = 0;
  std::vector<std::string> keys;
  for (size_t i = 0; i <= AheadSlot::kHeld; ++i) keys.push_back(std::to_string(i));
  {
    AheadSlot slot;
    for (const auto& k : keys) slot.start(k, make(k, &gone, &made));
    EXPECT_EQ(slot.held(), std::vector<std::string>(keys.begin() + 1, keys.end()));
    EXPECT_EQ(slot.take(keys[0]), nullptr);
    EXPECT_NE(slot.take(keys.back()), nullptr);  // destroyed here, by the caller
  }
  // The oldest discarded by a helper thread, the rest with the slot: what was made ends exactly once.
  EXPECT_EQ(gone, made);
}

TEST(AheadSlot, AFailureLeavesTheWorkToTheEvaluation) {
  AheadSlot slot;
  slot.start("bad", []() -> std::unique_ptr<AheadWork> { throw std::runtime_error("python3 did not start"); });
  EXPECT_EQ(slot.take("bad"), nullptr);
  std::atomic<int> gone = 0;
  slot.start("good", make("good", &gone));  // the thread goes on after a failed job
  EXPECT_NE(slot.take("good"), nullptr);
}

// Work not started is dropped; work made and not taken is destroyed with the slot.
TEST(AheadSlot, WorkNotTakenEndsWithTheSlot) {
  std::atomic<int> gone = 0, made = 0;
  {
    AheadSlot slot;
    slot.start("a", make("a", &gone, &made));
    slot.start("b", make("b", &gone, &made));
    while (made == 0) std::this_thread::yield();
  }
  EXPECT_GE(made, 1);
  EXPECT_EQ(gone, made);
}
