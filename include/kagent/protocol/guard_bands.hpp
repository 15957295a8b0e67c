#pragma once
// Guard bands: every buffer the runner hands to a candidate (inputs, outputs, scratch), and its own
// private copies, sit in one allocation between two bands of a canary pattern,
// [front band][data][back band]. After each run the bands are checked; a damaged byte is a write
// outside the buffer (failure stage "bounds"). Here: the layout arithmetic, what a check reports,
// and the messages. The device side is src/runner/bounds_check.cpp and the kagent_guard_* kernels.
#include <cstddef>
#include <cstdint>
#include <string>

namespace kagent {

// Each band's nominal size: larger than any off-by-a-tile write, small next to GPU memory.
inline constexpr size_t kGuardBytes = size_t{64} << 10;
// The data's alignment (cuMemAlloc's own, and what float4/uint4 accesses need many times over).
inline constexpr size_t kGuardAlign = 256;

// Offsets within one guarded allocation. The back band starts right at the data's end, not at the
// next aligned offset, so that a write one element past the end lands in it whatever the size; it
// runs to the allocation's end (guard bytes plus the alignment padding).
struct GuardLayout {
  size_t front = 0;  // the front band's bytes; also the data's offset
  size_t data = 0;   // the buffer's own bytes
  size_t back = 0;   // the back band's bytes, from the data's end
  size_t back_offset() const { return front + data; }
  size_t total() const { return front + data + back; }
};

// The layout for `data_bytes` with bands of at least `guard_bytes` (a positive multiple of
// kGuardAlign, else std::invalid_argument): data aligned to kGuardAlign, total a multiple of it.
GuardLayout guard_layout(size_t data_bytes, size_t guard_bytes = kGuardBytes);

// What a check found in one band: how many bytes differ from the canary and, of those, the one
// nearest the data, as its distance from the data's edge (before the start: 1 is the byte just
// before it; after the end: 0 is the byte at the end).
struct BandDamage {
  uint64_t bytes = 0;
  uint64_t nearest = 0;
};

// The check kernel's four words per buffer: for the front band the nearest damaged byte as
// ~distance (atomicMax over zeroed words: 0 means none) and the count, then the same for the back.
BandDamage band_damage(uint64_t nearest_key, uint64_t count);

struct GuardDamage {
  std::string kind;  // "input", "output", "scratch", "the harness's copy of input", ...
  std::string name;
  uint64_t data_bytes = 0;
  BandDamage before, after;
  bool any() const { return before.bytes > 0 || after.bytes > 0; }
};

// "candidate wrote outside output 'out' (67108864 bytes), found after correctness trial 0: 4 bytes
// after its end damaged (first at offset +0 past the end); ..." with a hint for the author.
std::string guard_damage_message(const std::string& who, const GuardDamage& d, const std::string& when);

// A buffer only the harness writes (a pristine input, a reference output) changed: its digest
// differs from the one taken when the harness wrote it.
std::string private_write_message(const std::string& who, const std::string& kind, const std::string& name,
                                  const std::string& when);

}  // namespace kagent
