"""The ModelNew worker: one sandboxed process per evaluation of a KernelBench-style solution file.
kagent starts it in its jail (docs/sandbox.md: no network, writes only to its build folder) and
speaks the reference server's JSON lines (tools/kagent_wire/jsonlines.py has the framing):

  worker -> stdout, once: {"hello": "kagent-modelnew", "version", "torch", "triton", "cuda", "pid"}
  load:   {"solution", "problem", "precision", "seed", "gpu", "inputs": [spec], "outputs": [spec]}
          imports the problem file, snapshots the harness (guard.py), imports the solution (its
          load_inline extensions build here, cached by torch under TORCH_EXTENSIONS_DIR, which
          kagent keys by the solution's hash) and builds ModelNew(*get_init_inputs()) under `seed`,
          the reference's seed, so parameters match the reference's as in KernelBench.
          -> {"build_s", "static": static_check report} or {"ok": false, "build_error": true, ...}
  build:  {"solution"}  only imports the solution, so that its load_inline extensions (and Triton's
          kernels built at import) are in the build folder before its evaluation's worker starts.
          kagent starts this worker without the GPU (no device files, CUDA_VISIBLE_DEVICES empty)
          beside other candidates' timings; a solution whose import needs the GPU fails here and is
          built by its evaluation instead. -> {"build_s"} or {"ok": false, "build_error": true, ...}
  warm:   {"gpu"}  before load, while kagent still measures another candidate on the GPU: the
          imports load makes and the profiler's start-up (CUPTI, which also makes this process's
          CUDA context on `gpu`: seconds that would otherwise fall in the timing request). Nothing
          of the solution or the problem is read, and no kernel runs. -> {"warm_s"}
  buffers: {} -> {"inputs": [IpcTensorRef]}  the worker's input buffers, which kagent-runner fills
          with each trial's inputs from the reference server (no handle crosses between the two)
  trial:  {"inputs": [IpcTensorRef]?, "draws": {"seed", "rng_after"}?}  the reference server's
          tensors for forward's tensor arguments, copied into the worker's own input tensors (the
          same tensors every trial); without "inputs", the buffers already hold them;
          the solution is called once; outputs checked for count, shape and dtype. With "draws"
          (the reference draws random numbers in forward: kagent_ref/draws.py), every call of the
          solution from here on starts from the generator state the reference's forward started
          from (torch.manual_seed(seed)), so torch's own dropout or randn in the solution draws the
          reference's numbers; a call that leaves the generators elsewhere than the reference's
          forward did is noted ("draws_note": why its numbers differ).
          -> {"outputs": [IpcTensorRef], "inputs": [IpcTensorRef], "shape_error": str|null, "draws_note"?}
          kagent-runner compares the outputs with the server's and the inputs with the server's.
  time:   {"stop_rule", "warmup_runs", "warmup_ms", "profile_samples"}  timer.py's protocol on
          the last trial's inputs, then `profile_samples` samples under the profiler (trace.py),
          then one more call whose outputs are exported for the re-check.
          -> {"summary", "warmup", "flush_bytes", "trace", "outputs", "inputs"}
  sample: {"count"}  `count` timed samples (A/B comparisons alternate two workers sample by sample)
          -> {"ms": [...]}
Any request fails with {"ok": false, "error", "traceback"} and, when the solution replaced part of
the harness, "tamper": [what]; a CUDA error that poisons the context also says "sticky": true.
"""

import hashlib
import importlib.util
import itertools
import json
import os
import sys
import time

from kagent_wire import jsonlines

from . import __version__

_counter = itertools.count()


class Tamper(Exception):
    def __init__(self, changed):
        super().__init__("the solution replaced part of the harness: " + ", ".join(changed))
        self.changed = changed


class BuildError(Exception):
    pass


def _phase(text):
    sys.stderr.write(f"kagent-phase: {text}\n")
    sys.stderr.flush()


