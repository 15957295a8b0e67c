"""A reference's library call as kagent's own plan step: the gemm or conv step a candidate would write
for the same product, on buffers of the same shapes, strides and dtype. kagent-runner times each such
plan (its "library_steps" request), so the task states what the step takes beside what PyTorch's call
takes, and a model chooses between the step and a kernel of its own on numbers.

The plan is a whole plan as a candidate writes it (scratch buffers and one launch), with every size
a number: the runner parses it with the plan parser and runs it with the plan executor, so the step
timed is the one a candidate gets. Operands are flat scratch buffers of the elements the call's
strides reach; a transposed operand (stride 1 along its rows) is the step's trans_a / trans_b with
the leading dimension it has. A call the step cannot express says why instead (addbmm's sum over
the batch, a broadcast C, an operand with no unit stride, a dtype other than f32/f16/bf16).
Tensors are duck-typed (shape, stride(), dtype), so this runs in tests without torch."""

# torch dtype -> the plan's dtype name; the library steps take these three.
DTYPES = {"torch.float32": "f32", "torch.float16": "f16", "torch.bfloat16": "bf16"}


class NoStep(Exception):
    """The call has no single plan step: the message says why."""


def _dtype(t):
    d = DTYPES.get(str(t.dtype))
    if d is None:
        raise NoStep(f"a library step takes f32, f16 or bf16 operands, not {str(t.dtype).replace('torch.', '')}")
    return d


def _matrix(t, what):
    """A 2-D operand [rows, cols] (or the last two dims of a 3-D one) as the step stores it:
    (transposed, ld). Row-major with unit column stride: not transposed, ld = row stride; unit row
    stride: the step reads it transposed, ld = column stride."""
    rows, cols = int(t.shape[-2]), int(t.shape[-1])
    s_rows, s_cols = (int(s) for s in t.stride()[-2:])
    if s_cols == 1 and (s_rows >= cols or rows == 1):
        return False, max(s_rows, cols)
    if s_rows == 1 and (s_cols >= rows or cols == 1):
        return True, max(s_cols, rows)
    raise NoStep(f"{what} has strides ({s_rows}, {s_cols}): no unit stride along its rows or columns")


def _extent(batch, batch_stride, rows, ld, cols):
    """Elements a strided set of matrices reaches (the step's own bound)."""
    return (batch - 1) * batch_stride + (rows - 1) * ld + cols


