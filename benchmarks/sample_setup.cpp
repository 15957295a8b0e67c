// sample_setup: what each part of a timed sample's set-up costs, apart. kagent-runner prepares
// every timed sample the same way (src/runner/evaluation.cpp, prepare_sample): reset persisting L2
// lines, poison the outputs, flush the L2 by reading a buffer of twice its size, then the events
// around the plan; the samples between two re-checks are queued back to back and waited for once.
// This program runs that loop on a vector_add of --elements floats with the parts switched on one
// at a time and prints, per row, wall time per sample, GPU busy time per sample (first set-up
// command to stop event) and the plan's median, so the host's share and each part's share can be
// read off. It also times the cuCtxResetPersistingL2Cache call alone, on an idle GPU and with a
// long kernel queued (whether the call waits for the queue), and the re-check between groups of
// samples: the harness's own comparison kernel (src/runner/harness_kernels.cu, compiled here as
// the runner has it) over the output against a reference output, on random data whose reference
// differs from the output by one ulp in every third element (what an honest candidate's re-check
// reads), at the grid the runner gives it and at two fixed ones. Each --compare-source FILE (a
// harness_kernels.cu of another version, its #include of compare_rule.hpp found under this
// tree's include/) gets the same rows, side by side.
// Usage: sample_setup [--gpu N] [--elements N] [--samples N] [--group N] [--compare-source FILE]...
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kagent/common/files.hpp"
#include "kagent/common/text_table.hpp"
#include "kagent/gpu/driver.hpp"

using namespace kagent;
using Clock = std::chrono::steady_clock;

namespace kagent {
extern const char* const kHarnessKernelsSource;  // generated from src/runner/harness_kernels.cu
}

namespace {

const DriverApi* g_cu = nullptr;

void check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return;
  fmt::print(stderr, "sample_setup: {}: {}\n", what, driver_error_text(*g_cu, rc));
  std::exit(3);
}

// A plain vector add, and a spin that keeps the GPU busy for a given number of clock ticks; the
// flush and the comparison are the harness's own (harness_kernels.cu), compiled below.
const char* kSource = R"(
typedef long long i64;
extern "C" __global__ void vector_add(const float* a, const float* b, float* c, i64 n) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) c[i] = a[i] + b[i];
}
extern "C" __global__ void spin(long long ticks) {
  long long t0 = clock64();
  while (clock64() - t0 < ticks) {}
}
// Uniform in [-1, 1) from a hash of the index: no zeros to speak of, every element's ratio defined.
extern "C" __global__ void fill_random(float* x, i64 n, unsigned seed) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x) {
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
    x[i] = (h >> 8) * (2.0f / 16777216.0f) - 1.0f;
  }
}
// A reference one ulp away from `in` in every third element.
extern "C" __global__ void nudge(const float* in, float* out, i64 n) {
  for (i64 i = blockIdx.x * (i64)blockDim.x + threadIdx.x; i < n; i += (i64)gridDim.x * blockDim.x)
    out[i] = i % 3 == 0 ? nextafterf(in[i], 2.0f) : in[i];
}
)";

// PTX of `src`, or with `arch` ("sm_90") a cubin for that GPU.
std::string compiled(const char* src, const std::string& arch = "") {
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src, "sample_setup.cu", 0, nullptr, nullptr) != NVRTC_SUCCESS) std::exit(3);
  const std::string arch_opt = "--gpu-architecture=" + arch, include = std::string("-I") + KAGENT_CUDA_INCLUDE_DIR,
                    project = std::string("-I") + KAGENT_PROJECT_INCLUDE_DIR;
  std::vector<const char*> opts = {"--std=c++17", include.c_str(), project.c_str()};
  if (!arch.empty()) opts.push_back(arch_opt.c_str());
  if (nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data()) != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, log.data());
    fmt::print(stderr, "sample_setup: NVRTC: {}\n", log);
    std::exit(3);
  }
  size_t n = 0;
  std::string image;
  if (arch.empty()) {
    nvrtcGetPTXSize(prog, &n);
    image.resize(n);
    nvrtcGetPTX(prog, image.data());
  } else {
    nvrtcGetCUBINSize(prog, &n);
    image.resize(n);
    nvrtcGetCUBIN(prog, image.data());
  }
  nvrtcDestroyProgram(&prog);
  return image;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : (n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]));
}

