"""The harness's primitives, captured before a solution is imported, and the check that they are
still the ones in place after every call of the solution.

A ModelNew file is Python running in the worker's process: it can replace torch.cuda.Event, its
record or elapsed_time, torch.cuda.synchronize, time.perf_counter, a tensor method the timer uses,
the TF32 switches, or a function of the worker itself. The timer calls the objects captured here
(never a lookup that goes through a module or class at call time), so a replacement does not
change a measurement; and Snapshot.changed() names every replacement, which fails the evaluation
("tamper"), so a solution that tries cannot be scored at all.

What this cannot stop is code below Python (a load_inline extension or ctypes writing the worker's
memory or its reply pipe): the solution's process is its own. The comparison of outputs therefore
never runs here (kagent-runner does it, on tensors exported by CUDA IPC), and the worker runs in
kagent's sandbox (no network, writes only to its build folder).
"""

import time

MISSING = object()


def static_lookup(obj, name):
    """The attribute as stored (no descriptor binding, no __getattr__): a class's own or its bases'
    __dict__ entry, a module's or instance's __dict__ entry. Two lookups of an unchanged attribute
    return the identical object, which getattr does not promise for bound or class methods."""
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if name in klass.__dict__:
                return klass.__dict__[name]
        return MISSING
    d = getattr(obj, "__dict__", None)
    if d is not None and name in d:
        return d[name]
    return getattr(obj, name, MISSING)


def _harness_targets(torch, modules):
    """(label, owner, attribute) for everything the timer, the trace, the IPC export and the
    reply path call."""
    t = [
        ("torch.cuda.Event", torch.cuda, "Event"),
        ("torch.cuda.Stream", torch.cuda, "Stream"),
        ("torch.cuda.synchronize", torch.cuda, "synchronize"),
        ("torch.cuda.current_stream", torch.cuda, "current_stream"),
        ("torch.cuda.set_device", torch.cuda, "set_device"),
        ("torch.cuda._sleep", torch.cuda, "_sleep"),
        ("torch.cuda.Event.__init__", torch.cuda.Event, "__init__"),
        ("torch.cuda.Event.__new__", torch.cuda.Event, "__new__"),
        ("torch._C._cuda_synchronize", torch._C, "_cuda_synchronize"),
        ("torch.profiler.profile", torch.profiler, "profile"),
        ("torch.profiler.record_function", torch.profiler, "record_function"),
        ("torch.no_grad", torch, "no_grad"),
        ("torch.empty", torch, "empty"),
        ("torch.empty_like", torch, "empty_like"),
        ("torch.zeros", torch, "zeros"),
        ("torch.as_tensor", torch, "as_tensor"),
        ("time.perf_counter", time, "perf_counter"),
        ("time.monotonic", time, "monotonic"),
    ]
    for m in ("record", "elapsed_time", "synchronize", "query", "wait"):
        t.append((f"torch.cuda.Event.{m}", torch.cuda.Event, m))
    for m in ("copy_", "fill_", "sum", "contiguous", "clone", "view", "reshape", "data_ptr", "numel",
              "element_size", "is_contiguous", "is_floating_point", "__class__"):
        t.append((f"torch.Tensor.{m}", torch.Tensor, m))
    for mod in modules:
        for name, value in sorted(vars(mod).items()):
            if callable(value) and not name.startswith("__"):
                t.append((f"{mod.__name__}.{name}", mod, name))
    return t


def _numerics(torch):
    """The numerics switches a solution must not turn (issue 10's precision policy)."""
    return {
        "torch.backends.cuda.matmul.allow_tf32": bool(torch.backends.cuda.matmul.allow_tf32),
        "torch.backends.cudnn.allow_tf32": bool(torch.backends.cudnn.allow_tf32),
        "torch.get_float32_matmul_precision()": torch.get_float32_matmul_precision(),
        "torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction":
            bool(torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction),
        "torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction":
            bool(torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction),
    }


class Snapshot:
    def __init__(self, torch, modules):
        self._torch = torch
        self._targets = _harness_targets(torch, modules)
        self._objects = [static_lookup(owner, attr) for _, owner, attr in self._targets]
        self._numerics = None

    def pin_numerics(self):
        """Records the numerics switches as set now (after the precision is applied)."""
        self._numerics = _numerics(self._torch)

    def changed(self):
        """Labels of the harness objects replaced since the snapshot and numerics switches turned
        since pin_numerics(), in a stable order; empty when nothing changed."""
        out = [label for (label, owner, attr), obj in zip(self._targets, self._objects)
               if static_lookup(owner, attr) is not obj]
        if self._numerics is not None:
            now = _numerics(self._torch)
            out += [f"{k} (was {v}, now {now[k]})" for k, v in self._numerics.items() if now[k] != v]
        return out
