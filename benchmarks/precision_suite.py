#!/usr/bin/env python3
"""Lower-precision versions of fp32 KernelBench problems through `kagent eval`.

The rule they test: include/kagent/protocol/output_rules.hpp (a reward that lower precision cannot
move).

For each problem a ModelNew is written (into --work, never into the project) that subclasses the
problem's Model and runs its forward

  fp32     as it is (IEEE fp32, TF32 off: the honest control, which must pass);
  honest fp32 with other orders, where one applies (must pass): 3xtf32 (matrix products as three
           TF32 products, A_hi B_hi + A_hi B_lo + A_lo B_hi, the tensor-core fp32 technique, with
           the tensor cores summing 256 products at a time and fp32 adding the partial results),
           splitk (the K dimension in four parts summed after), im2col (a convolution as unfold and
           one product per image), explicit (attention with the scores materialised, against SDPA's
           fused kernel), twopass (LayerNorm's mean and variance in two passes), blocked (a scan
           in blocks of 64 with the block totals carried);
  tf32     with TF32 on for matmuls and cuDNN, and SDPA on its math backend, whose products take
           the switch (must fail at fp32, pass under --precision tf32; on a problem without a
           matrix product or convolution, TF32_INERT, it computes in fp32 and must pass);
  3xtf32tc the three TF32 products summed over all of K by the tensor cores: their adder truncates,
           and on non-negative inputs (torch.rand) its error is plain TF32's (H200, level1/1:
           2.75e-5 against fp64, TF32 2.79e-5, fp32 8.4e-7), so it is at TF32 and must fail at fp32;
  bf16     inputs, parameters and buffers cast to bfloat16 (a copy of the model), the outputs cast
           back (must fail at fp32, pass under --precision bf16);
  fp16     the same in float16 (must fail at fp32);
  bf16out, fp16out  computed in fp32, the outputs stored in bfloat16 / float16 (must fail at fp32).

Each problem's variants are evaluated together (one `kagent eval` per tolerance and precision, the
reference loaded once): at the default tolerance, at --tolerance 1e-2, and the tf32 and bf16
variants (3xtf32tc and bf16out with them) at their own precision. --torch-ops allow, since the
variants are PyTorch's own operators: the question here is the precision rule, not the
torch-operators policy. A table per evaluation:
the stage, the output's relative L2 error against fp64, the rule's limit and the precision that set
it, and whether the verdict is the expected one. One JSON line per evaluation in --out (--resume
skips those there).

  python3 benchmarks/precision_suite.py --kagent build/kagent --out precision_suite.jsonl --resume --budget-s 480
"""

import argparse
import ast
import json
import os
import subprocess
import sys
import time

PROBLEMS = [  # (path under KernelBench, the variants written for its operator alone)
    ("level1/1_Square_matrix_multiplication_.py", ["3xtf32", "3xtf32tc", "splitk"]),
    ("level1/8_Matmul_with_irregular_shapes_.py", ["3xtf32", "3xtf32tc", "splitk"]),
    ("level1/63_conv_standard_2D__square_input__square_kernel.py", ["im2col"]),
    ("level1/97_ScaledDotProductAttention.py", ["explicit"]),
    ("level2/66_Matmul_Dropout_Softmax.py", []),
    ("level2/1_Conv2D_ReLU_BiasAdd.py", []),
    ("level2/40_Matmul_Scaling_ResidualAdd.py", []),
    ("level3/43_MinGPTCausalAttention.py", []),
    ("level1/40_LayerNorm.py", ["twopass"]),
    ("level1/89_cumsum.py", ["blocked"]),
]
HONEST = {"fp32", "3xtf32", "splitk", "im2col", "explicit", "twopass", "blocked"}
# Problems without a matrix product or convolution: TF32 changes none of their arithmetic, so their
# tf32 variant computes in IEEE fp32 and is honest (the rule leaves TF32 out there: not told apart).
TF32_INERT = {"level1/40_LayerNorm.py", "level1/89_cumsum.py"}
# The lower-precision variants, by the precision each computes (or stores) at.
LOWER = {"tf32": "tf32", "3xtf32tc": "tf32", "bf16": "bf16", "bf16out": "bf16", "fp16": "fp16", "fp16out": "fp16"}

