"""A PyTorch reference operator: a KernelBench-style file with Model, get_inputs and
get_init_inputs, imported in isolation and built under a seed (docs/candidate.md names)."""

import hashlib
import importlib.util
import itertools
import sys

import torch

from . import draws as draws_mod
from . import numerics as numerics_mod
from . import reads as reads_mod
from .forward_args import BindError, bind
from .reference64 import Reference64

# kagent's dtype names (src/spec/dtype.cpp).
TORCH_TO_KAGENT = {
    torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16", torch.float64: "f64",
    torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.uint8: "u8",
    torch.bool: "bool",
}

_counter = itertools.count()


class ProblemError(Exception):
    """A problem the server cannot run or express; the message says why."""


def load_module(path):
    """Imports the file under a fresh module name, so two problems never share globals."""
    name = f"kagent_problem_{next(_counter)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ProblemError(f"{path}: cannot be imported as a Python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        sys.modules.pop(name, None)
    for attr in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(module, attr):
            raise ProblemError(f"{path}: defines no {attr} (a KernelBench problem file defines Model, "
                               "get_inputs and get_init_inputs)")
    return module


def _cast(x, dtype, device):
    """Floating tensors go to the precision under test; integer tensors keep their type."""
    if isinstance(x, torch.Tensor):
        x = x.to(device)
        return x.to(dtype) if x.is_floating_point() else x
    return x


def _spec(name, t):
    if t.dtype not in TORCH_TO_KAGENT:
        raise ProblemError(f"tensor '{name}' has dtype {t.dtype}, which kagent cannot pass to a kernel")
    return {"name": name, "shape": list(t.shape), "dtype": TORCH_TO_KAGENT[t.dtype]}


