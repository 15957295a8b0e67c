#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace kagent {

// 128-bit non-cryptographic hash (two independent FNV-1a-64 lanes), hex encoded. Used for
// cache keys, where the cached entry also records what it was built from and is verified.
class Hasher {
 public:
  Hasher& add(std::string_view bytes);
  Hasher& add_field(std::string_view bytes);  // length-prefixed, so fields cannot run together
  std::string hex() const;

 private:
  uint64_t a_ = 0xcbf29ce484222325ull;
  uint64_t b_ = 0x84222325cbf29ce4ull;
};

}  // namespace kagent
