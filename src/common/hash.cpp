#include "kagent/common/hash.hpp"

#include <fmt/format.h>

namespace kagent {

namespace {
constexpr uint64_t kFnvPrime = 0x100000001b3ull;
}

Hasher& Hasher::add(std::string_view bytes) {
  for (unsigned char c : bytes) {
    a_ = (a_ ^ c) * kFnvPrime;
    // The second lane mixes a rotated copy so the two lanes are not simply correlated.
    b_ = ((b_ ^ c) * kFnvPrime);
    b_ = (b_ << 29) | (b_ >> 35);
  }
  return *this;
}

Hasher& Hasher::add_field(std::string_view bytes) {
  std::string len = fmt::format("{}:", bytes.size());
  add(len);
  return add(bytes);
}

std::string Hasher::hex() const { return fmt::format("{:016x}{:016x}", a_, b_); }

}  // namespace kagent
