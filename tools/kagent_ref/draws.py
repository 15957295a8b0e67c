"""Random numbers a reference draws inside forward, made inputs of the operator.

A few KernelBench problems compute their output from numbers forward draws itself, which no
candidate can see: nn.Dropout (active, since KernelBench runs models in training mode) and
torch.randn for an LSTM's h0/c0 (level2/66, level2/83, level3/35). The reference server records
every draw of one forward call (Recorder: a TorchDispatchMode sees each random aten op, those in
RANDOM_OPS, after its decomposition) and hands each to the candidate as a named input, in call
order, with what it means:

  - a dropout (aten.native_dropout, what nn.Dropout and F.dropout run on the GPU) becomes its
    0-or-1/(1-p) multiplier in the dropout input's dtype: the reference's output is the input
    times it, element by element (the fused kernel computes src * mask * scale);
  - a tensor made by a random factory (torch.randn, rand, randint, normal, ...) is the tensor;
  - a tensor filled in place (Tensor.bernoulli_, normal_, uniform_, ...) is its values right after
    the draw.

Names: a factory assigned on its own line of the problem file takes the variable's name (h0, c0);
a dropout takes its module's ("dropout" -> dropout_mult); others the module's or "draw" and the
op. A base used more than once gets _1, _2, ... in call order; a name that another tensor of the
operator has gets "_drawn" appended.

Replay plays the recorded draws back in place of new ones, for the float64 twin (reference64.py):
the same values, so the fp64 result is the truth for the draws the candidate got.

Each trial's forward starts from a generator state of its own, seeded by draw_seed(trial seed):
a one-way function, so a ModelNew solution, which gets that state to draw as the reference did,
learns nothing of the trial's seed. The torch-free part (names, meanings, the seed) is tested
without torch (tests/python/test_draws.py).
"""

import hashlib
import keyword
import re

DROPOUT_OPS = ("native_dropout",)
# The aten ops whose whole result is a draw, by name. Not torch's nondeterministic_seeded tag: it
# also marks ops that draw only sometimes, inside a larger result (_cudnn_rnn and lstm with
# inter-layer dropout, attention with dropout_p, rrelu), whose output is no draw at all.
RANDOM_OPS = {"native_dropout", "bernoulli", "bernoulli_", "normal", "normal_", "normal_functional", "uniform",
              "uniform_", "random_", "exponential", "exponential_", "geometric", "geometric_", "log_normal",
              "log_normal_", "cauchy", "cauchy_", "rand", "randn", "randint", "randperm", "rand_like", "randn_like",
              "randint_like", "multinomial", "poisson", "binomial", "_standard_gamma"}
DISTRIBUTIONS = {
    "randn": "standard normal values", "randn_like": "standard normal values", "normal": "normal values",
    "normal_": "normal values", "rand": "uniform values in [0, 1)", "rand_like": "uniform values in [0, 1)",
    "uniform_": "uniform values", "randint": "random integers", "randint_like": "random integers",
    "random_": "random integers", "randperm": "a random permutation", "bernoulli": "0/1 draws",
    "bernoulli_": "0/1 draws", "multinomial": "sampled indices",
}
_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?::[^=]*)?=(?!=)")