struct Parts {
  const char* name;
  bool reset_each = false;   // cuCtxResetPersistingL2Cache before every sample
  bool reset_group = false;  // ... once before each group of queued samples
  bool poison = false;
  bool flush = false;
};

struct Row {
  double wall_us = 0, busy_us = 0, plan_us = 0;
};

// The re-check: the harness's comparison of an output against a reference (as
// Harness::enqueue_compare queues it: init, compare, read the first mismatch), GPU time by events,
// median of 25. Random data (fill_random) with the reference one ulp off in every third element.
void recheck_rows(const DriverApi& cu, CUstream s, CUmodule built_in, int sms, long long elements, size_t bytes,
                  const std::vector<std::string>& sources, int cc_major, int cc_minor, CUmodule mod) {
  CUdeviceptr out, ref, stats;
  check(cu.cuMemAlloc(&out, bytes), "alloc");
  check(cu.cuMemAlloc(&ref, bytes), "alloc");
  check(cu.cuMemAlloc(&stats, 32 * 8), "alloc");
  CUfunction fill, nudge;
  check(cu.cuModuleGetFunction(&fill, mod, "fill_random"), "fill_random");
  check(cu.cuModuleGetFunction(&nudge, mod, "nudge"), "nudge");
  unsigned seed = 12345;
  void* fill_args[] = {&out, &elements, &seed};
  check(cu.cuLaunchKernel(fill, static_cast<unsigned>(sms * 8), 1, 1, 256, 1, 1, 0, s, fill_args, nullptr), "fill");
  void* nudge_args[] = {&out, &ref, &elements};
  check(cu.cuLaunchKernel(nudge, static_cast<unsigned>(sms * 8), 1, 1, 256, 1, 1, 0, s, nudge_args, nullptr), "nudge");
  CUevent start, stop;
  check(cu.cuEventCreate(&start, CU_EVENT_DEFAULT), "cuEventCreate");
  check(cu.cuEventCreate(&stop, CU_EVENT_DEFAULT), "cuEventCreate");

  struct Source {
    std::string name;
    CUmodule module;
  };
  std::vector<Source> all = {{"this build's harness", built_in}};
  for (const std::string& path : sources) {
    std::string text;
    try {
      text = read_text_file(path);
    } catch (const std::exception& e) {
      fmt::print(stderr, "sample_setup: {}\n", e.what());
      std::exit(2);
    }
    CUmodule m;
    const std::string cubin = compiled(text.c_str(), fmt::format("sm_{}{}", cc_major, cc_minor));
    check(cu.cuModuleLoadData(&m, cubin.data()), "cuModuleLoadData (--compare-source)");
    all.push_back({path, m});
  }
  TextTable t({"harness", "compare registers", "resident blocks/SM", "grid", "re-check us", "GB/s read", "mismatches",
               "max rel"});
  for (const Source& src : all) {
    CUfunction init, cmp, first;
    check(cu.cuModuleGetFunction(&init, src.module, "kagent_compare_init"), "kagent_compare_init");
    check(cu.cuModuleGetFunction(&cmp, src.module, "kagent_compare_f32"), "kagent_compare_f32");
    check(cu.cuModuleGetFunction(&first, src.module, "kagent_read_first_bad_f32"), "kagent_read_first_bad_f32");
    int regs = 0, resident = 0;
    check(cu.cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, cmp), "registers");
    check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(&resident, cmp, 256, 0), "occupancy");
    for (const auto& [label, blocks_per_sm] :
         std::vector<std::pair<std::string, int>>{{"resident blocks", resident}, {"8 per SM", 8}, {"32 per SM", 32}}) {
      std::vector<double> v;
      uint64_t words[22] = {};
      for (int i = 0; i < 30; ++i) {
        check(cu.cuEventRecord(start, s), "record");
        void* init_args[] = {&stats};
        check(cu.cuLaunchKernel(init, 1, 1, 1, 1, 1, 1, 0, s, init_args, nullptr), "compare init");
        CUdeviceptr none = 0;
        double atol = 1e-5, rtol = 1e-5;
        void* args[] = {&out, &ref, &none, &elements, &atol, &rtol, &stats};
        const auto grid = static_cast<unsigned>(std::min<long long>((elements + 255) / 256, sms * blocks_per_sm));
        check(cu.cuLaunchKernel(cmp, grid, 1, 1, 256, 1, 1, 0, s, args, nullptr), "compare");
        CUdeviceptr value = stats + 21 * 8;
        void* read_args[] = {&out, &stats, &value};
        check(cu.cuLaunchKernel(first, 1, 1, 1, 1, 1, 1, 0, s, read_args, nullptr), "read first bad");
        check(cu.cuEventRecord(stop, s), "record");
        check(cu.cuEventSynchronize(stop), "sync");
        float ms = 0;
        check(cu.cuEventElapsedTime(&ms, start, stop), "elapsed");
        if (i >= 5) v.push_back(ms * 1e3);
      }
      check(cu.cuMemcpyDtoH(words, stats, sizeof words), "read stats");
      double max_rel = 0;
      const uint64_t k = words[4];  // ordered_key of max_rel
      const uint64_t bits = (k >> 63) ? (k & 0x7fffffffffffffffull) : ~k;
      std::memcpy(&max_rel, &bits, sizeof max_rel);
      const double us = median(v);
      t.add_row({src.name, fmt::format("{}", regs), fmt::format("{}", resident),
                 fmt::format("{} ({})", label, std::min<long long>((elements + 255) / 256, sms * blocks_per_sm)),
                 fmt::format("{:.1f}", us), fmt::format("{:.0f}", 2.0 * static_cast<double>(bytes) / (us * 1e3)),
                 fmt::format("{}", words[0]), fmt::format("{:.3g}", max_rel)});
    }
  }
  fmt::print(
      "\nre-check: the harness's comparison of a {} MiB fp32 output with its reference (random, one ulp off in "
      "every third element), GPU time per re-check (init, compare, first mismatch), median of 25\n{}\n",
      bytes >> 20, t.render_markdown());
}

}  // namespace