SUFFIX = {
    "fp32": """
    def forward(self, SIG):
        return super().forward(CALL)
""",
    "tf32": """
    def forward(self, SIG):
        from torch.nn.attention import SDPBackend, sdpa_kernel
        m, c = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
        try:
            # SDPA's fused fp32 kernels ignore the TF32 switch; its math backend's products take it.
            with sdpa_kernel(SDPBackend.MATH):
                return super().forward(CALL)
        finally:
            torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = m, c
""",
    "bf16": """
    def forward(self, SIG):
        return _at(self, torch.bfloat16, [CALL])
""",
    "fp16": """
    def forward(self, SIG):
        return _at(self, torch.float16, [CALL])
""",
    "bf16out": """
    def forward(self, SIG):
        return _stored_as(super().forward(CALL), torch.bfloat16)
""",
    "fp16out": """
    def forward(self, SIG):
        return _stored_as(super().forward(CALL), torch.float16)
""",
    "splitk": """
    def forward(self, A, B):
        k = A.shape[-1]
        parts = [A[..., i:i + k // 4 + 1] @ B[i:i + k // 4 + 1] for i in range(0, k, k // 4 + 1)]
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out
""",
    "im2col": """
    def forward(self, x):
        conv = next(m for m in self.modules() if isinstance(m, nn.Conv2d))
        w = conv.weight.reshape(conv.out_channels, -1)
        outs = []
        for i in range(x.shape[0]):
            cols = torch.nn.functional.unfold(x[i:i + 1], conv.kernel_size, dilation=conv.dilation,
                                              padding=conv.padding, stride=conv.stride)
            outs.append(w @ cols[0])
        h = (x.shape[2] + 2 * conv.padding[0] - conv.dilation[0] * (conv.kernel_size[0] - 1) - 1) // conv.stride[0] + 1
        wd = (x.shape[3] + 2 * conv.padding[1] - conv.dilation[1] * (conv.kernel_size[1] - 1) - 1) // conv.stride[1] + 1
        out = torch.stack(outs).reshape(x.shape[0], conv.out_channels, h, wd)
        return out if conv.bias is None else out + conv.bias.reshape(1, -1, 1, 1)
""",
    "explicit": """
    def forward(self, Q, K, V):
        s = (Q @ K.transpose(-2, -1)) * (Q.shape[-1] ** -0.5)
        return torch.softmax(s, dim=-1) @ V
""",
    "twopass": """
    def forward(self, x):
        ln = next(m for m in self.modules() if isinstance(m, nn.LayerNorm))
        dims = tuple(range(-len(ln.normalized_shape), 0))
        mean = x.mean(dim=dims, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=dims, keepdim=True)
        return (x - mean) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias
""",
    "blocked": """
    def forward(self, x):
        d = self.dim % x.dim()
        n = x.shape[d]
        b = 64
        pad = (-n) % b
        y = torch.nn.functional.pad(x.movedim(d, -1), (0, pad))
        y = y.reshape(*y.shape[:-1], -1, b)
        inner = y.cumsum(-1)
        carry = inner[..., -1].cumsum(-1) - inner[..., -1]
        out = (inner + carry.unsqueeze(-1)).reshape(*y.shape[:-2], -1)[..., :n]
        return out.movedim(-1, d).contiguous()
""",
    "3xtf32": """
    def forward(self, A, B):
        m = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            a_hi, b_hi = _tf32(A), _tf32(B)
            a_lo, b_lo = A - a_hi, B - b_hi
            out = None
            for i in range(0, A.shape[-1], 256):  # the tensor cores sum 256 products; fp32 adds the rest
                s = slice(i, i + 256)
                part = a_hi[..., s] @ b_hi[s] + (a_hi[..., s] @ b_lo[s] + a_lo[..., s] @ b_hi[s])
                out = part if out is None else out + part
            return out
        finally:
            torch.backends.cuda.matmul.allow_tf32 = m
""",
    "3xtf32tc": """
    def forward(self, A, B):
        m = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            a_hi, b_hi = _tf32(A), _tf32(B)
            a_lo, b_lo = A - a_hi, B - b_hi
            return a_hi @ b_hi + (a_hi @ b_lo + a_lo @ b_hi)
        finally:
            torch.backends.cuda.matmul.allow_tf32 = m
""",
}

