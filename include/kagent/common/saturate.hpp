#pragma once
// Integer arithmetic on figures kagent does not control (a plan's block size, an endpoint's token
// counts, a results file's turn numbers): at the limits it saturates instead of overflowing, which
// is undefined behaviour in C++ and an abort under UBSan.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>

#include <nlohmann/json.hpp>

namespace kagent {

inline int64_t saturating_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (!__builtin_add_overflow(a, b, &out)) return out;
  return b > 0 ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
}

inline int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (!__builtin_mul_overflow(a, b, &out)) return out;
  return (a < 0) != (b < 0) ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max();
}

// A JSON number as an integer in [lo, hi] when it is one (a float such as 3.0 counts); nullopt for
// anything else, including 1e300 (converting that to an integer type is undefined behaviour).
template <class Json>
std::optional<int64_t> json_integer(const Json& v, int64_t lo = std::numeric_limits<int64_t>::min(),
                                    int64_t hi = std::numeric_limits<int64_t>::max()) {
  int64_t x = 0;
  if (v.is_number_unsigned()) {
    if (v.template get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    x = static_cast<int64_t>(v.template get<uint64_t>());
  } else if (v.is_number_integer()) {
    x = v.template get<int64_t>();
  } else if (v.is_number_float()) {
    const double d = v.template get<double>();
    // 2^63 is exactly representable; every double below it in magnitude converts without UB.
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) ||
        d != static_cast<double>(static_cast<int64_t>(d)))
      return std::nullopt;
    x = static_cast<int64_t>(d);
  } else {
    return std::nullopt;
  }
  if (x < lo || x > hi) return std::nullopt;
  return x;
}

// A count reported by someone else (an endpoint's token usage): non-negative, saturating at 2^53
// for anything larger, 0 for what is not a number.
template <class Json>
int64_t json_count(const Json& v) {
  constexpr int64_t kMax = int64_t{1} << 53;
  if (!v.is_number()) return 0;
  if (v.is_number_float()) {
    const double d = v.template get<double>();
    if (!(d > 0)) return 0;  // also NaN
    return d >= static_cast<double>(kMax) ? kMax : static_cast<int64_t>(d);
  }
  if (v.is_number_unsigned()) return static_cast<int64_t>(std::min<uint64_t>(v.template get<uint64_t>(), kMax));
  return std::clamp<int64_t>(v.template get<int64_t>(), 0, kMax);
}

}  // namespace kagent