def _import_file(path, prefix):
    name = f"{prefix}_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _is_build_error(e):
    """load_inline's "Error building extension", a compiler failure, or Triton's compile error."""
    text = f"{type(e).__name__}: {e}"
    kind = type(e).__module__ + "." + type(e).__name__
    return ("Error building extension" in text or "CompilationError" in kind or "subprocess.CalledProcessError" in kind
            or "ninja" in text.lower() and "error" in text.lower())


def _sticky(e):
    text = str(e)
    return any(s in text for s in ("illegal memory access", "illegal instruction", "misaligned address",
                                   "unspecified launch failure", "device-side assert", "an illegal"))


class Worker:
    def __init__(self):
        self.model = None

    # ---- load ---------------------------------------------------------------------------------------
    def load(self, req):
        import torch

        from kagent_ref import numerics as numerics_mod
        from kagent_ref.forward_args import bind
        from kagent_ref.problem import load_module

        from . import guard, static_check, timer, trace
        from kagent_ref import draws
        from kagent_wire import ipc, stats

        self.device = torch.device("cuda", int(req.get("gpu", 0)))
        torch.cuda.set_device(self.device)
        self.precision = req.get("precision", "fp32")
        num = numerics_mod.numerics(self.precision)
        self.dtype = getattr(torch, num["dtype"])
        self.in_specs = req["inputs"]
        self.out_specs = req["outputs"]
        with open(req["solution"], encoding="utf-8") as f:
            source = f.read()
        report = static_check.check_source(source, req["solution"])
        if not report["modelnew"]:
            raise ValueError(f"{req['solution']}: defines no ModelNew")
        _phase(f"importing the problem {req['problem']}")
        problem = load_module(req["problem"])
        # Everything the timer and the replies use is imported above: the snapshot holds the objects
        # the solution could replace from here on.
        self.guard = guard.Snapshot(torch, [timer, trace, ipc, stats, guard, jsonlines, json, draws,
                                            sys.modules[__name__], sys.modules[Worker.__module__]])
        self.guard.pin_numerics()
        _phase(f"importing the solution {req['solution']} (load_inline and Triton build here)")
        t0 = time.monotonic()
        try:
            solution = _import_file(req["solution"], "kagent_solution")
        except Exception as e:
            if _is_build_error(e):
                raise BuildError(f"{type(e).__name__}: {e}") from e
            raise
        import_s = time.monotonic() - t0
        if not hasattr(solution, "ModelNew"):
            raise ValueError(f"{req['solution']}: defines no ModelNew")
        self.check_guard()
        numerics_mod.apply(torch, num)  # after the imports, which could have set them
        self.guard.pin_numerics()
        _phase("building ModelNew(*get_init_inputs()) under the reference's seed")
        seed = int(req.get("seed", 0))
        torch.manual_seed(seed)
        with self.device:
            init = problem.get_init_inputs()
            model = solution.ModelNew(*init).to(self.device)
        if any(p.is_floating_point() for p in model.parameters()):
            model = model.to(self.dtype)
        self.model = model
        # Which forward parameters a call passes: as the reference does, from get_inputs()' values
        # (made here once for their layout; each trial's tensors come from the reference server).
        torch.manual_seed(seed)
        with self.device:
            raw = problem.get_inputs()
        self.binding = bind(model.forward, raw, req["solution"])
        self.tensor_pos = [i for i, v in enumerate(self.binding.values) if isinstance(v, torch.Tensor)]
        if len(self.tensor_pos) != len(self.in_specs):
            raise ValueError(f"ModelNew.forward gets {len(self.tensor_pos)} tensors from get_inputs(); the reference's "
                             f"signature has {len(self.in_specs)}")
        self.values = list(self.binding.values)
        self.inputs = []
        for pos, spec in zip(self.tensor_pos, self.in_specs):
            t = torch.empty(spec["shape"], dtype=ipc.KAGENT_TO_TORCH[spec["dtype"]], device=self.device)
            self.values[pos] = t
            self.inputs.append(t)
        del raw
        self.pristine = [torch.empty_like(t) for t in self.inputs]
        self.draw_seed = None  # set by a trial whose reference draws random numbers in forward
        self.manual_seed = timer.manual_seed  # captured before the solution was imported
        self.draws = draws
        self.timer = timer.Timer(self.device, self.call, self.inputs, self.pristine, self.reseed)
        self.exported = None
        self.check_guard()
        return {"import_s": import_s, "build_s": time.monotonic() - t0, "static": report,
                "source_hash": hashlib.sha256(source.encode()).hexdigest()}

    # ---- warm ---------------------------------------------------------------------------------------
    def warm(self, req):
        if self.model is not None:
            raise RuntimeError("warm after load")
        t0 = time.monotonic()
        _phase("importing what load needs")
        import torch
        import torch.utils.cpp_extension  # noqa: F401  (load_inline's module: most solutions import it)

        from kagent_ref import draws, forward_args, numerics, problem  # noqa: F401
        from kagent_wire import ipc, stats  # noqa: F401

        from . import guard, static_check, timer, trace  # noqa: F401

        _phase("starting the profiler (CUPTI and the CUDA context)")
        torch.cuda.set_device(int(req.get("gpu", 0)))
        activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
        with torch.profiler.profile(activities=activities):
            pass
        return {"warm_s": time.monotonic() - t0}

    # ---- build ahead ---------------------------------------------------------------------------------
    def build(self, req):
        if self.model is not None:
            raise RuntimeError("build after load: a worker either builds ahead or evaluates")
        _phase(f"importing the solution {req['solution']} to build it (no GPU)")
        t0 = time.monotonic()
        try:
            _import_file(req["solution"], "kagent_solution")
        except Exception as e:
            if _is_build_error(e):
                raise BuildError(f"{type(e).__name__}: {e}") from e
            raise
        return {"build_s": time.monotonic() - t0}

    def check_guard(self):
        changed = self.guard.changed()
        if changed:
            raise Tamper(changed)

    def reseed(self):
        """The generator state the reference's forward started from, before a call of the solution
        (the timer calls it outside the timed span): the solution's torch draws are the reference's."""
        if self.draw_seed is not None:
            self.manual_seed(self.draw_seed)

    def call(self):
        out = self.binding.call(self.model, self.values)
        return list(out) if isinstance(out, (tuple, list)) else [out]

    # ---- trial --------------------------------------------------------------------------------------
    def shape_error(self, outs):
        import torch

        from kagent_wire.ipc import KAGENT_TO_TORCH

        if len(outs) != len(self.out_specs):
            return f"ModelNew returned {len(outs)} output(s), the reference {len(self.out_specs)}"
        for i, (o, s) in enumerate(zip(outs, self.out_specs)):
            if not isinstance(o, torch.Tensor):
                return f"output {i} ('{s['name']}') is a {type(o).__name__}, not a tensor"
            if list(o.shape) != list(s["shape"]):
                return f"output {i} ('{s['name']}') has shape {list(o.shape)}, the reference's is {list(s['shape'])}"
            if o.dtype != KAGENT_TO_TORCH[s["dtype"]]:
                return f"output {i} ('{s['name']}') has dtype {o.dtype}, the reference's is {KAGENT_TO_TORCH[s['dtype']]}"
            if o.device != self.device:
                return f"output {i} ('{s['name']}') is on {o.device}, not {self.device}"
        return None

    def export(self, outs):
        import torch

        from kagent_wire.ipc import export

        torch.cuda.synchronize(self.device)
        outs = [o.contiguous() for o in outs]
        self.exported = (outs, self.inputs)
        torch.cuda.synchronize(self.device)
        return {"outputs": [export(s["name"], o) for s, o in zip(self.out_specs, outs)],
                "inputs": [export(s["name"], t) for s, t in zip(self.in_specs, self.inputs)]}

    def buffers(self, req):
        """The worker's input buffers, shared by CUDA IPC: kagent-runner copies each trial's inputs
        from the reference server into them (the two children's pid namespaces differ, and CUDA IPC
        handles do not open across sibling namespaces), then a trial request without inputs runs."""
        import torch

        from kagent_wire.ipc import export

        if self.model is None:
            raise RuntimeError("buffers before load")
        torch.cuda.synchronize(self.device)
        return {"inputs": [export(s["name"], t) for s, t in zip(self.in_specs, self.pristine)]}

    def trial(self, req):
        import torch

        from kagent_wire.ipc import copy_into

        if self.model is None:
            raise RuntimeError("trial before load")
        self.exported = None
        self.timer.last = []
        if "inputs" in req:  # IPC references to copy from; without them kagent-runner has filled the buffers
            copy_into(req["inputs"], self.pristine, self.device)
        for dst, src in zip(self.inputs, self.pristine):
            dst.copy_(src)
        draws = req.get("draws") or {}
        self.draw_seed = int(draws["seed"]) if "seed" in draws else None
        torch.cuda.synchronize(self.device)
        _phase("calling ModelNew on the trial's inputs")
        t0 = time.monotonic()
        self.reseed()
        with torch.no_grad():
            outs = self.call()
        torch.cuda.synchronize(self.device)  # device-wide: work on any stream of the solution is done
        call_ms = (time.monotonic() - t0) * 1e3
        self.check_guard()
        note = None
        if draws.get("rng_after"):
            note = self.draws.fingerprint_note(draws["rng_after"], self.draws.rng_fingerprint(torch, self.device))
        err = self.shape_error(outs)
        if err:
            return {"shape_error": err, "call_ms": call_ms, "draws_note": note}
        reply = self.export(outs)
        reply["call_ms"] = call_ms
        reply["shape_error"] = None
        reply["draws_note"] = note
        return reply

    # ---- time ---------------------------------------------------------------------------------------
    def time(self, req):
        import torch

        from . import trace

        if self.model is None:
            raise RuntimeError("time before trial")
        self.exported = None
        rule = req.get("stop_rule") or {}
        _phase("warm-up")
        warm = self.timer.warm_up(int(req.get("warmup_runs", 3)), float(req.get("warmup_ms", 50.0)),
                                  float(rule.get("max_wall_s", 10.0)), self.check_guard)
        _phase("timed samples")
        summary = self.timer.time(rule, self.check_guard)
        result = {"summary": summary, "warmup": warm, "flush_bytes": self.timer.flush_bytes}
        n = int(req.get("profile_samples", 5))
        if n > 0:
            _phase(f"{n} samples under the profiler")
            import tempfile

            activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
            with torch.profiler.profile(activities=activities) as prof:
                for _ in range(n):
                    self.timer.sample(self.check_guard, marked=True)
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "trace.json")
                prof.export_chrome_trace(path)
                with open(path) as f:
                    result["trace"] = trace.analyze(json.load(f), n)
        _phase("one more call, for the re-check")
        self.timer.sample(self.check_guard)
        outs = self.timer.last
        err = self.shape_error(outs)
        if err:
            raise RuntimeError(f"after timing: {err}")
        result.update(self.export(outs))
        return result

    def sample(self, req):
        if self.model is None:
            raise RuntimeError("sample before trial")
        return {"ms": [self.timer.sample(self.check_guard)[0] for _ in range(int(req.get("count", 1)))]}

    def handle(self, req):
        return jsonlines.dispatch(req, {"load": self.load, "warm": self.warm, "build": self.build, "buffers": self.buffers, "trial": self.trial,
                                        "time": self.time, "sample": self.sample})


def _error_reply(rid, e):
    r = jsonlines.error_reply(rid, e, tail=12)
    if isinstance(e, Tamper):
        r["tamper"] = e.changed
    if isinstance(e, BuildError):
        r["build_error"] = True
    if _sticky(e):
        r["sticky"] = True
    return r


def main():
    out = jsonlines.protocol_out()
    try:
        import triton
        triton_version = triton.__version__
    except Exception:
        triton_version = None
    hello = jsonlines.torch_hello("kagent-modelnew", __version__, triton=triton_version)
    return jsonlines.serve(out, hello, Worker().handle, _error_reply)


if __name__ == "__main__":
    sys.exit(main())
