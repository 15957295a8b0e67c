#pragma once
// How many PyTorch problems a GPU worker keeps warm at once (eval/warm_problems.hpp), and how much
// memory the idle ones may hold: `kagent serve --warm-problems` and `--warm-memory`; `kagent eval`
// with several candidates and `bench --samples` keep the defaults.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kagent {

struct WarmLimits {
  // Problems kept per GPU worker, the one in use included (a reference server each: its Python,
  // torch, CUDA context, the problem's model and loaded kernels; about 0.5-1 GiB of GPU memory and
  // 1-2 GiB of host memory idle). 1: one problem at a time, as a single `kagent eval` needs.
  size_t max_problems = 16;
  // The share of the GPU's memory, and of the host's memory divided among the GPU workers, that the
  // idle problems' servers may hold together; beyond it the least recently used are let go.
  double memory_share = 0.5;
  // Spare reference servers kept ready per GPU worker once it has seen a second problem (a mix):
  // started before their problem is known (the jail, Python, torch, the CUDA context, each library's
  // first kernels), so that a new problem's start is its own file's import and first run only. Each
  // holds a CUDA context and torch (about 0.5 GiB of GPU memory, 1 GiB of host memory), outside
  // the bounds above. 0: every problem starts from nothing.
  size_t spares = 1;
};

// What a GPU's pool of warm problems holds and has done (WarmProblems::stats); a backend reports it
// with its limits (judge::WarmState) to the schedulers and to /health and /metrics.
struct WarmStats {
  size_t warm = 0, starting = 0;      // problems warm, and being started ahead
  std::vector<std::string> problems;  // their keys (warm_key), warm and starting, least recently used first
  std::string current;                // the problem the last evaluation used ("": none)
  uint64_t gpu_bytes = 0, host_bytes = 0;  // held by the idle ones, as last measured
  long started = 0;                        // problems started (a server and its first load), ahead or in turn
  long started_ahead = 0;                  // of those, started on a helper thread before their turn
  long evicted = 0;                        // problems let go to stay within the bounds (least recently used first)
  size_t spares = 0;                       // spare servers ready now (WarmLimits::spares)
  long spares_used = 0;                    // problems started in a spare server
};

}  // namespace kagent
