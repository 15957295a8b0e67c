#pragma once
// The two roofs of this GPU's roofline, measured rather than taken from the data sheet: DRAM
// bandwidth by a large device-to-device copy, FP32 throughput by a large matrix product (cuBLAS's
// SGEMM where libcublas is here and its product matches kagent's own FP32 product, else
// kagent_peak_sgemm, checked element by element on a small size first); beside them the tensor
// cores' rates for mma.sync TF32 (m16n8k8), FP16 and BF16 (m16n8k16) issued from registers. kagent
// asks for them once per GPU and caches them (src/profile/peaks.cpp); the profile puts each kernel
// against them and the task prompt states them.
#include "device.hpp"
#include "harness.hpp"
#include "kagent/protocol/protocol.hpp"

namespace kagent::runner {

DevicePeaks measure_peaks(const Device& dev, Harness& h);

}  // namespace kagent::runner