class Problem:
    def __init__(self, path, precision="fp32", seed=0, device=0):
        try:
            self.numerics = numerics_mod.numerics(precision)
        except ValueError as e:
            raise ProblemError(str(e)) from None
        self.path = path
        with open(path, "rb") as f:
            self.source_hash = hashlib.sha256(f.read()).hexdigest()
        self.precision = precision
        self.dtype = getattr(torch, self.numerics["dtype"])
        self.device = torch.device("cuda", device) if torch.cuda.is_available() else torch.device("cpu")
        if self.device.type == "cuda":
            # The current device, not only the default one for new tensors: streams, events, the IPC
            # export's driver calls and torch.compile's kernels all follow it.
            torch.cuda.set_device(self.device)
        self.module = load_module(path)
        torch.manual_seed(seed)
        # Built under the GPU as default device: parameters are created there, not copied over.
        with self.device:
            init = self.module.get_init_inputs()
            self.model = self.module.Model(*init).to(self.device)
        if any(p.is_floating_point() for p in self.model.parameters()):
            self.model = self.model.to(self.dtype)
        # No .eval(): KernelBench runs its references in the default (training) mode, and kagent's
        # baselines and outputs must be the ones KernelBench users compare against (BatchNorm
        # normalizes with batch statistics in training mode).
        self.binding = None  # which forward parameters a call passes (forward_args.py), set by inputs()
        self.reference64 = None  # the fp64 twin, made on the first trial (reference64.py)
        # The random numbers the last trial's forward drew (draws.py), named; the seed of the
        # generator state that forward started from and the generators' states after it.
        self.draws = []
        self.draw_layout = None  # what the first trial drew (draws.layout): every later trial must draw the same
        self.draw_seed = None
        self.rng_after = None
        self.flags = self.pin_numerics()

    def pin_numerics(self):
        """Sets torch's TF32 switches for this precision (numerics.py) and returns them as in effect.
        Called after the problem file is imported (which could set them itself) and again before each
        trial and the baselines."""
        return numerics_mod.apply(torch, self.numerics)

    @property
    def arg_names(self):
        return self.binding.names if self.binding else []

    def inputs(self, seed):
        """The forward arguments for one trial, made by get_inputs() under `seed`, on the GPU, followed
        by the defaults of the parameters get_inputs() leaves out (as `model(*get_inputs())` uses them)."""
        torch.manual_seed(seed)
        # Under the GPU as default device, get_inputs()' torch.rand/randn make the tensors on the GPU:
        # a KernelBench input of several GB is never drawn on the CPU and copied.
        with self.device:
            raw = self.module.get_inputs()
        try:
            binding = bind(self.model.forward, raw, self.path)
        except BindError as e:
            raise ProblemError(str(e)) from None
        if self.binding is not None and binding.names != self.binding.names:
            raise ProblemError(f"{self.path}: get_inputs() returned different arguments for another seed "
                               f"({', '.join(binding.names)} instead of {', '.join(self.binding.names)})")
        self.binding = binding
        return [_cast(x, self.dtype, self.device) for x in binding.values]

    def trial(self, seed):
        """Inputs for `seed` and the reference's outputs on them. A forward that modifies its inputs in
        place (torch bumps a tensor's version) gets its inputs made afresh: the candidate must see
        what the reference saw. The forward starts from the generator state of draws.draw_seed(seed),
        and what it draws is recorded (self.draws)."""
        self.flags = self.pin_numerics()
        args = self.inputs(seed)
        versions = [a._version if isinstance(a, torch.Tensor) else None for a in args]
        self.draws = []  # the last trial's, freed before this one draws its own
        self.draw_seed = draws_mod.draw_seed(seed)
        torch.manual_seed(self.draw_seed)
        outs, draws = self.run(args, record=True)
        self.rng_after = draws_mod.rng_fingerprint(torch, self.device)
        self.draws = self.name_draws(draws, args, outs)
        if any(isinstance(a, torch.Tensor) and a._version != v for a, v in zip(args, versions)):
            args = self.inputs(seed)
        return args, outs

    def name_draws(self, draws, args, outs):
        """Names the draws (draws.py) apart from the operator's other tensors; every trial must draw
        what the first one did (the candidate's inputs are fixed at load)."""
        taken = [n for n, a in zip(self.arg_names, args) if isinstance(a, torch.Tensor)]
        taken += [k.replace(".", "_") for k in self.model.state_dict()] + self.output_names(outs)
        draws_mod.name_draws(draws, taken)
        lay = draws_mod.layout(draws)
        if self.draw_layout is None:
            self.draw_layout = lay
        elif lay != self.draw_layout:
            raise ProblemError(f"{self.path}: forward drew other random tensors for another seed "
                               f"({draws_mod.layout_text(lay)} instead of {draws_mod.layout_text(self.draw_layout)})")
        return draws

    def output_names(self, outs):
        return ["out"] if len(outs) == 1 else [f"out{i}" for i in range(len(outs))]

    def fp64_outputs(self, args, outs):
        """The trial's outputs computed in float64 as (name@f64, tensor) pairs, and why not (or None)."""
        if self.reference64 is None:
            self.reference64 = Reference64(self.model, self.device)
        return self.reference64.run(args, outs, self.output_names(outs), self.draws, self.call)

    def named_tensors(self, args, outs):
        """(name, tensor) for every tensor a candidate sees, in signature order: forward's tensors,
        the last trial's draws, the state_dict's, then the outputs; each contiguous (a copy when it
        was not)."""
        named = [(n, a) for n, a in zip(self.arg_names, args) if isinstance(a, torch.Tensor)]
        named += [(d.name, d.tensor.to(self.device)) for d in self.draws]
        named += [(k.replace(".", "_"), v) for k, v in self.model.state_dict().items()]
        named += list(zip(self.output_names(outs), outs))
        return [(n, t.contiguous()) for n, t in named]

    def call(self, model, args):
        """model called on one trial's arguments as KernelBench calls it (defaults by keyword)."""
        return self.binding.call(model, args)

    @torch.no_grad()
    def run(self, args, record=False):
        """The outputs of one forward call; with `record`, (outputs, the draws it made: draws.py)."""
        if record:
            rec = draws_mod.recorder(torch, self.model, self.path, lambda dt: TORCH_TO_KAGENT.get(dt, str(dt)))
            with rec:
                out = self.call(self.model, args)
        else:
            out = self.call(self.model, args)
        outs = list(out) if isinstance(out, (tuple, list)) else [out]
        for i, o in enumerate(outs):
            if not isinstance(o, torch.Tensor):
                raise ProblemError(f"{self.path}: forward returns a {type(o).__name__} as output {i}; "
                                   "kagent compares tensors only")
        return (outs, rec.draws) if record else outs

    def signature(self, args, outs):
        """Names, shapes and dtypes as the candidate sees them (docs/candidate.md); "draws" are the
        tensors forward draws (draws.py), inputs of the operator with their meaning, which a
        ModelNew solution draws itself."""
        inputs, scalars = [], []
        for name, a in zip(self.arg_names, args):
            if isinstance(a, torch.Tensor):
                inputs.append(_spec(name, a))
            elif isinstance(a, (bool, int, float)):
                scalars.append({"name": name, "value": a, "type": type(a).__name__})
            else:
                raise ProblemError(f"{self.path}: forward argument '{name}' is a {type(a).__name__}; kagent "
                                   "passes tensors and int/float/bool scalars only")
        params = [_spec(k.replace(".", "_"), v) for k, v in self.model.state_dict().items()]
        # What forward never reads (a layer it never calls, an argument it ignores): one more forward
        # call under torch's dispatch mode, its random numbers drawn from a forked generator.
        devices = [self.device.index] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices):
            seen = reads_mod.storages_read(torch, lambda: self.run(args))
        named = [(n, a) for n, a in zip(self.arg_names, args) if isinstance(a, torch.Tensor)]
        named += [(k.replace(".", "_"), v) for k, v in self.model.state_dict().items()]
        unread = reads_mod.unread(named, seen)
        for spec in inputs + params:
            if spec["name"] in unread:
                spec["unread"] = True
        drawn = [dict(d.spec(), **_spec(d.name, d.tensor)) for d in self.draws]
        names = [o["name"] for o in inputs + drawn + params]
        out_names = self.output_names(outs)
        outputs = [_spec(n, o) for n, o in zip(out_names, outs)]
        clash = sorted(set(names) & set(out_names)) + sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise ProblemError(f"{self.path}: tensor names collide: {', '.join(clash)}")
        return {"inputs": inputs, "draws": drawn, "scalars": scalars, "params": params, "outputs": outputs}