def draw_seed(trial_seed):
    """The seed of the generator state a trial's forward starts from: one-way in the trial's seed."""
    digest = hashlib.sha256(f"kagent-draws:{int(trial_seed)}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def assigned_name(line):
    """`h0` for a line `h0 = torch.randn(...)`; None for anything else (tuples, attributes, calls)."""
    m = _ASSIGNMENT.match(line or "")
    return m.group(1) if m else None


class Draw:
    """One draw of a forward call, as the names and meanings need it. `kind`: "dropout", "factory"
    (a new tensor) or "inplace" (a tensor filled in place); `module`: the innermost nn.Module's
    path in the model ("" for the model itself), `module_class` its class name, `torch_module`
    whether that class is torch.nn's; `line`/`text`: the problem file's line that drew it."""

    def __init__(self, op, kind, call, shape=(), dtype="f32", p=None, module="", module_class="",
                 torch_module=False, line=None, text=None, tensor=None):
        self.op, self.kind, self.call = op, kind, call
        self.shape, self.dtype, self.p = list(shape), dtype, p
        self.module, self.module_class, self.torch_module = module, module_class, torch_module
        self.line, self.text = line, text
        self.tensor = tensor
        self.name = None

    def spec(self):
        return {"name": self.name, "shape": self.shape, "dtype": self.dtype, "meaning": meaning(self),
                "op": self.op, "call": self.call}


def _identifier(s):
    s = re.sub(r"\W", "_", s)
    if not s or s[0].isdigit() or keyword.iskeyword(s):
        s = "draw_" + s
    return s


def base_name(d):
    module = _identifier(d.module.replace(".", "_")) if d.module else ""
    if d.kind == "dropout":
        return (module or "dropout") + "_mult"
    assigned = assigned_name(d.text)
    if d.kind == "factory" and assigned:
        return assigned
    return f"{module or assigned or 'draw'}_{d.op.strip('_')}"


def name_draws(draws, taken):
    """Sets each draw's name (see the module's doc) and returns them; `taken`: the operator's other
    tensor names."""
    bases = [base_name(d) for d in draws]
    seen, used = {}, set(taken)
    for d, b in zip(draws, bases):
        seen[b] = seen.get(b, 0) + 1
        name = f"{b}_{seen[b]}" if bases.count(b) > 1 else b
        while name in used:
            name += "_drawn"
        used.add(name)
        d.name = name
    return draws


def _fmt(x):
    return f"{x:g}"


def meaning(d):
    """What the candidate gets, for the tensor table and the task prompt."""
    where = f"in forward, call {d.call}"
    if d.kind == "dropout":
        p = d.p if d.p is not None else 0.0
        who = f"nn.{d.module_class}(p={_fmt(p)})" if d.torch_module and d.module_class else f"dropout(p={_fmt(p)})"
        scale = _fmt(1.0 / (1.0 - p)) if p < 1 else "0"
        return (f"drawn by {who} {where}: 0 or 1/(1-p) = {scale} per element; multiply the dropout's input by this "
                "(the reference's dropout output is input * this)")
    dist = DISTRIBUTIONS.get(d.op, "random values")
    line = f" (problem line {d.line}: `{_short(d.text)}`)" if d.line and d.text else ""
    if d.kind == "factory":
        use = f"; forward uses them as {assigned_name(d.text)}" if assigned_name(d.text) else ""
        return f"drawn by torch.{d.op} {where}: {dist}{use}{line}"
    inside = f" inside nn.{d.module_class} '{d.module}'" if d.module and d.torch_module else ""
    return f"drawn by Tensor.{d.op} {where}{inside}: {dist}, the tensor's values right after the draw{line}"


def _short(text, limit=100):
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def layout(draws):
    """What a trial drew, without the tensors: [(name, shape, dtype)] in order. Two trials of a
    problem must draw the same."""
    return [(d.name, d.shape, d.dtype) for d in draws]


def layout_text(lay):
    return ", ".join(f"{n} {s} {t}" for n, s, t in lay) or "none"


# ---- torch ---------------------------------------------------------------------------------------------


class ReplayMismatch(Exception):
    """The forward replayed drew otherwise than the recorded one (another op, shape or count)."""


def classify(torch, func, args, kwargs):
    """"dropout", "inplace", "factory" or None (not a draw) for one aten op call."""
    name = func.overloadpacket.__name__
    if name not in RANDOM_OPS:
        return None
    if name in DROPOUT_OPS:
        train = args[2] if len(args) > 2 else kwargs.get("train", True)
        return "dropout" if train is not False else None
    if name.endswith("_") and args and isinstance(args[0], torch.Tensor):
        return "inplace"
    return "factory"


def _first_tensor(torch, out):
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, (tuple, list)):
        for o in out:
            if isinstance(o, torch.Tensor):
                return o
    return None


def _where(torch, problem_file, module_paths):
    """(module path, class name, is torch.nn's, problem line, its text) of the current draw, read off
    the Python stack: the innermost nn.Module.forward, and the innermost frame of the problem file."""
    import linecache
    import os
    import sys

    module = None
    line = None
    f = sys._getframe(2)
    while f is not None and (module is None or line is None):
        if module is None and f.f_code.co_name == "forward":
            s = f.f_locals.get("self")
            if isinstance(s, torch.nn.Module):
                module = s
        if line is None and problem_file and os.path.realpath(f.f_code.co_filename) == problem_file:
            line = (f.f_lineno, linecache.getline(f.f_code.co_filename, f.f_lineno).strip())
        f = f.f_back
    path = module_paths.get(id(module), "") if module is not None else ""
    klass = type(module) if module is not None else None
    torch_module = bool(klass and klass.__module__.startswith("torch.nn"))
    return path, klass.__name__ if klass else "", torch_module, line