HELPERS = '''
import copy

def _as_input_type(out, args):
    """Floating outputs back in the inputs' type (autocast returns its own)."""
    dtype = next((a.dtype for a in args if isinstance(a, torch.Tensor) and a.is_floating_point()), None)
    if dtype is None:
        return out
    cast = lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
    return type(out)(cast(t) for t in out) if isinstance(out, (tuple, list)) else cast(out)


def _at(model, dtype, args):
    """The problem's forward with its floating inputs, parameters and buffers in dtype (a copy of the
    model, made on the first call), the outputs cast back: a kernel that computes in dtype. Autocast
    would leave LayerNorm, cumsum and others in fp32."""
    low = model.__dict__.get("_low")
    if low is None:
        low = copy.deepcopy(model)
        low.__class__ = Model
        low.to(dtype)
        model.__dict__["_low"] = low  # not a submodule: the state dict stays the problem's
    cast = lambda t: t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t  # noqa: E731
    return _as_input_type(low(*[cast(a) for a in args]), args)


def _stored_as(out, dtype):
    """Computed in fp32, stored in dtype: the output rounded to dtype and back."""
    def low(t):
        return t.to(dtype).to(t.dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t
    return type(out)(low(t) for t in out) if isinstance(out, (tuple, list)) else low(out)


def _tf32(x):
    """x rounded toward zero to TF32's 10 mantissa bits: what the tensor cores read of it."""
    return (x.contiguous().view(torch.int32) & -8192).view(torch.float32)


class ModelNew(Model):'''


