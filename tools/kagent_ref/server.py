"""The JSON-lines loop (framing as kagent-runner's, include/kagent/protocol/child_client.hpp):

  server -> stdout, once:  {"hello": "kagent-ref", "version", "torch", "cuda", "pid"}
  kagent -> stdin:         {"id": N, "cmd": "load" | "baselines" | "ping", ...}
  server -> stdout:        {"id": N, "ok": true, ...} or {"id": N, "ok": false, "error", "traceback"}
  server -> stderr:        "kagent-phase: <text>" before long steps; anything the problem prints.

load:      {"problem": path, "precision": "fp32"|"tf32"|"fp16"|"bf16", "seed": int, "gpu": int}
           -> {"signature": {"inputs", "draws", "scalars", "params", "outputs"}, "degenerate": str|null,
               "output_stats": [{numel, zeros, zero_share, min, max, min_abs, ...}], "numerics": {"allow_tf32", ...},
               "source_hash", "gpu_name", "torch", "baselines_protocol": PROTOCOL,
               "flops": {"total", "by_op"}|null, "flops_note": str|null}  (flops.py)
trial:     {"seed": int}  inputs made under the seed, the reference run on them, and again in float64
           where that fits (reference64.py); the tensors stay alive until the next trial or load,
           exported by CUDA IPC (kagent_wire/ipc.py)
           -> {"tensors": [{"name", "handle": hex, "offset", "bytes"}, ...],  (signature order, then
               "out@f64", ... for the floating outputs' fp64 twins)
               "fp64_note": str|null,  (why there are no fp64 twins)
               "precision_figures": {"precision", "outputs": [{"tensor", "lower": [{"precision", "rel_l2",
                   "max_abs"}], "note"}]}  the reference at the precisions the problem forbids against
                   its fp64 twins (lower_precision.py), measured on the load's first trial with twins
               "draws": {"seed", "rng_after"}}  only where forward draws random numbers (draws.py): the
               seed of the generator state forward started from (one-way in the trial's seed; a
               ModelNew worker starts each call from it) and the generators' states after it
           The signature's "draws" are those numbers, named with their meaning ("dropout_mult":
           drawn by nn.Dropout(p=0.2) in forward, call 1: ...): inputs of the operator, exported
           after forward's tensors, fresh each trial.
warm:      {"gpu": int, "libraries": bool}  torch imported and this GPU's CUDA context made, running no
           kernel: what a problem started ahead of its turn does before it waits for the GPU to
           itself; with "libraries", also each library's first kernel on tiny tensors (warmup.py), what
           a spare server does before its problem is known -> {}
release:   {}  the last trial's tensors (and load's) let go and torch's cached blocks returned: a
           problem kept warm while others are evaluated holds its model and CUDA context, not a
           trial's inputs and outputs -> {"reserved_bytes": what torch still holds}
baselines: {"cache_dir": path, "refresh": bool, "stop_rule": {...}}
           -> {"eager": summary, "compile": summary|null, "compile_error": str|null, "cached": bool, "key",
               "precision", "numerics": {"allow_tf32", ...}, "gpu_name", "torch", "protocol"}
library_times: {"cache_dir": path, "refresh": bool}  the reference's matrix products, convolutions and
           attention calls, each timed alone on its own arguments (library_times.py); cached as the
           baselines are, under their own protocol
           -> {"calls": [{"kind": "gemm"|"conv"|"attention", "library", "op", "args", "calls",
               "median_ms"|null, "fastest_ms" (a convolution's, cuDNN's fastest algorithm)}],
               "total_ms", "note": str|null, "cached": bool, "key"}

The precision's numerics (numerics.py: TF32 off for fp32, on for tf32) are set at load, before the
reference runs and before the baselines are timed, and are part of the baseline cache key.
"""

import json
import os
import sys

from kagent_wire import jsonlines

from . import __version__, flops, lower_precision