def output_stats(outs):
    """Per output: numel, exact zeros, their share, and the smallest, largest and smallest-magnitude
    finite values (None when there are none): what the degenerate and weak-reference checks need
    (src/protocol/reference_quality.cpp). Works through each output in chunks: a whole-tensor mask and
    copy of a 7 GB output would need three times its size."""
    chunk = 1 << 26
    stats = []
    for o in outs:
        flat = o.reshape(-1)
        lo, hi, small, big, seen, zeros = float("inf"), float("-inf"), float("inf"), 0.0, 0, 0
        for start in range(0, flat.numel(), chunk):
            c = flat[start:start + chunk].float()
            zeros += int((c == 0).sum().item())
            c = c[torch.isfinite(c)]
            if c.numel() == 0:
                continue
            seen += c.numel()
            lo, hi = min(lo, c.min().item()), max(hi, c.max().item())
            a = c.abs()
            big, small = max(big, a.max().item()), min(small, a.min().item())
        n = flat.numel()
        stats.append({"numel": n, "zeros": zeros, "zero_share": zeros / n if n else 0.0, "finite": seen,
                      "min": lo if seen else None, "max": hi if seen else None,
                      "min_abs": small if seen else None, "max_abs": big if seen else None})
    return stats


def degenerate(stats):
    """Why the reference cannot tell a correct kernel from an empty one, or None (output_stats())."""
    reasons = []
    for i, s in enumerate(stats):
        if not s["finite"]:
            continue
        if s["max_abs"] <= 1e-6:
            reasons.append(f"output {i} is all (near) zero")
        elif s["finite"] > 1 and s["min"] == s["max"]:
            reasons.append(f"output {i} is constant ({s['min']:.6g})")
    return "; ".join(reasons) or None
