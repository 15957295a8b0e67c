// Guard bands' layout arithmetic, the check kernel's words as damage, and the messages
// (kagent/protocol/guard_bands.hpp). The device side is in tests/gpu/test_bounds.cpp.
#include <gtest/gtest.h>

#include <stdexcept>

#include "kagent/protocol/guard_bands.hpp"

namespace kagent {
namespace {

bool has(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

TEST(GuardLayout, DataIsAlignedAndTheBackBandStartsRightAtItsEnd) {
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4}, size_t{13}, size_t{255}, size_t{256}, size_t{257}, size_t{4000},
                       size_t{64} << 20, (size_t{6} << 30) + 2}) {
    SCOPED_TRACE(bytes);
    const GuardLayout l = guard_layout(bytes);
    EXPECT_EQ(l.front, kGuardBytes);
    EXPECT_EQ(l.front % kGuardAlign, 0u) << "the data's offset keeps the allocation's alignment";
    EXPECT_EQ(l.data, bytes);
    EXPECT_EQ(l.back_offset(), l.front + bytes) << "no unguarded padding between the data and the back band";
    EXPECT_GE(l.back, kGuardBytes);
    EXPECT_LT(l.back, kGuardBytes + kGuardAlign);
    EXPECT_EQ(l.total() % kGuardAlign, 0u);
    EXPECT_EQ(l.total(), l.front + l.data + l.back);
  }
}

TEST(GuardLayout, PaddingGoesToTheBackBand) {
  const GuardLayout l = guard_layout(4000);  // 1000 floats: 96 bytes short of 4096
  EXPECT_EQ(l.back, kGuardBytes + 96);
  EXPECT_EQ(l.total(), 2 * kGuardBytes + 4096);
  EXPECT_EQ(guard_layout(4096).back, kGuardBytes);
  EXPECT_EQ(guard_layout(0).total(), 2 * kGuardBytes);
}

TEST(GuardLayout, OtherBandSizes) {
  const GuardLayout l = guard_layout(10, 4096);
  EXPECT_EQ(l.front, 4096u);
  EXPECT_EQ(l.back, 4096u + 246);
  EXPECT_THROW(guard_layout(10, 0), std::invalid_argument);
  EXPECT_THROW(guard_layout(10, 1000), std::invalid_argument);
}

TEST(GuardDamage, WordsFromTheCheckKernel) {
  // The kernel keeps ~distance of the nearest damaged byte with atomicMax over zeroed words.
  EXPECT_EQ(band_damage(0, 0).bytes, 0u);
  const BandDamage at_end = band_damage(~uint64_t{0}, 4);  // distance 0: the byte right at the end
  EXPECT_EQ(at_end.bytes, 4u);
  EXPECT_EQ(at_end.nearest, 0u);
  const BandDamage before = band_damage(~uint64_t{1}, 4);  // the byte just before the start
  EXPECT_EQ(before.nearest, 1u);
  EXPECT_EQ(band_damage(~uint64_t{65535}, 1).nearest, 65535u);
  GuardDamage d;
  EXPECT_FALSE(d.any());
  d.after = at_end;
  EXPECT_TRUE(d.any());
}

TEST(GuardDamage, MessageNamesTheBufferTheSideAndTheOffset) {
  GuardDamage d{"output", "out", 67108864, {}, band_damage(~uint64_t{0}, 4)};
  const std::string m = guard_damage_message("candidate", d, "correctness trial 0");
  EXPECT_TRUE(has(m,
                  "candidate wrote outside output 'out' (67108864 bytes), found after correctness trial 0: "
                  "4 bytes after its end damaged (first at offset +0 past the end)"))
      << m;
  EXPECT_FALSE(has(m, "before its start")) << m;
  EXPECT_TRUE(has(m, "i < n")) << "a hint at the usual cause: " << m;

  GuardDamage front{"scratch", "tmp", 4000, band_damage(~uint64_t{1}, 1), {}};
  const std::string f = guard_damage_message("candidate", front, "the timing");
  EXPECT_TRUE(has(f,
                  "outside scratch 'tmp' (4000 bytes), found after the timing: 1 byte before its start damaged "
                  "(last at offset -1 before the start)"))
      << f;
  EXPECT_FALSE(has(f, "after its end")) << f;

  GuardDamage both{"input", "a", 8, band_damage(~uint64_t{8}, 8), band_damage(~uint64_t{12}, 2)};
  const std::string b = guard_damage_message("reference ref.cu", both, "its run for correctness trial 2");
  EXPECT_TRUE(has(b, "reference ref.cu wrote outside input 'a'")) << b;
  EXPECT_TRUE(has(b,
                  "8 bytes before its start damaged (last at offset -8 before the start); 2 bytes after its end "
                  "damaged (first at offset +12 past the end)"))
      << b;
}

TEST(GuardDamage, PrivateWriteMessage) {
  const std::string m = private_write_message("candidate", "the harness's copy of input", "a", "the timing");
  EXPECT_TRUE(has(m,
                  "candidate wrote into the harness's own memory: the harness's copy of input 'a' changed, found "
                  "after the timing"))
      << m;
}

}  // namespace
}  // namespace kagent
