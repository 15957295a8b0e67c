#pragma once
#include <cstdint>
#include <random>

namespace kagent {

// Seeds come from the OS: an evaluation's inputs cannot be guessed or replayed by a candidate.
inline uint64_t fresh_seed() {
  std::random_device rd;
  return (uint64_t(rd()) << 32) ^ rd();
}

}  // namespace kagent