int main(int argc, char** argv) {
  int gpu = 0, samples = 400, group = 4;
  long long elements = 1LL << 24;
  std::vector<std::string> compare_sources;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--gpu"))
      gpu = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--elements"))
      elements = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--samples"))
      samples = std::max(8, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--group"))
      group = std::max(1, std::atoi(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--compare-source"))
      compare_sources.push_back(argv[i + 1]);
    else {
      fmt::print(stderr,
                 "usage: sample_setup [--gpu N] [--elements N] [--samples N] [--group N] [--compare-source FILE]...\n");
      return 2;
    }
  }
  std::string why;
  g_cu = load_driver(&why);
  if (g_cu == nullptr) {
    fmt::print(stderr, "sample_setup: no CUDA driver: {}\n", why);
    return 3;
  }
  const DriverApi& cu = *g_cu;
  check(cu.cuInit(0), "cuInit");
  CUdevice dev;
  check(cu.cuDeviceGet(&dev, gpu), "cuDeviceGet");
  CUcontext ctx;
  check(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  char name[256] = {};
  check(cu.cuDeviceGetName(name, sizeof name, dev), "cuDeviceGetName");
  int l2 = 0, persisting_max = 0, clock_khz = 0;
  check(cu.cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev), "L2 size");
  check(cu.cuDeviceGetAttribute(&persisting_max, CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, dev), "persisting");
  check(cu.cuDeviceGetAttribute(&clock_khz, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, dev), "clock");
  size_t set_aside = 0;
  check(cu.cuCtxGetLimit(&set_aside, CU_LIMIT_PERSISTING_L2_CACHE_SIZE), "cuCtxGetLimit");

  CUmodule mod, harness;
  const std::string ptx = compiled(kSource);
  check(cu.cuModuleLoadData(&mod, ptx.c_str()), "cuModuleLoadData");
  int cc_major = 0, cc_minor = 0;
  check(cu.cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "cc");
  check(cu.cuDeviceGetAttribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "cc");
  const std::string harness_cubin = compiled(kHarnessKernelsSource, fmt::format("sm_{}{}", cc_major, cc_minor));
  check(cu.cuModuleLoadData(&harness, harness_cubin.data()), "cuModuleLoadData (harness)");
  int sms = 0;
  check(cu.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "SMs");
  CUfunction flush;
  check(cu.cuModuleGetFunction(&flush, harness, "kagent_flush"), "kagent_flush");
  CUfunction add, spin;
  check(cu.cuModuleGetFunction(&add, mod, "vector_add"), "vector_add");
  check(cu.cuModuleGetFunction(&spin, mod, "spin"), "spin");
  CUstream s;
  check(cu.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");

  const size_t bytes = static_cast<size_t>(elements) * 4, flush_bytes = static_cast<size_t>(l2) * 2;
  CUdeviceptr a, b, c, fbuf, sink;
  check(cu.cuMemAlloc(&a, bytes), "alloc");
  check(cu.cuMemAlloc(&b, bytes), "alloc");
  check(cu.cuMemAlloc(&c, bytes), "alloc");
  check(cu.cuMemAlloc(&fbuf, flush_bytes), "alloc");
  check(cu.cuMemAlloc(&sink, 16), "alloc");
  check(cu.cuMemsetD8Async(a, 0, bytes, s), "memset");
  check(cu.cuMemsetD8Async(b, 0, bytes, s), "memset");
  check(cu.cuMemsetD8Async(fbuf, 0, flush_bytes, s), "memset");

  const unsigned blocks = 132 * 8, threads = 256;
  auto run_plan = [&] {
    void* args[] = {&a, &b, &c, &elements};
    check(cu.cuLaunchKernel(add, blocks, 1, 1, threads, 1, 1, 0, s, args, nullptr), "vector_add");
  };
  auto run_flush = [&] {
    long long n16 = static_cast<long long>(flush_bytes / 16);
    unsigned never = 0;
    void* args[] = {&fbuf, &n16, &never, &sink};
    // The grid Harness::launch gives it: a thread per 16 bytes, at most 32 blocks per SM.
    const auto grid = static_cast<unsigned>(std::min<long long>((n16 + 255) / 256, sms * 32LL));
    check(cu.cuLaunchKernel(flush, grid, 1, 1, 256, 1, 1, 0, s, args, nullptr), "flush");
  };

  struct Ev {
    CUevent begin, start, stop;
  };
  std::vector<Ev> evs(static_cast<size_t>(group));
  for (auto& e : evs)
    for (CUevent* p : {&e.begin, &e.start, &e.stop}) check(cu.cuEventCreate(p, CU_EVENT_DEFAULT), "cuEventCreate");

  auto measure = [&](const Parts& p) {
    std::vector<double> plan_ms;
    double busy_ms = 0;
    auto one_pass = [&](int n, bool keep) {
      const auto t0 = Clock::now();
      for (int done = 0; done < n; done += group) {
        if (p.reset_group) check(cu.cuCtxResetPersistingL2Cache(), "reset");
        for (auto& e : evs) {
          if (p.reset_each) check(cu.cuCtxResetPersistingL2Cache(), "reset");
          check(cu.cuEventRecord(e.begin, s), "record");
          if (p.poison) check(cu.cuMemsetD8Async(c, 0xFF, bytes, s), "poison");
          if (p.flush) run_flush();
          check(cu.cuEventRecord(e.start, s), "record");
          run_plan();
          check(cu.cuEventRecord(e.stop, s), "record");
        }
        for (auto& e : evs) {
          check(cu.cuEventSynchronize(e.stop), "sync");
          float pm = 0, bm = 0;
          check(cu.cuEventElapsedTime(&pm, e.start, e.stop), "elapsed");
          check(cu.cuEventElapsedTime(&bm, e.begin, e.stop), "elapsed");
          if (keep) {
            plan_ms.push_back(pm);
            busy_ms += bm;
          }
        }
      }
      return std::chrono::duration<double>(Clock::now() - t0).count();
    };
    one_pass(std::max(group, 40), false);  // warm-up: clocks up, launches cached
    const int n = (samples + group - 1) / group * group;
    const double wall = one_pass(n, true);
    return Row{wall / n * 1e6, busy_ms / n * 1e3, median(plan_ms) * 1e3};
  };

  const std::vector<Parts> rows = {
      {"plan and events only"},
      {"+ poison outputs", false, false, true, false},
      {"+ poison + flush", false, false, true, true},
      {"+ poison + flush + L2 reset per sample (the runner)", true, false, true, true},
      {"+ poison + flush + L2 reset per group", false, true, true, true},
      {"plan + L2 reset per sample", true, false, false, false},
  };

  fmt::print("sample_setup: {} (GPU {}), L2 {} MiB, persisting L2 max {} MiB, set-aside now {} B\n", name, gpu,
             l2 >> 20, persisting_max >> 20, set_aside);
  fmt::print("vector_add of {} floats ({} MiB per buffer), flush buffer {} MiB, {} samples in groups of {}\n\n",
             elements, bytes >> 20, flush_bytes >> 20, samples, group);
  TextTable t({"sample", "wall us/sample", "GPU busy us/sample", "plan median us", "GPU idle"});
  for (const Parts& p : rows) {
    const Row r = measure(p);
    t.add_row({p.name, fmt::format("{:.1f}", r.wall_us), fmt::format("{:.1f}", r.busy_us),
               fmt::format("{:.1f}", r.plan_us),
               fmt::format("{:.0f}%", 100.0 * std::max(0.0, 1 - r.busy_us / r.wall_us))});
  }
  fmt::print("{}\n", t.render_markdown());

  // The reset call alone: on an idle GPU, and right after queueing a kernel of about 2 ms.
  auto call_us = [&](bool busy) {
    std::vector<double> v;
    for (int i = 0; i < 50; ++i) {
      check(cu.cuStreamSynchronize(s), "sync");
      if (busy) {
        long long ticks = static_cast<long long>(clock_khz) * 2;  // about 2 ms at the base clock
        void* args[] = {&ticks};
        check(cu.cuLaunchKernel(spin, 1, 1, 1, 1, 1, 1, 0, s, args, nullptr), "spin");
      }
      const auto t0 = Clock::now();
      check(cu.cuCtxResetPersistingL2Cache(), "reset");
      v.push_back(std::chrono::duration<double>(Clock::now() - t0).count() * 1e6);
    }
    check(cu.cuStreamSynchronize(s), "sync");
    return median(v);
  };
  const double idle_us = call_us(false), busy_us = call_us(true);

  fmt::print("cuCtxResetPersistingL2Cache call: {:.1f} us on an idle GPU, {:.1f} us with a ~2 ms kernel queued ({})\n",
             idle_us, busy_us, busy_us > 1000 ? "it waits for the queued work" : "it does not wait for queued work");
  recheck_rows(cu, s, harness, sms, elements, bytes, compare_sources, cc_major, cc_minor, mod);
  return 0;
}