def forward_params(source):
    """(the parameters of the problem's Model.forward after self, as written, and the call passing
    them on by position): kagent binds a solution's forward by its named parameters, as the
    reference's."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.ClassDef) and node.name == "Model":
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "forward":
                    args = f.args
                    args.args = args.args[1:]  # self
                    names = [a.arg for a in args.args]
                    return ast.unparse(args), ", ".join(names)
    raise ValueError("no Model.forward")


def write_variant(work, problem_path, variant):
    with open(problem_path) as f:
        source = f.read()
    sig, call = forward_params(source)
    name = os.path.splitext(os.path.basename(problem_path))[0]
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, f"{name}__{variant}.py")
    header = f"# {variant} version of KernelBench {os.path.basename(problem_path)} (benchmarks/precision_suite.py)\n"
    with open(path, "w") as f:
        f.write(header + source + "\nimport torch\n" + HELPERS +
                SUFFIX[variant].replace("SIG", sig).replace("CALL", call))
    return path


def expected(problem, variant, precision):
    """Whether the variant should be correct when evaluated at `precision`."""
    if variant in HONEST or (variant == "tf32" and problem in TF32_INERT):
        return True
    return precision == LOWER[variant]  # tf32 under tf32, bf16 under bf16


def evaluate(kagent, problem, files, precision, tolerance, timeout):
    cmd = [kagent, "eval", *files, "--op", problem, "--json", "--no-timing", "--torch-ops", "allow",
           "--precision", precision]
    if tolerance:
        cmd += ["--tolerance", str(tolerance)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    took = time.time() - t0
    reports = []
    for line in p.stdout.splitlines():
        line = line.strip()
        if line.startswith("{") or line.startswith("["):
            try:
                v = json.loads(line)
            except json.JSONDecodeError:
                continue
            reports += v if isinstance(v, list) else [v]
    if not reports:
        try:
            v = json.loads(p.stdout)
            reports = v if isinstance(v, list) else [v]
        except json.JSONDecodeError:
            pass
    return reports, p.returncode, p.stderr[-2000:], took


def row_of(report):
    o = report.get("outcome", {})
    errs = o.get("errors") or [{}]
    e = max(errs, key=lambda x: x.get("rel_l2") or 0)
    return {"stage": o.get("failure_stage", "?") or "none", "correct": bool(o.get("correct")),
            "rel_l2": e.get("rel_l2"), "ref_rel_l2": e.get("ref_rel_l2_fp64"), "limit": e.get("precision_limit"),
            "nearest": e.get("precision_nearest", ""), "note": e.get("precision_note", ""),
            "message": (o.get("message") or "")[:300]}


def fmt(v):
    return f"{v:9.2e}" if isinstance(v, (int, float)) else f"{'-':>9}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kagent", default="build/kagent")
    ap.add_argument("--kernelbench", default=os.environ.get("KAGENT_KERNELBENCH_DIR", "../shared/kernelbench"))
    ap.add_argument("--work", default="/tmp/kagent-precision-suite")
    ap.add_argument("--out", default="precision_suite.jsonl")
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--budget-s", type=float, default=0)
    ap.add_argument("--timeout", type=float, default=400)
    ap.add_argument("--only", default="", help="only the problems whose path contains this (e.g. level1/97)")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    done = set()
    if a.resume and os.path.exists(a.out):
        for x in open(a.out):
            if x.strip():
                r = json.loads(x)
                done.add((r["problem"], r["precision"], r["tolerance"]))
    t0 = time.time()
    with open(a.out, "a") as out:
        for rel, honest in PROBLEMS:
            if a.only and a.only not in rel:
                continue
            problem = os.path.join(a.kernelbench, rel)
            variants = ["fp32", "tf32", "bf16", "fp16", "bf16out", "fp16out"] + honest
            runs = [("fp32", None, variants), ("fp32", 1e-2, variants),
                    ("tf32", None, [v for v in variants if LOWER.get(v) == "tf32"]),
                    ("bf16", None, [v for v in variants if LOWER.get(v) == "bf16"])]
            for precision, tolerance, vs in runs:
                key = (rel, precision, tolerance)
                if key in done:
                    continue
                if a.budget_s and time.time() - t0 > a.budget_s:
                    print("budget reached", flush=True)
                    break
                files = [write_variant(a.work, problem, v) for v in vs]
                try:
                    reports, rc, err, took = evaluate(a.kagent, problem, files, precision, tolerance, a.timeout)
                except subprocess.TimeoutExpired:
                    reports, rc, err, took = [], -1, "timeout", a.timeout
                rows = []
                by_file = {rep.get("candidate"): rep for rep in reports}
                for v, f in zip(vs, files):
                    rep = by_file.get(f)
                    if rep is None:
                        continue
                    r = row_of(rep)
                    r["variant"] = v
                    r["as_expected"] = r["correct"] == expected(rel, v, precision)
                    rows.append(r)
                rec = {"problem": rel, "precision": precision, "tolerance": tolerance, "rc": rc,
                       "seconds": round(took, 1), "rows": rows}
                if len(rows) != len(vs):
                    rec["stderr"] = err
                out.write(json.dumps(rec) + "\n")
                out.flush()
                for r in rows:
                    print(f"{rel[:44]:<44} {precision:>4} tol {str(tolerance or 'default'):>7} {r['variant']:>6}: "
                          f"{r['stage']:<11} rel {fmt(r['rel_l2'])} ref {fmt(r['ref_rel_l2'])} limit {fmt(r['limit'])} "
                          f"({r['nearest'] or '-':>4}) {'ok' if r['as_expected'] else 'UNEXPECTED'}", flush=True)
                    if not r["as_expected"] or r["stage"] not in ("none", "precision", "correctness"):
                        print(f"    {r['message']}", flush=True)
                if len(rows) != len(vs):
                    print(f"{rel}: {len(rows)} reports of {len(vs)} (rc {rc}): {err[-600:]}", flush=True)
    records = [json.loads(x) for x in open(a.out) if x.strip()]
    rows = [r for rec in records for r in rec["rows"]]
    # Judged against the expectations as they are now, so records of an earlier run read alike.
    bad = [(rec["problem"], rec["precision"], rec["tolerance"], r["variant"], r["stage"]) for rec in records
           for r in rec["rows"] if r["correct"] != expected(rec["problem"], r["variant"], rec["precision"])]
    print(f"\n{len(records)} evaluations, {len(rows)} verdicts, {len(rows) - len(bad)} as expected")
    for b in bad:
        print("UNEXPECTED: " + " ".join(str(x) for x in b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