def recorder(torch, model, problem_file, dtype_name):
    """A TorchDispatchMode that runs every op as usual and keeps each draw (a Draw with its tensor)
    in .draws, in call order. `dtype_name(torch dtype)` gives kagent's dtype names."""
    import os

    from torch.utils._python_dispatch import TorchDispatchMode

    paths = {id(m): n for n, m in model.named_modules()}
    where_file = os.path.realpath(problem_file) if problem_file else None

    class Recorder(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.draws = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            kind = classify(torch, func, args, kwargs)
            if kind is None:
                return out
            if kind == "dropout":
                p = float(args[1] if len(args) > 1 else kwargs["p"])
                mask = out[1]
                value = mask.to(args[0].dtype) * (1.0 / (1.0 - p) if p < 1 else 0.0)
            elif kind == "inplace":
                p, value = None, args[0].detach().clone()
            else:
                t = _first_tensor(torch, out)
                if t is None:
                    return out
                p, value = None, t.detach().clone()
            path, klass, torch_module, line = _where(torch, where_file, paths)
            self.draws.append(Draw(func.overloadpacket.__name__, kind, len(self.draws) + 1, value.shape,
                                   dtype_name(value.dtype), p, path, klass, torch_module, line[0] if line else None,
                                   line[1] if line else None, value))
            return out

    return Recorder()


def replay(torch, draws, float_dtype=None):
    """A TorchDispatchMode that answers each draw of a forward with the recorded one, in order
    (ReplayMismatch when the forward draws otherwise). `float_dtype`: floating tensors a factory
    made come back in it (float64 for the fp64 twin, whose LSTM needs float64 h0/c0)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Replay(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.i = 0

        def next(self, name, shape):
            if self.i >= len(draws):
                raise ReplayMismatch(f"forward drew more than the {len(draws)} recorded draws ({name})")
            d = draws[self.i]
            self.i += 1
            if d.op != name or list(shape) != d.shape:
                raise ReplayMismatch(f"draw {d.call}: recorded {d.op} {d.shape}, now {name} {list(shape)}")
            return d

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            kind = classify(torch, func, args, kwargs)
            if kind is None:
                return func(*args, **kwargs)
            name = func.overloadpacket.__name__
            if kind == "dropout":
                x = args[0]
                d = self.next(name, x.shape)
                p = float(args[1] if len(args) > 1 else kwargs["p"])
                keep = d.tensor.to(x.device) != 0
                return x * keep.to(x.dtype) * (1.0 / (1.0 - p) if p < 1 else 0.0), keep
            if kind == "inplace":
                t = args[0]
                d = self.next(name, t.shape)
                return t.copy_(d.tensor.to(t.device))
            out = func(*args, **kwargs)  # the tensor the op makes: its dtype, device and shape
            t = _first_tensor(torch, out)
            if t is None:
                return out
            d = self.next(name, t.shape)
            if float_dtype is not None and t.is_floating_point():
                return d.tensor.to(device=t.device, dtype=float_dtype)
            return t.copy_(d.tensor.to(t.device))

        def done(self):
            if self.i != len(draws):
                raise ReplayMismatch(f"forward drew {self.i} times, the recorded one {len(draws)} times")

    return Replay()


def rng_fingerprint(torch, device):
    """The generators' states as text: {"cpu": sha256 of the CPU state, "cuda": the CUDA state in
    hex (its seed, then its Philox offset)}. Equal after two forwards that started equal when
    both drew the same amounts in the same order."""
    out = {"cpu": hashlib.sha256(bytes(torch.get_rng_state().tolist())).hexdigest()}
    if device is not None and getattr(device, "type", "cpu") == "cuda":
        out["cuda"] = bytes(torch.cuda.get_rng_state(device).tolist()).hex()
    return out


def philox_offset(cuda_hex):
    """The Philox offset in a CUDA generator state (rng_fingerprint's "cuda"), or None."""
    try:
        raw = bytes.fromhex(cuda_hex)
    except (TypeError, ValueError):
        return None
    return int.from_bytes(raw[8:16], "little", signed=True) if len(raw) == 16 else None


def fingerprint_note(expected, got):
    """Why a ModelNew call left the generators elsewhere than the reference's forward, or None."""
    if not expected or not got:
        return None
    parts = []
    if expected.get("cuda") and got.get("cuda") and expected["cuda"] != got["cuda"]:
        a, b = philox_offset(expected["cuda"]), philox_offset(got["cuda"])
        if a is not None and b is not None and expected["cuda"][:16] == got["cuda"][:16]:
            parts.append(f"it advanced torch's CUDA generator to Philox offset {b}, the reference's forward to {a}")
        else:
            parts.append("it left torch's CUDA generator in another state than the reference's forward did")
    if expected.get("cpu") and got.get("cpu") and expected["cpu"] != got["cpu"]:
        parts.append("it left torch's CPU generator in another state than the reference's forward did")
    if not parts:
        return None
    return ("the solution drew other random numbers than the reference: started from the reference's generator "
            "state, " + "; ".join(parts) + " (another number, order or size of draws)")
