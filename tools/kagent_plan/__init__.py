"""Write a kagent launch plan from Python: for plans too long to write by hand.

A model with hundreds of weight tensors (ResNet18 has 62 convolution and BatchNorm tensors per
stage, hundreds in all) needs a plan of hundreds of steps whose names follow a pattern. Rather than a
loop construct inside the plan's JSON (which every reader of a plan would then have to expand in
their head), the plan stays plain JSON and this module writes it:

    from kagent_plan import Plan
    p = Plan(graph=True)
    act = "x"
    for i in range(8):
        out = p.buffer(f"act{i}", "f32", [16, 64, 56, 56])
        p.conv(x=act, w=f"conv{i}_weight", y=out, padding=1, activation="relu")
        act = out
    p.gemm(a="pooled", b="fc_weight", trans_b=True, bias="fc_bias", d="out",
           m="pooled.shape[0]", n="fc_weight.shape[0]", k="pooled.shape[1]")
    p.write("cand.cu", source=KERNELS)   # the kernels' source, then the /*kagent ... */ block

Only the Python standard library is used. Every key is checked against what kagent's plan parser
accepts, so a typo fails here, naming the step, instead of at evaluation; `kagent compile cand.cu
--op op.json` then checks the plan against the operator's shapes (names, sizes, dtypes) without a GPU.
"""

import json
import re

__all__ = ["Plan", "PlanError"]

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DTYPES = {"f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "bool"}
_GEMM_KEYS = {"a", "b", "c", "d", "bias", "trans_a", "trans_b", "m", "n", "k", "lda", "ldb", "ldc", "ldd",
              "batch", "stride_a", "stride_b", "stride_c", "stride_d", "alpha", "beta", "activation", "compute"}
_CONV_KEYS = {"x", "w", "y", "bias", "stride", "padding", "dilation", "output_padding", "groups", "transposed",
              "activation", "compute"}


class PlanError(ValueError):
    """A step that kagent's plan parser would refuse; the message names the step."""


def _name(value, where):
    if not isinstance(value, str) or not _IDENT.match(value):
        raise PlanError(f"{where}: expected a tensor or scratch name (an identifier), got {value!r}")
    return value


def _size(value, where):
    # An integer or a plan expression ("x.shape[0]", "cdiv(numel(out), 256)").
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise PlanError(f"{where}: expected an integer or an expression string, got {value!r}")
    return value


class Plan:
    """A launch plan: scratch buffers, then kernel launches and library steps, run in order."""

    def __init__(self, graph=False, options=None):
        self.graph = bool(graph)
        self.options = list(options or [])
        self.scratch = {}
        self.steps = []

    def buffer(self, name, dtype, shape):
        """Declares a scratch buffer (harness-allocated, 256-byte aligned) and returns its name."""
        where = f"scratch.{name}"
        _name(name, where)
        if name in self.scratch:
            raise PlanError(f"{where}: declared twice")
        if dtype not in _DTYPES:
            raise PlanError(f"{where}.dtype: expected one of {sorted(_DTYPES)}, got {dtype!r}")
        if not shape:
            raise PlanError(f"{where}.shape: expected a non-empty list")
        self.scratch[name] = {"dtype": dtype, "shape": [_size(s, f"{where}.shape") for s in shape]}
        return name

    def kernel(self, kernel, grid, block, args, smem=0):
        """A launch of one of the candidate's extern "C" __global__ kernels."""
        where = f"launch[{len(self.steps)}]"
        _name(kernel, f"{where}.kernel")
        step = {"kernel": kernel, "grid": [_size(g, f"{where}.grid") for g in grid],
                "block": [_size(b, f"{where}.block") for b in block], "args": [str(a) for a in args]}
        if smem:
            step["smem"] = _size(smem, f"{where}.smem")
        self.steps.append(step)

    def gemm(self, **settings):
        """A cuBLASLt GEMM step: D = act(alpha op(A) op(B) + beta C + bias), row-major."""
        self.steps.append({"gemm": self._library("gemm", settings, _GEMM_KEYS, ("a", "b", "d"))})

    def conv(self, **settings):
        """A cuDNN convolution step (transposed=True for ConvTranspose), NCW/NCHW/NCDHW."""
        self.steps.append({"conv": self._library("conv", settings, _CONV_KEYS, ("x", "w", "y"))})

    def _library(self, kind, settings, allowed, required):
        where = f"launch[{len(self.steps)}].{kind}"
        unknown = sorted(set(settings) - allowed)
        if unknown:
            raise PlanError(f"{where}.{unknown[0]}: unknown key (allowed: {', '.join(sorted(allowed))})")
        for key in required:
            if key not in settings:
                raise PlanError(f"{where}.{key}: missing")
        for key in ("a", "b", "c", "d", "bias", "x", "w", "y"):
            if key in settings:
                _name(settings[key], f"{where}.{key}")
        return dict(settings)

    def to_json(self):
        plan = {}
        if self.scratch:
            plan["scratch"] = self.scratch
        plan["launch"] = self.steps
        if self.options:
            plan["options"] = self.options
        if self.graph:
            plan["graph"] = True
        return plan

    def text(self):
        """The /*kagent ... */ block, one step per line so that a diff of two plans reads well."""
        plan = self.to_json()
        lines = ["/*kagent", "{"]
        keys = list(plan)
        for i, key in enumerate(keys):
            end = "," if i + 1 < len(keys) else ""
            if key == "launch":
                lines.append('  "launch": [')
                for j, step in enumerate(plan["launch"]):
                    lines.append("    " + json.dumps(step) + ("," if j + 1 < len(plan["launch"]) else ""))
                lines.append("  ]" + end)
            else:
                lines.append(f"  {json.dumps(key)}: {json.dumps(plan[key])}{end}")
        lines += ["}", "*/"]
        return "\n".join(lines) + "\n"

    def write(self, path, source=""):
        """Writes the candidate: the device code as given, then the plan block."""
        if "/*kagent" in source:
            raise PlanError("the source already holds a /*kagent plan block: a candidate has exactly one")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source.rstrip("\n") + "\n\n" if source.strip() else "")
            f.write(self.text())
