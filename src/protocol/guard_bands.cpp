// Guard bands' layout and messages (see kagent/protocol/guard_bands.hpp).
#include "kagent/protocol/guard_bands.hpp"

#include <stdexcept>

#include <fmt/format.h>

namespace kagent {

namespace {

size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
}

std::string bytes_text(uint64_t n) {
  return fmt::format("{} byte{}", n, n == 1 ? "" : "s");
}

}  // namespace

GuardLayout guard_layout(size_t data_bytes, size_t guard_bytes) {
  if (guard_bytes == 0 || guard_bytes % kGuardAlign != 0)
    throw std::invalid_argument(
        fmt::format("guard band of {} bytes: must be a positive multiple of {}", guard_bytes, kGuardAlign));
  GuardLayout l;
  l.front = guard_bytes;
  l.data = data_bytes;
  l.back = round_up(data_bytes, kGuardAlign) - data_bytes + guard_bytes;
  return l;
}

BandDamage band_damage(uint64_t nearest_key, uint64_t count) {
  if (count == 0 || nearest_key == 0) return {};
  return {count, ~nearest_key};
}

std::string guard_damage_message(const std::string& who, const GuardDamage& d, const std::string& when) {
  std::string sides;
  if (d.before.bytes > 0)
    sides += fmt::format("{} before its start damaged (last at offset -{} before the start)",
                         bytes_text(d.before.bytes), d.before.nearest);
  if (d.after.bytes > 0)
    sides += fmt::format("{}{} after its end damaged (first at offset +{} past the end)", sides.empty() ? "" : "; ",
                         bytes_text(d.after.bytes), d.after.nearest);
  return fmt::format(
      "{} wrote outside {} '{}' ({}), found after {}: {}. A store beyond the tensor's bounds: check the index guard "
      "of every store (i < n), the last partial tile or vector, and the sizes the plan passes",
      who, d.kind, d.name, bytes_text(d.data_bytes), when, sides);
}

std::string private_write_message(const std::string& who, const std::string& kind, const std::string& name,
                                  const std::string& when) {
  return fmt::format(
      "{} wrote into the harness's own memory: {} '{}' changed, found after {}. A store far outside the "
      "candidate's buffers (a wrong pointer or a huge index)",
      who, kind, name, when);
}

}  // namespace kagent