# Bump when how baselines are measured changes. v2: the precision's numerics are pinned (TF32 off
# for fp32) and part of the key; v1 baselines ran fp32 convolutions on TF32 tensor cores.
PROTOCOL = "kagent-ref-baselines-v2"
# Bump when how the library calls are timed changes. v2: each GEMM and convolution carries its plan step.
LIBRARY_PROTOCOL = "kagent-ref-library-times-v2"


def _release_cached_memory():
    """Returns torch's cached, unused GPU blocks to the driver: the runner allocates its own copies
    of the tensors next, and a KernelBench problem's intermediates (several GB) would otherwise
    stay reserved by this process."""
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()
        torch.cuda.empty_cache()


def _write_atomic(path, value):
    """JSON to `path` through a temporary of this process's: concurrent servers never read half a file."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def phase(text):
    sys.stderr.write(f"kagent-phase: {text}\n")
    sys.stderr.flush()


class Server:
    def __init__(self, out):
        self.out = out
        self.problem = None
        self.args = None  # the current trial's forward arguments (load's, then each trial's)
        self.outs = None
        self.exported = None  # the contiguous tensors behind the last trial's IPC handles
        self.seed = 0  # load's: the baselines remake its inputs after a release
        self.figures = None  # the reference at the forbidden precisions (lower_precision.py), once per load

    def warm(self, req):
        import torch

        from . import warmup

        if torch.cuda.is_available():
            gpu = int(req.get("gpu", 0))
            torch.cuda.set_device(gpu)
            torch.cuda.init()
            torch.empty(1, device=f"cuda:{gpu}")  # the context and the allocator; no kernel runs
            if req.get("libraries"):
                phase("running the libraries' first kernels")
                warmup.modules()
                warmup.first_kernels(torch, torch.device("cuda", gpu))
                _release_cached_memory()
        return {}

    def release(self, req):
        import torch

        self.args, self.outs, self.exported = None, None, None
        if self.problem is not None:
            self.problem.draws = []
        _release_cached_memory()
        return {"reserved_bytes": torch.cuda.memory_reserved() if torch.cuda.is_available() else 0}

    def load(self, req):
        import torch

        from .problem import Problem, degenerate, output_stats

        phase(f"importing {req['problem']}")
        gpu = int(req.get("gpu", 0))
        self.problem, self.args, self.outs, self.exported = None, None, None, None  # free the last problem's memory
        self.figures = None
        self.seed = int(req.get("seed", 0))
        self.problem = Problem(req["problem"], req.get("precision", "fp32"), self.seed, gpu)
        phase("running the reference once")
        self.args, self.outs = self.problem.trial(self.seed)
        stats = output_stats(self.outs)
        reply = {
            "signature": self.problem.signature(self.args, self.outs),
            "degenerate": degenerate(stats),
            "output_stats": stats,
            "numerics": self.problem.flags,
            "source_hash": self.problem.source_hash,
            "gpu_name": torch.cuda.get_device_name(gpu) if torch.cuda.is_available() else "cpu",
            "torch": torch.__version__,
            "baselines_protocol": PROTOCOL,  # what a shared baselines file's entries must have been measured by
        }
        # One more forward call, under PyTorch's FLOP counter: the compute floor beside the memory floor.
        phase("counting the reference's FLOPs")
        reply["flops"], reply["flops_note"] = flops.count(torch, lambda: self.problem.call(self.problem.model, self.args))
        _release_cached_memory()
        return reply

    def trial(self, req):
        import torch

        from kagent_wire.ipc import export

        if self.problem is None:
            raise RuntimeError("trial before load")
        seed = int(req["seed"])
        phase(f"making inputs (seed {seed}) and running the reference")
        self.args, self.outs, self.exported = None, None, None  # at most one trial's tensors alive
        self.args, self.outs = self.problem.trial(seed)
        phase(f"running the reference in float64 (seed {seed})")
        named64, note = self.problem.fp64_outputs(self.args, self.outs)
        if self.figures is None and named64:
            phase("running the reference at the precisions the problem forbids")
            self.figures = lower_precision.measure(torch, self.problem, self.args, self.outs, named64)
        self.exported = self.problem.named_tensors(self.args, self.outs) + named64
        torch.cuda.synchronize()  # the runner reads these as soon as it has the handles
        phase(f"releasing cached memory and exporting (seed {seed})")
        _release_cached_memory()
        reply = {"tensors": [export(name, t) for name, t in self.exported], "fp64_note": note}
        if self.figures is not None:
            reply["precision_figures"] = self.figures
        if self.problem.draws:
            reply["draws"] = {"seed": self.problem.draw_seed, "rng_after": self.problem.rng_after}
        return reply

    def _timed(self, req, protocol, folder, stop_rule, what):
        """The loaded problem made ready for a timed measurement (its inputs remade after a release,
        the precision's numerics pinned: eager, torch.compile's inductor and the libraries read the
        same switches as the reference) and where that measurement is cached under `folder`:
        (problem, numerics flags, key, path, the cached result or None)."""
        import torch

        from .numerics import baseline_key

        if self.problem is None:
            raise RuntimeError(f"{folder} before load")
        if not torch.cuda.is_available():
            raise RuntimeError(f"torch sees no GPU: {what} need one")
        p = self.problem
        if self.args is None:  # released since load: the same inputs again
            self.args = p.inputs(self.seed)
        flags = p.pin_numerics()
        key = baseline_key(protocol, p.source_hash, p.precision, flags, torch.cuda.get_device_name(p.device),
                           torch.__version__, stop_rule)
        path = os.path.join(req["cache_dir"], folder, key + ".json")
        cached = None
        if not req.get("refresh") and os.path.exists(path):
            with open(path) as f:
                cached = json.load(f)
            cached["cached"] = True
        return p, flags, key, path, cached

    def baselines(self, req):
        import torch

        from .timing import Timer

        p, flags, key, path, cached = self._timed(req, PROTOCOL, "baselines", req.get("stop_rule"), "baselines")
        if cached is not None:
            cached["protocol"] = PROTOCOL  # the key has it
            return cached

        timer = Timer(p.device)
        phase("timing torch eager")
        eager = timer.time(lambda: p.call(p.model, self.args), req.get("stop_rule"))
        compiled, compile_error, cm = None, None, None
        try:
            phase("compiling with torch.compile")
            cm = torch.compile(p.model)
            with torch.no_grad():
                p.call(cm, self.args)  # compilation happens here, outside the timing
            torch.cuda.synchronize()
            phase("timing torch.compile")
            compiled = timer.time(lambda: p.call(cm, self.args), req.get("stop_rule"))
        except Exception as e:  # a model torch.compile cannot handle still has an eager baseline
            compile_error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
        result = {"eager": eager, "compile": compiled, "compile_error": compile_error, "key": key,
                  "gpu_name": torch.cuda.get_device_name(p.device), "torch": torch.__version__,
                  "precision": p.precision, "numerics": flags, "flush_bytes": timer.flush_bytes, "cached": False,
                  "protocol": PROTOCOL}
        del cm, timer
        _release_cached_memory()
        _write_atomic(path, result)
        return result

    def library_times(self, req):
        import torch

        from . import library_times
        from .timing import Timer

        # Under fp32 the GEMMs and convolutions run without TF32, as the reference's do.
        p, _, key, path, cached = self._timed(req, LIBRARY_PROTOCOL, "library_times", None, "library timings")
        if cached is not None:
            return cached
        phase("timing the reference's library calls")
        timer = Timer(p.device)
        result = library_times.measure(torch, lambda: p.call(p.model, self.args), timer)
        result.update({"key": key, "cached": False})
        del timer
        _release_cached_memory()
        _write_atomic(path, result)
        return result

    def handle(self, req):
        return jsonlines.dispatch(req, {"load": self.load, "baselines": self.baselines, "trial": self.trial,
                                        "warm": self.warm, "release": self.release,
                                        "library_times": self.library_times})


def main():
    out = jsonlines.protocol_out()
    server = Server(out)
    return jsonlines.serve(out, jsonlines.torch_hello("kagent-ref", __version__), server.handle)
