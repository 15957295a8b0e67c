#include "bounds_check.hpp"

#include <algorithm>
#include <functional>

namespace kagent::runner {

BoundsCheck::BoundsCheck(const Device& dev, Harness& h, uint64_t seed, bool enabled)
    : dev_(dev), h_(h), seed_(seed), enabled_(enabled) {}

void BoundsCheck::fill(const Buffers& bufs) {
  if (!enabled_) return;
  for (const GuardedBuffer* b : bufs) h_.guard_fill(b->base(), b->layout(), seed_);
}

std::vector<uint64_t> BoundsCheck::collect(size_t words, const std::function<void(CUdeviceptr)>& enqueue) {
  std::vector<uint64_t> out(words);
  if (words == 0) return out;
  if (results_.bytes() < words * 8) results_ = DeviceBuffer(words * 8);
  check(cu().cuMemsetD8Async(results_.get(), 0, words * 8, dev_.stream()), "clear the bounds check's results");
  enqueue(results_.get());
  dev_.sync();
  check(cu().cuMemcpyDtoH(out.data(), results_.get(), words * 8), "read the bounds check's results");
  return out;
}

std::optional<GuardDamage> BoundsCheck::damaged(const Buffers& bufs) {
  if (!enabled_) return std::nullopt;
  const std::vector<uint64_t> w = collect(4 * bufs.size(), [&](CUdeviceptr r) {
    for (size_t i = 0; i < bufs.size(); ++i) h_.guard_check(bufs[i]->base(), bufs[i]->layout(), seed_, r + 32 * i);
  });
  for (size_t i = 0; i < bufs.size(); ++i) {
    GuardDamage d{bufs[i]->kind(), bufs[i]->name(), bufs[i]->bytes(), band_damage(w[4 * i], w[4 * i + 1]),
                  band_damage(w[4 * i + 2], w[4 * i + 3])};
    if (d.any()) return d;
  }
  return std::nullopt;
}

std::vector<uint64_t> BoundsCheck::digests(const Buffers& bufs) {
  return collect(bufs.size(), [&](CUdeviceptr r) {
    for (size_t i = 0; i < bufs.size(); ++i) h_.digest(bufs[i]->get(), bufs[i]->bytes(), seed_, r + 8 * i);
  });
}

void BoundsCheck::seal(const Buffers& bufs) {
  if (!enabled_) return;
  unseal(bufs);
  const std::vector<uint64_t> d = digests(bufs);
  for (size_t i = 0; i < bufs.size(); ++i) sealed_.emplace_back(bufs[i], d[i]);
}

void BoundsCheck::unseal(const Buffers& bufs) {
  std::erase_if(sealed_, [&](const auto& s) { return std::find(bufs.begin(), bufs.end(), s.first) != bufs.end(); });
}

const GuardedBuffer* BoundsCheck::changed() {
  if (!enabled_ || sealed_.empty()) return nullptr;
  Buffers bufs;
  for (const auto& s : sealed_) bufs.push_back(s.first);
  const std::vector<uint64_t> d = digests(bufs);
  for (size_t i = 0; i < bufs.size(); ++i)
    if (d[i] != sealed_[i].second) return bufs[i];
  return nullptr;
}

}  // namespace kagent::runner
