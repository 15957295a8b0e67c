// The per-GPU cache of measured peaks: one file per GPU and driver, written atomically, read back
// as cached; a file from another measurement method or a damaged one is measured again.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "kagent/common/files.hpp"
#include "kagent/profile/peaks.hpp"
#include "test_util.hpp"

using namespace kagent;
using namespace kagent::profile;

namespace {
DevicePeaks measured() {
  DevicePeaks p;
  p.gpu = "NVIDIA H100 80GB HBM3";
  p.uuid = "GPU-0a1b2c3d-0000-1111-2222-333344445555";
  p.method = kPeaksMethod;
  p.copy_bytes = int64_t(1) << 30;
  p.copy_gbs = 2900;
  p.gemm_n = 8192;
  p.fp32_gflops = 50000;
  p.theoretical_gbs = 3352;
  p.theoretical_gflops = 66900;
  p.samples = 9;
  return p;
}
}  // namespace

TEST(PeaksCache, OneFilePerGpuAndDriver) {
  test::TempDir dir;
  auto a = peaks_file(dir.path(), "GPU-0a1b", 13000);
  EXPECT_EQ(a, dir.path() / "peaks" / "GPU-0a1b-driver13000.json");
  EXPECT_NE(a, peaks_file(dir.path(), "GPU-0a1c", 13000));  // another GPU of the same model
  EXPECT_NE(a, peaks_file(dir.path(), "GPU-0a1b", 13010));  // a new driver
  // Whatever the driver reports, the name stays one plain file name.
  EXPECT_EQ(peaks_file(dir.path(), "../x/y", 1).parent_path(), dir.path() / "peaks");
  EXPECT_EQ(peaks_file(dir.path(), "", 1).filename(), "unknown-gpu-driver1.json");
}

TEST(PeaksCache, WrittenThenReadBackAsCached) {
  test::TempDir dir;
  auto file = peaks_file(dir.path(), measured().uuid, 13000);
  EXPECT_FALSE(read_peaks(file).has_value());  // nothing cached yet
  DevicePeaks p = measured();
  write_peaks(file, p);
  EXPECT_EQ(p.measured_at.size(), 20u) << p.measured_at;  // 2026-11-22T10:00:00Z
  EXPECT_EQ(p.measured_at.back(), 'Z');
  auto back = read_peaks(file);
  ASSERT_TRUE(back.has_value());
  EXPECT_TRUE(back->cached);
  EXPECT_EQ(back->measured_at, p.measured_at);
  EXPECT_EQ(back->gpu, p.gpu);
  EXPECT_EQ(back->copy_gbs, 2900);
  EXPECT_EQ(back->fp32_gflops, 50000);
  EXPECT_EQ(back->gemm_n, 8192);
}

TEST(PeaksCache, OtherMethodsAndDamagedFilesAreMeasuredAgain) {
  test::TempDir dir;
  auto file = peaks_file(dir.path(), "GPU-1", 13000);
  DevicePeaks old = measured();
  old.method = "an earlier method";
  write_peaks(file, old);
  EXPECT_FALSE(read_peaks(file).has_value());
  write_file_atomic(file, "{\"gpu\": \"half a fi");
  EXPECT_FALSE(read_peaks(file).has_value());
  DevicePeaks zero = measured();
  zero.copy_gbs = 0;
  write_peaks(file, zero);
  EXPECT_FALSE(read_peaks(file).has_value());
}

// The file carries "version"; a file of another version (or none: before versions) is measured
// again, and why names the file and both versions.
TEST(PeaksCache, AnotherFileVersionIsMeasuredAgain) {
  test::TempDir dir;
  auto file = peaks_file(dir.path(), "GPU-2", 13000);
  DevicePeaks p = measured();
  write_peaks(file, p);
  nlohmann::json j = nlohmann::json::parse(read_text_file(file));
  EXPECT_EQ(j.at("version"), kPeaksFileVersion);
  EXPECT_EQ(j.get<PeaksFile>().peaks.copy_gbs, 2900);  // the struct round-trips

  j["version"] = kPeaksFileVersion + 1;
  write_file_atomic(file, j.dump());
  std::string why;
  EXPECT_FALSE(read_peaks(file, &why).has_value());
  EXPECT_NE(why.find(file.string()), std::string::npos) << why;
  EXPECT_NE(why.find(fmt::format("version {}", kPeaksFileVersion + 1)), std::string::npos) << why;
  EXPECT_NE(why.find(fmt::format("reads version {}", kPeaksFileVersion)), std::string::npos) << why;

  j.erase("version");
  write_file_atomic(file, j.dump());
  EXPECT_FALSE(read_peaks(file, &why).has_value());
  EXPECT_NE(why.find("no version"), std::string::npos) << why;
}

// The tensor-core roofs travel with the others; a file measured before they existed (the earlier
// method, without them) is measured again rather than read as "no tensor cores".
TEST(PeaksCache, TensorCoreRoofsRoundTripAndOlderFilesAreMeasuredAgain) {
  test::TempDir dir;
  auto file = peaks_file(dir.path(), "GPU-3", 13000);
  DevicePeaks p = measured();
  p.tf32_mma_gflops = 350000;
  p.f16_mma_gflops = 660000;
  p.bf16_mma_gflops = 655000;
  write_peaks(file, p);
  auto back = read_peaks(file);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->tf32_mma_gflops, 350000);
  EXPECT_EQ(back->f16_mma_gflops, 660000);
  EXPECT_EQ(back->bf16_mma_gflops, 655000);

  DevicePeaks before = measured();
  before.method = "d2d-copy-1GiB+fp32-gemm-8192-cublas-or-kagent-v1";  // the method before the mma.sync roofs
  write_peaks(file, before);
  std::string why;
  EXPECT_FALSE(read_peaks(file, &why).has_value());
  EXPECT_NE(why.find("measured by another method"), std::string::npos) << why;
}
