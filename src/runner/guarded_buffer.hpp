#pragma once
// A device buffer between two guard bands, in one allocation: [front band][data][back band]
// (layout in kagent/protocol/guard_bands.hpp). get() is the data, what a plan receives; the bands are
// filled and checked by BoundsCheck. Every buffer the runner allocates for an evaluation is one of
// these, so a stray write near any of them lands in a band.
#include <string>

#include "device.hpp"
#include "kagent/protocol/guard_bands.hpp"

namespace kagent::runner {

class GuardedBuffer {
 public:
  // `kind` and `name` are for messages: "output" 'out', "scratch" 'stats'.
  GuardedBuffer(size_t bytes, std::string kind, std::string name);
  CUdeviceptr get() const { return mem_.get() + layout_.front; }
  size_t bytes() const { return layout_.data; }
  CUdeviceptr base() const { return mem_.get(); }
  const GuardLayout& layout() const { return layout_; }
  const std::string& kind() const { return kind_; }
  const std::string& name() const { return name_; }

 private:
  GuardLayout layout_;
  DeviceBuffer mem_;
  std::string kind_, name_;
};

}  // namespace kagent::runner
