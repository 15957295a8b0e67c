#pragma once
// Catches writes outside the buffers a plan was given, on the device, outside any timed span:
// - guard bands: the canary in every GuardedBuffer's bands (filled once per evaluation from its
//   seed), checked after each run of a plan; one small kernel per buffer and one readback for all.
// - seals: a digest of each buffer only the harness writes (the pristine inputs, the reference
//   outputs), taken right after the harness wrote it and compared at every check; one pass over
//   the bytes, one readback for all. A store that jumps over the bands lands in one of these, in
//   another buffer of the plan (which the correctness checks see), or faults.
// Disabled (the request's guard_checks false, for measuring their cost) every call does nothing.
#include <functional>
#include <optional>
#include <vector>

#include "guarded_buffer.hpp"
#include "harness.hpp"

namespace kagent::runner {

using Buffers = std::vector<const GuardedBuffer*>;

class BoundsCheck {
 public:
  BoundsCheck(const Device& dev, Harness& h, uint64_t seed, bool enabled);
  bool enabled() const { return enabled_; }

  // Writes the canary into the bands of each buffer (enqueued).
  void fill(const Buffers& bufs);
  // The first buffer (in the given order) with a damaged band, if any.
  std::optional<GuardDamage> damaged(const Buffers& bufs);

  // Takes (or retakes) the digest of each buffer's data, now that the harness has written it.
  void seal(const Buffers& bufs);
  // Forgets a buffer's digest: the harness is about to rewrite it (a reference run).
  void unseal(const Buffers& bufs);
  // The first sealed buffer whose data no longer matches its digest, or nullptr.
  const GuardedBuffer* changed();

 private:
  // Zeroes `words` result words, lets `enqueue` launch kernels into them, reads them back.
  std::vector<uint64_t> collect(size_t words, const std::function<void(CUdeviceptr)>& enqueue);
  std::vector<uint64_t> digests(const Buffers& bufs);

  const Device& dev_;
  Harness& h_;
  uint64_t seed_;
  bool enabled_;
  DeviceBuffer results_;  // grown as needed
  std::vector<std::pair<const GuardedBuffer*, uint64_t>> sealed_;
};

}  // namespace kagent::runner
