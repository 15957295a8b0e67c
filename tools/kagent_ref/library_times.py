"""The reference's library calls, each timed alone: what cuBLAS and cuDNN take for this problem's own
matrix products and convolutions (and PyTorch's fused kernels for its attention), so that a model
chooses between a plan's gemm or conv library step and a kernel of its own on numbers, not guesses.

One forward call runs under a dispatch mode (torch.utils._python_dispatch.TorchDispatchMode, what
FlopCounterMode is built on), which sees every aten operator forward reaches. At a library call it
times the call on its own arguments by the baselines' protocol (timing.py: L2 flushed before every
sample, CUDA events, the median) under a short stopping rule, and a convolution a second time with
cuDNN's benchmark mode on: cuDNN then times its algorithms and runs the fastest, as a plan's conv
step picks its own. Then it returns the call's result and forward goes on. Calls with the same
arguments (shapes, dtypes, strides, settings) are timed once and counted. torch is passed in, so the
naming, counting and budget run in tests without it. Each GEMM and convolution also carries the call
as kagent's own plan step (library_steps.py), which kagent-runner times beside it."""

import time

from . import library_steps

# aten operator (the overload packet's name) -> what it is
KINDS = {
    "mm": "gemm", "addmm": "gemm", "bmm": "gemm", "baddbmm": "gemm", "addbmm": "gemm",
    "convolution": "conv", "_convolution": "conv",
    "_scaled_dot_product_flash_attention": "attention", "_scaled_dot_product_efficient_attention": "attention",
    "_scaled_dot_product_cudnn_attention": "attention", "_flash_attention_forward": "attention",
    "_efficient_attention_forward": "attention",
}
# What runs a kind on the GPU, said beside each time.
LIBRARY = {"gemm": "cuBLAS", "conv": "cuDNN", "attention": "PyTorch's fused attention"}

# Short: a forward may make dozens of distinct calls, and these times guide a choice; they are not
# a baseline a reward is scored against.
RULE = {"min_samples": 10, "min_gpu_s": 0.02, "target_rse": 0.01, "max_samples": 200, "max_gpu_s": 0.2,
        "max_wall_s": 1.0}
# The whole measurement's bound: calls met after it are counted but not timed (said in the note).
BUDGET_S = 60.0


def kind_of(op_name):
    """"aten.addmm.default" -> "gemm"; None for an operator that is not a library call."""
    parts = str(op_name).split(".")
    if len(parts) < 2 or parts[0] != "aten":
        return None
    return KINDS.get(parts[1])


def _value_text(v, is_tensor):
    if is_tensor(v):
        dtype = str(v.dtype).replace("torch.", "")
        text = f"[{', '.join(str(int(d)) for d in v.shape)}] {dtype}"
        # Layout decides the library's algorithm: a transposed operand is not the same call.
        if not v.is_contiguous():
            text += f" strides ({', '.join(str(int(s)) for s in v.stride())})"
        return text
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_value_text(x, is_tensor) for x in v) + "]"
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def describe(names, args, kwargs, is_tensor):
    """A call's arguments named by the operator's schema ("input [16, 3, 64, 64] float32, weight ...,
    stride [1, 1], ..."); None arguments left out. `names`: the schema's argument names in order."""
    parts = []
    bound = list(zip(names, args)) + [(k, v) for k, v in kwargs.items()]
    for name, v in bound:
        if v is None:
            continue
        parts.append(f"{name} {_value_text(v, is_tensor)}")
    return ", ".join(parts)


class Recorder:
    """The calls met in one forward: each distinct call once, with how often forward makes it and its
    times; after `budget_s` of timing, calls are still counted but left untimed."""

    def __init__(self, budget_s=BUDGET_S, clock=time.monotonic):
        self.budget_s = budget_s
        self.clock = clock
        self.t0 = clock()
        self.entries = {}
        self.untimed = 0

    def call(self, op, kind, args_text, time_call, step=None):
        """`time_call()` -> {"median_ms": ..., "fastest_ms": ... (a convolution's)}: run only for a call
        not seen before, while the budget lasts. `step`: the call as kagent's plan step
        (library_steps.plan_for), kept with the call's first sight."""
        key = (op, args_text)
        e = self.entries.get(key)
        if e is not None:
            e["calls"] += 1
            return
        e = {"kind": kind, "library": LIBRARY[kind], "op": op, "args": args_text, "calls": 1, "median_ms": None}
        e.update(step or {})
        self.entries[key] = e
        if self.clock() - self.t0 > self.budget_s:
            self.untimed += 1
            return
        e.update(time_call())

    def result(self):
        """{"calls": largest total time first (untimed last), "total_ms": the timed calls' sum over
        forward, "note": what was left out, or None}."""
        calls = sorted(self.entries.values(),
                       key=lambda e: -(e["median_ms"] * e["calls"]) if e["median_ms"] is not None else 0)
        total = sum(e["median_ms"] * e["calls"] for e in calls if e["median_ms"] is not None)
        note = None
        if self.untimed:
            note = (f"{self.untimed} of {len(calls)} distinct calls untimed: the measurement's "
                    f"{self.budget_s:.0f} s were spent")
        return {"calls": calls, "total_ms": total, "note": note}


def measure(torch, run, timer, budget_s=BUDGET_S):
    """Times the library calls one forward call (`run()`) makes: Recorder.result(), or
    {"calls": [], "total_ms": 0, "note": why} when the reference makes none or cannot be followed."""
    try:
        from torch.utils._python_dispatch import TorchDispatchMode
    except ImportError as e:
        return {"calls": [], "total_ms": 0.0, "note": f"this torch has no TorchDispatchMode ({e})"}
    rec = Recorder(budget_s)
    is_tensor = lambda v: isinstance(v, torch.Tensor)  # noqa: E731

    def time_call(kind, func, args, kwargs):
        call = lambda: func(*args, **kwargs)  # noqa: E731
        out = {"median_ms": timer.time(call, RULE)["median_ms"]}
        if kind == "conv":
            before = torch.backends.cudnn.benchmark
            torch.backends.cudnn.benchmark = True
            try:
                out["fastest_ms"] = timer.time(call, RULE)["median_ms"]
            finally:
                torch.backends.cudnn.benchmark = before
        return out

    class Mode(TorchDispatchMode):
        # The mode is off inside this method: the calls it makes (the timing's own flush included)
        # run plainly and are not seen again.
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            kind = kind_of(func)
            if kind is not None:
                names = [a.name for a in func._schema.arguments]
                op = "aten." + str(func).split(".")[1]
                out = func(*args, **kwargs)
                bound = dict(zip(names, args))
                bound.update(kwargs)
                rec.call(op, kind, describe(names, args, kwargs, is_tensor),
                         lambda: time_call(kind, func, args, kwargs), library_steps.plan_for(kind, op, bound, out))
                return out
            return func(*args, **kwargs)

    try:
        with torch.no_grad(), Mode():
            run()
    except Exception as e:  # guidance for the prompt: a model it cannot follow still runs
        first = str(e).splitlines()[0] if str(e) else ""
        return {"calls": [], "total_ms": 0.0,
                "note": f"the library calls were not timed ({type(e).__name__}: {first})"}
    r = rec.result()
    if not r["calls"]:
        r["note"] = "the reference makes no matrix product, convolution or attention call"
    return r
