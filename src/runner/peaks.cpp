#include "peaks.hpp"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include <fmt/format.h>

#include "cublas_sgemm.hpp"
#include "kagent/profile/peaks.hpp"
#include "kagent/protocol/stats.hpp"

namespace kagent::runner {

namespace {

constexpr int kWarmup = 2, kSamples = 9;

// Median milliseconds of `work` over kSamples event-timed runs after kWarmup untimed ones.
template <typename Work>
double time_ms(const Device& dev, Work&& work) {
  Event start, stop;
  std::vector<double> ms;
  for (int i = 0; i < kWarmup; ++i) work();
  for (int i = 0; i < kSamples; ++i) {
    check(cu().cuEventRecord(start.get(), dev.stream()), "cuEventRecord");
    work();
    check(cu().cuEventRecord(stop.get(), dev.stream()), "cuEventRecord");
    check(cu().cuEventSynchronize(stop.get()), "cuEventSynchronize");
    float t = 0;
    check(cu().cuEventElapsedTime(&t, start.get(), stop.get()), "cuEventElapsedTime");
    ms.push_back(t);
  }
  return summarize(ms).median_ms;
}

size_t free_bytes() {
  size_t free = 0, total = 0;
  check(cu().cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return free;
}

// n x n FP32 values, uniform in (-1, 1), from a fixed seed.
void fill_matrix(Harness& h, const DeviceBuffer& m, int n, uint64_t seed) {
  InitSpec init;
  init.kind = InitSpec::Kind::uniform;
  init.a = -1;
  init.b = 1;
  h.fill(m.get(), int64_t(n) * n, DType::f32, init, seed);
}

// kagent_peak_sgemm on a size small enough to check every element on the host: a wrong product
// must never become the roof.
void check_sgemm(const Device& dev, Harness& h) {
  constexpr int n = 256;
  const size_t bytes = size_t(n) * n * sizeof(float);
  DeviceBuffer a(bytes), b(bytes), c(bytes);
  fill_matrix(h, a, n, 1);
  fill_matrix(h, b, n, 2);
  h.sgemm(a.get(), b.get(), c.get(), n);
  dev.sync();
  std::vector<float> ha(size_t(n) * n), hb(ha.size()), hc(ha.size());
  check(cu().cuMemcpyDtoH(ha.data(), a.get(), bytes), "peaks: reading A");
  check(cu().cuMemcpyDtoH(hb.data(), b.get(), bytes), "peaks: reading B");
  check(cu().cuMemcpyDtoH(hc.data(), c.get(), bytes), "peaks: reading C");
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double sum = 0, mag = 0;
      for (int k = 0; k < n; ++k) {
        const double p = double(ha[size_t(i) * n + k]) * hb[size_t(k) * n + j];
        sum += p;
        mag += std::fabs(p);
      }
      const double got = hc[size_t(i) * n + j];
      if (!(std::fabs(got - sum) <= 1e-4 * mag + 1e-6))
        throw std::runtime_error(
            fmt::format("kagent_peak_sgemm is wrong at ({}, {}): {} instead of {}", i, j, got, sum));
    }
}

// The tensor-core roofs: each mma.sync kind from registers on every SM (four blocks of eight warps
// per SM, eight independent chains per warp: enough in flight to keep the pipe issuing). A short
// run sizes the timed one to about 20 ms, long enough for the clocks to settle.
void measure_mma(const Device& dev, Harness& h, DevicePeaks& p) {
  const DeviceSummary& s = dev.summary();
  if (s.cc_major < 8) {
    p.mma_note = fmt::format(
        "mma.sync with TF32, FP16, BF16 and FP64 operands (m16n8k8, m16n8k16, m8n8k4) needs compute "
        "capability 8.0; this GPU is {}.{}",
        s.cc_major, s.cc_minor);
    return;
  }
  const int blocks = 4 * s.sms;
  DeviceBuffer sink(size_t(blocks) * 256 * sizeof(float));
  const std::tuple<Harness::Mma, double DevicePeaks::*, const char*> kinds[] = {
      {Harness::Mma::tf32, &DevicePeaks::tf32_mma_gflops, "TF32 mma.sync"},
      {Harness::Mma::f16, &DevicePeaks::f16_mma_gflops, "FP16 mma.sync"},
      {Harness::Mma::bf16, &DevicePeaks::bf16_mma_gflops, "BF16 mma.sync"},
      {Harness::Mma::f64, &DevicePeaks::f64_mma_gflops, "FP64 mma.sync"},
      {Harness::Mma::dfma, &DevicePeaks::fp64_gflops, "FP64 DFMA"}};
  for (const auto& [kind, field, what] : kinds) {
    phase(fmt::format("peaks: {}", what));
    constexpr int kProbe = 1024;
    const double probe_ms = time_ms(dev, [&] { h.mma(kind, blocks, kProbe, sink.get()); });
    const int iters =
        static_cast<int>(std::clamp(kProbe * 20.0 / std::max(probe_ms, 1e-3), double(kProbe), double(1 << 22)));
    double flop = 0;
    const double ms = time_ms(dev, [&] { flop = h.mma(kind, blocks, iters, sink.get()); });
    p.*field = flop / (ms * 1e-3) / 1e9;
  }
}

}  // namespace

DevicePeaks measure_peaks(const Device& dev, Harness& h) {
  const DeviceSummary& s = dev.summary();
  DevicePeaks p;
  p.gpu = s.name;
  p.method = profile::kPeaksMethod;
  p.samples = kSamples;
  p.theoretical_gbs = s.peak_gbs;
  // FP32 lanes per SM: 64 on the HPC chips of Pascal, Volta and Ampere (and on Turing), 128
  // elsewhere from compute capability 6.1 on.
  const int cc = s.cc_major * 10 + s.cc_minor;
  const int lanes = (cc == 60 || cc == 70 || cc == 72 || cc == 75 || cc == 80) ? 64 : 128;
  p.theoretical_gflops = 2.0 * lanes * s.sms * dev.attribute(CU_DEVICE_ATTRIBUTE_CLOCK_RATE) * 1e3 / 1e9;

  // The copy: as large as a quarter of the free memory allows, up to 1 GiB each way (far past the
  // L2, so every byte comes from and goes to DRAM).
  phase("peaks: device-to-device copy");
  const size_t copy = std::min<size_t>(size_t(1) << 30, free_bytes() / 4) & ~((size_t(1) << 20) - 1);
  if (copy < (size_t(64) << 20)) throw std::runtime_error("peaks: less than 256 MiB of GPU memory free");
  {
    DeviceBuffer src(copy), dst(copy);
    check(cu().cuMemsetD32Async(src.get(), 0x3f800000u, copy / 4, dev.stream()), "peaks: cuMemsetD32Async");
    const double ms = time_ms(dev, [&] {
      check(cu().cuMemcpyDtoDAsync(dst.get(), src.get(), copy, dev.stream()), "peaks: cuMemcpyDtoDAsync");
    });
    p.copy_bytes = static_cast<int64_t>(copy);
    p.copy_gbs = 2.0 * double(copy) / (ms * 1e-3) / 1e9;

    // The same bytes through kagent's streaming kernels: reading only, writing only and copying,
    // each at 2, 4, 8 and 16 blocks of 256 threads per SM, the best of each. A memcpy is one
    // engine's pattern; an operator's own kernel (a read-mostly reduction, a write-mostly
    // broadcast) can move bytes faster, and a floor must be under what a kernel reaches.
    phase("peaks: streaming read, write and copy");
    DeviceBuffer sink(size_t(s.sms) * 16 * 256 * sizeof(float));
    const int64_t n4 = static_cast<int64_t>(copy / 16);
    const std::pair<Harness::Stream, double DevicePeaks::*> streams[] = {
        {Harness::Stream::read, &DevicePeaks::read_gbs},
        {Harness::Stream::write, &DevicePeaks::write_gbs},
        {Harness::Stream::copy, &DevicePeaks::copy_kernel_gbs}};
    for (const auto& [kind, field] : streams)
      for (int per_sm : {2, 4, 8, 16}) {
        double bytes = 0;
        const double t =
            time_ms(dev, [&] { bytes = h.stream(kind, per_sm * s.sms, src.get(), dst.get(), n4, sink.get()); });
        p.*field = std::max(p.*field, bytes / (t * 1e-3) / 1e9);
      }
  }

  // The matrix product: 8192 (1.1 TFLOP, tens of milliseconds: long enough for the clocks to
  // settle) where memory allows. cuBLAS's SGEMM is the roof when it is here and its product agrees
  // with kagent's own (so a TF32 path can never pass for FP32); kagent's product otherwise.
  phase("peaks: checking the FP32 matrix product");
  check_sgemm(dev, h);
  phase("peaks: FP32 matrix product");
  int n = 8192;
  while (n > 1024 && 4 * size_t(n) * n * sizeof(float) > free_bytes() / 2) n /= 2;
  {
    const size_t bytes = size_t(n) * n * sizeof(float);
    DeviceBuffer a(bytes), b(bytes), c(bytes), c2(bytes);
    fill_matrix(h, a, n, 3);
    fill_matrix(h, b, n, 4);
    const double flop = 2.0 * double(n) * n * n;
    p.gemm_n = n;
    p.kagent_sgemm_gflops = flop / (time_ms(dev, [&] { h.sgemm(a.get(), b.get(), c.get(), n); }) * 1e-3) / 1e9;
    p.fp32_gflops = p.kagent_sgemm_gflops;
    p.gemm_by = "kagent_peak_sgemm";
    std::string why;
    if (CublasSgemm* blas = CublasSgemm::get(&why)) {
      phase("peaks: cuBLAS FP32 matrix product");
      blas->run(dev.stream(), n, a.get(), b.get(), c2.get());
      // Both full FP32: they differ by summation order only (~1e-4 here); TF32 would be ~3e-2 off.
      CompareResult cmp = h.compare(c2.get(), c.get(), int64_t(n) * n, DType::f32, Tolerance{2e-3, 5e-5});
      if (cmp.mismatches == 0) {
        p.cublas_gflops =
            flop / (time_ms(dev, [&] { blas->run(dev.stream(), n, a.get(), b.get(), c2.get()); }) * 1e-3) / 1e9;
        if (p.cublas_gflops > p.fp32_gflops) {
          p.fp32_gflops = p.cublas_gflops;
          p.gemm_by = "cuBLAS";
        }
      } else {
        p.gemm_note =
            fmt::format("cuBLAS's product differs from kagent's in {} elements (max {:.3g}): not FP32, not used",
                        cmp.mismatches, cmp.max_abs);
      }
    } else {
      p.gemm_note = why;
    }
  }
  measure_mma(dev, h, p);
  return p;
}

}  // namespace kagent::runner