def gemm_plan(op, args):
    """mm(self, mat2), addmm(self, mat1, mat2, beta, alpha), bmm(self, mat2), baddbmm(self, batch1,
    batch2, beta, alpha), arguments by their schema's names: the gemm step."""
    if op == "aten.addbmm":
        raise NoStep("addbmm sums its products over the batch: no one gemm step")
    has_c = op in ("aten.addmm", "aten.baddbmm")
    c = args["self"] if has_c else None
    if op == "aten.addmm":
        a, b = args["mat1"], args["mat2"]
    elif op == "aten.baddbmm":
        a, b = args["batch1"], args["batch2"]
    else:
        a, b = args["self"], args["mat2"]
    beta = float(args.get("beta", 1.0))
    alpha = float(args.get("alpha", 1.0))
    dtype = _dtype(a)
    if _dtype(b) != dtype:
        raise NoStep("its operands differ in dtype")
    batched = len(a.shape) == 3
    batch = int(a.shape[0]) if batched else 1
    m, k = int(a.shape[-2]), int(a.shape[-1])
    n = int(b.shape[-1])
    trans_a, lda = _matrix(a, "A")
    trans_b, ldb = _matrix(b, "B")
    stride_a = int(a.stride()[0]) if batched else 0
    stride_b = int(b.stride()[0]) if batched else 0
    step = {"a": "a", "b": "b", "d": "d", "m": m, "n": n, "k": k, "trans_a": trans_a, "trans_b": trans_b,
            "lda": lda, "ldb": ldb}
    # As stored: A is m x k (k x m when transposed), B k x n (n x k).
    a_rows, a_cols = (k, m) if trans_a else (m, k)
    b_rows, b_cols = (n, k) if trans_b else (k, n)
    scratch = {"a": {"dtype": dtype, "shape": [_extent(batch, stride_a, a_rows, lda, a_cols)]},
               "b": {"dtype": dtype, "shape": [_extent(batch, stride_b, b_rows, ldb, b_cols)]},
               "d": {"dtype": dtype, "shape": [batch, m, n] if batched else [m, n]}}
    if batched:
        step.update({"batch": batch, "stride_a": stride_a, "stride_b": stride_b})
    if alpha != 1.0:
        step["alpha"] = alpha
    if c is not None and beta != 0.0:
        if _dtype(c) != dtype:
            raise NoStep("C's dtype is not the operands'")
        if len(c.shape) == 1 and int(c.shape[0]) == n and beta == 1.0:
            # nn.Linear's addmm(bias, x, W.t()): the bias epilogue, added to every row.
            step["bias"] = "bias"
            scratch["bias"] = {"dtype": dtype, "shape": [n]}
        elif list(c.shape) == list(a.shape[:-2]) + [m, n]:
            trans_c, ldc = _matrix(c, "C")
            if trans_c:
                raise NoStep("C is stored transposed")
            stride_c = int(c.stride()[0]) if batched else 0
            step.update({"c": "c", "ldc": ldc, "beta": beta})
            if batched:
                step["stride_c"] = stride_c
            scratch["c"] = {"dtype": dtype, "shape": [_extent(batch, stride_c, m, ldc, n)]}
        else:
            raise NoStep(f"C of shape {list(int(d) for d in c.shape)} is broadcast: the gemm step's C is m x n")
    return {"scratch": scratch, "launch": [{"gemm": step}]}


def conv_plan(args, out):
    """aten.convolution / _convolution(input, weight, bias, stride, padding, dilation, transposed,
    output_padding, groups, ...), arguments by name: the conv step, its output shaped as the call's
    result."""
    x, w, bias = args["input"], args["weight"], args.get("bias")
    stride, padding, dilation = args["stride"], args["padding"], args["dilation"]
    transposed, output_padding, groups = args["transposed"], args["output_padding"], args["groups"]
    dtype = _dtype(x)
    if _dtype(w) != dtype:
        raise NoStep("its input and weight differ in dtype")
    if len(x.shape) not in (3, 4, 5):
        raise NoStep(f"an input of rank {len(x.shape)}: the conv step reads NCW, NCHW or NCDHW")
    ints = lambda v: [int(i) for i in v]  # noqa: E731
    step = {"x": "x", "w": "w", "y": "y", "stride": ints(stride), "padding": ints(padding),
            "dilation": ints(dilation), "groups": int(groups), "transposed": bool(transposed)}
    if transposed:
        step["output_padding"] = ints(output_padding)
    scratch = {"x": {"dtype": dtype, "shape": ints(x.shape)}, "w": {"dtype": dtype, "shape": ints(w.shape)},
               "y": {"dtype": dtype, "shape": ints(out.shape)}}
    if bias is not None:
        step["bias"] = "bias"
        scratch["bias"] = {"dtype": dtype, "shape": ints(bias.shape)}
    return {"scratch": scratch, "launch": [{"conv": step}]}


def plan_for(kind, op, args, out):
    """{"plan": {...}} for a gemm or conv call (`args`: name -> value by the operator's schema, `out`
    its result), {"plan_note": why} where no one step expresses it; {} for any other kind (attention
    has no library step)."""
    try:
        if kind == "gemm":
            return {"plan": gemm_plan(op, args)}
        if kind == "conv":
            return {"plan": conv_plan(args, out)}
    except (NoStep, KeyError) as e:
        return {"plan_note": str(e) if isinstance(e, NoStep) else f"no argument {e} in the call"}
    return {}
