#!/usr/bin/env python3
"""device_peaks: the roofs kagent measures for the roofline (a device-to-device copy and an FP32
matrix product, kagent-runner's "peaks" request) side by side with the same operations timed by
PyTorch in this process (tensor.copy_ of the same size; torch.mm in full FP32, TF32 off), and what
measuring them costs a `kagent profile` (first call: measured; second: read from the cache).

Usage: device_peaks.py [--kagent build/kagent]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def profile(kagent, env, *extra):
    t0 = time.monotonic()
    r = subprocess.run([kagent, "profile", os.path.join(HERE, "examples/vector_add/cand_naive.cu"), "--op",
                        os.path.join(HERE, "benchmarks/ops/big_add/op.json"), "--json", *extra],
                       capture_output=True, text=True, env=env)
    wall = time.monotonic() - t0
    if r.returncode != 0:
        raise SystemExit(f"kagent profile failed ({r.returncode}): {r.stderr[-2000:]}")
    return json.loads(r.stdout), wall


def torch_median_ms(fn, reps=9, warmup=2):
    import torch
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kagent", default="build/kagent")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, KAGENT_CACHE_DIR=cache)
        first, first_s = profile(args.kagent, env)
        second, second_s = profile(args.kagent, env)
    p = first.get("peaks")
    if not p:
        raise SystemExit(f"no peaks: {first.get('peaks_note')}")
    assert second["peaks"]["cached"], "the second profile measured the peaks again"

    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    n_copy = p["copy_bytes"] // 4
    src, dst = torch.ones(n_copy, device="cuda"), torch.empty(n_copy, device="cuda")
    copy_ms = torch_median_ms(lambda: dst.copy_(src))
    del src, dst
    n = p["gemm_n"]
    a, b = torch.rand(n, n, device="cuda") * 2 - 1, torch.rand(n, n, device="cuda") * 2 - 1
    mm_ms = torch_median_ms(lambda: torch.mm(a, b))
    torch_gbs = 2 * p["copy_bytes"] / (copy_ms * 1e-3) / 1e9
    torch_gflops = 2 * n ** 3 / (mm_ms * 1e-3) / 1e9

    print(f"device: {p['gpu']} ({p['uuid']}); method {p['method']}")
    fmt = "{:44} {:>12} {:>12} {:>9}"
    print(fmt.format("figure", "kagent", "torch", "ratio"))
    print(fmt.format(f"device-to-device copy {p['copy_bytes'] >> 20} MiB, GB/s", f"{p['copy_gbs']:.0f}",
                     f"{torch_gbs:.0f}", f"{p['copy_gbs'] / torch_gbs:.3f}"))
    print(fmt.format(f"FP32 matrix product {n}^3 ({p['gemm_by']}), GFLOP/s", f"{p['fp32_gflops']:.0f}",
                     f"{torch_gflops:.0f}", f"{p['fp32_gflops'] / torch_gflops:.3f}"))
    print(fmt.format("  cuBLAS in the runner, GFLOP/s", f"{p['cublas_gflops']:.0f}", "", ""))
    print(fmt.format("  kagent_peak_sgemm, GFLOP/s", f"{p['kagent_sgemm_gflops']:.0f}", "",
                     f"{p['kagent_sgemm_gflops'] / torch_gflops:.3f}"))
    print(fmt.format("theoretical DRAM GB/s (memory clock x bus)", f"{p['theoretical_gbs']:.0f}", "",
                     f"{p['copy_gbs'] / p['theoretical_gbs']:.3f}"))
    print(fmt.format("theoretical FP32 GFLOP/s (max clock)", f"{p['theoretical_gflops']:.0f}", "",
                     f"{p['fp32_gflops'] / p['theoretical_gflops']:.3f}"))
    print(fmt.format("kagent profile wall s: peaks measured", f"{first_s:.2f}", "", ""))
    print(fmt.format("kagent profile wall s: peaks cached", f"{second_s:.2f}", "", ""))
    if p.get("gemm_note"):
        print("note:", p["gemm_note"])
    print("\nbig_add compact profile (peaks cached):")
    r = subprocess.run([args.kagent, "profile", os.path.join(HERE, "examples/vector_add/cand_naive.cu"), "--op",
                        os.path.join(HERE, "benchmarks/ops/big_add/op.json"), "--compact"], capture_output=True,
                       text=True)
    print(r.stdout)


if __name__ == "__main__":
    main()
