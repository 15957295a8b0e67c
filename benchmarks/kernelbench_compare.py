#!/usr/bin/env python3
"""kagent beside KernelBench's own harness, on the same GPU in the same session. Needs torch and
a GPU, and KernelBench's timing module (src/kernelbench/timing.py of ScalingIntelligence/KernelBench,
fetched by the user, never part of kagent): it is loaded from --kb-timing as a standalone module.

  baselines   For each problem: KernelBench's reference timing (time_execution_with_cuda_event,
              5 warm-up, 100 trials, its 256 MB write flush, as measure_ref_program_time runs it)
              and kagent's eager baseline (`kagent ref --refresh --json`); the ratio of medians.
  load-inline The time KernelBench's evaluation spends on one candidate built with
              torch.utils.cpp_extension.load_inline: the build (fresh build folder, as for every new
              candidate), 5 correctness trials and 100 timed trials, each phase timed by wall clock.
              Compare with `eval_latency --pytorch` for the same problem (kagent, server warm).

Usage: kernelbench_compare.py baselines --kagent build/kagent --kb-timing timing.py PROBLEM.py...
       kernelbench_compare.py load-inline --kb-timing timing.py PROBLEM.py   (a ReLU problem)
"""

import argparse
import contextlib
import importlib.util
import io
import json
import statistics
import subprocess
import sys
import tempfile
import time

import torch


def load_kb_timing(path):
    spec = importlib.util.spec_from_file_location("kb_timing", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def load_problem(path):
    spec = importlib.util.spec_from_file_location("kb_problem", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kb_setup(problem, device):
    """As measure_ref_program_time: seed 42, inputs and model on the device, fp32. The inputs are drawn
    on the GPU directly (KernelBench draws them on the CPU and copies): same tensors' shapes, and
    minutes less on 6 GB inputs; the timing does not depend on where they were drawn."""
    torch.manual_seed(42)
    with torch.device(device):
        inputs = problem.get_inputs()
    torch.manual_seed(42)
    model = problem.Model(*problem.get_init_inputs()).to(device)
    return model, inputs


def quiet(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def baselines(args):
    kb = load_kb_timing(args.kb_timing)
    device = torch.device("cuda:0")
    rows = []
    for path in args.problems:
        problem = load_problem(path)
        model, inputs = kb_setup(problem, device)
        with torch.no_grad():
            times = quiet(kb.time_execution_with_cuda_event, model, inputs, num_warmup=5, num_trials=100,
                          discard_first=1, verbose=False, device=device)
        stats = kb.get_timing_stats(times, device=device)
        del model, inputs
        torch.cuda.empty_cache()  # the GPU memory goes back before kagent's server needs it
        r = subprocess.run([args.kagent, "ref", path, "--refresh", "--json"], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{path}: kagent ref failed ({r.returncode}): {r.stderr.strip()[-500:]}", file=sys.stderr)
            continue
        ref = json.loads(r.stdout)
        eager = ref["eager"]
        compiled = ref.get("compile") or {}
        rows.append((path.rsplit("/", 1)[-1], stats["mean"], statistics.median(times), stats["std"], eager["median_ms"],
                     eager["n"], compiled.get("median_ms")))
    print("KernelBench reference timing vs kagent eager baseline (ms; same GPU, same session)")
    print(f"{'problem':42} {'KB mean':>9} {'KB median':>10} {'KB std':>8} {'kagent':>9} {'n':>5} "
          f"{'kagent/KB':>10} {'compile':>9}")
    for name, mean, med, std, k, n, c in rows:
        print(f"{name:42} {mean:9.4f} {med:10.4f} {std:8.4f} {k:9.4f} {n:5d} {k / med:10.4f} "
              f"{(f'{c:9.4f}' if c else '        -')}")


RELU_CPP = "torch::Tensor relu_forward(torch::Tensor x);"
RELU_CU = r"""
#include <torch/extension.h>
__global__ void relu_kernel(const float* __restrict__ x, float* __restrict__ out, long long n) {
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  long long stride = (long long)gridDim.x * blockDim.x;
  for (; i < n; i += stride) out[i] = fmaxf(x[i], 0.0f);
}
torch::Tensor relu_forward(torch::Tensor x) {
  auto out = torch::empty_like(x);
  long long n = x.numel();
  relu_kernel<<<132 * 8, 256>>>(x.data_ptr<float>(), out.data_ptr<float>(), n);
  return out;
}
"""


def load_inline_latency(args):
    """KernelBench's path for one candidate: build, check, time (eval_kernel_against_ref's phases)."""
    from torch.utils.cpp_extension import load_inline

    kb = load_kb_timing(args.kb_timing)
    device = torch.device("cuda:0")
    problem = load_problem(args.problems[0])
    phases = {}
    t_all = time.perf_counter()
    t = time.perf_counter()
    with tempfile.TemporaryDirectory() as build:
        ext = quiet(load_inline, name="relu_candidate", cpp_sources=RELU_CPP, cuda_sources=RELU_CU,
                    functions=["relu_forward"], build_directory=build, verbose=False)
        phases["build (load_inline)"] = time.perf_counter() - t

        t = time.perf_counter()
        torch.manual_seed(42)
        seeds = [torch.randint(0, 2**32 - 1, (1,)).item() for _ in range(5)]
        torch.manual_seed(42)
        model = problem.Model(*problem.get_init_inputs()).to(device)
        ok = True
        with torch.no_grad():
            for s in seeds:
                torch.manual_seed(s)
                with torch.device(device):
                    inputs = problem.get_inputs()
                ref = model(*inputs)
                new = ext.relu_forward(*inputs)
                torch.cuda.synchronize()
                ok = ok and bool(torch.allclose(ref, new, atol=1e-4, rtol=1e-4))
                del ref, new
        phases["correctness (5 trials)"] = time.perf_counter() - t

        t = time.perf_counter()
        with torch.no_grad():
            times = quiet(kb.time_execution_with_cuda_event, ext.relu_forward, inputs, num_warmup=3,
                          num_trials=100, discard_first=1, verbose=False, device=device)
        phases["timing (100 trials)"] = time.perf_counter() - t
    phases["total"] = time.perf_counter() - t_all
    print(f"KernelBench-style evaluation of a load_inline ReLU on {args.problems[0].rsplit('/', 1)[-1]} "
          f"(correct: {ok}, kernel median {statistics.median(times):.4f} ms)")
    for k, v in phases.items():
        print(f"  {k:28} {v:8.2f} s")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["baselines", "load-inline"])
    ap.add_argument("problems", nargs="+")
    ap.add_argument("--kagent", default="build/kagent")
    ap.add_argument("--kb-timing", required=True, help="KernelBench's src/kernelbench/timing.py")
    args = ap.parse_args()
    if args.what == "baselines":
        baselines(args)
    else:
        load_inline_latency(args)


if __name__ == "__main__":
    main()
