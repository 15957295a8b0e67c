"""A spare reference server's libraries made ready before its problem is known.

A problem's first reference run pays, besides its own kernels, each library's one-time start: cuBLAS
and cuBLASLt load their kernels for a dtype on its first product, cuDNN loads its engine libraries on
its first convolution, the attention backends theirs. A spare server (include/kagent/reference/
ref_server.hpp) pays them here, on tiny tensors, while no problem waits: the dtypes are those a
load or trial runs (the precision's own, float64 for the reference's twins, the forbidden lower
precisions of lower_precision.py). The results are thrown away; nothing here draws random numbers
or changes a setting a load pins (numerics.py sets TF32 at load)."""

import importlib


def first_kernels(torch, device):
    """Runs each library's first kernel at every dtype a load or trial uses."""
    F = torch.nn.functional
    saved = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    try:
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            torch.backends.cudnn.allow_tf32 = tf32
            for dtype in (torch.float32, torch.float64, torch.float16, torch.bfloat16):
                if tf32 and dtype != torch.float32:
                    continue
                opts = {"device": device, "dtype": dtype}
                a = torch.ones(16, 16, **opts)
                b = torch.ones(2, 16, 16, **opts)
                _ = a @ a, torch.bmm(b, b), F.linear(a, a, a[0])
                _ = torch.addmm(a[0], a, a)
                for dim in (1, 2, 3):
                    x = torch.ones((1, 4) + (6,) * dim, **opts)
                    w = torch.ones((4, 4) + (3,) * dim, **opts)
                    conv = getattr(F, f"conv{dim}d")
                    convt = getattr(F, f"conv_transpose{dim}d")
                    _ = conv(x, w, padding=1), convt(x, w)
                if dtype != torch.float64:
                    q = torch.ones(1, 2, 8, 16, **opts)
                    _ = F.scaled_dot_product_attention(q, q, q)
                x = torch.ones(2, 4, 6, 6, **opts)
                _ = F.batch_norm(x, None, None, training=True), F.layer_norm(x, (6,)), F.group_norm(x, 2)
                _ = torch.softmax(x, -1), x.sum(-1), F.max_pool2d(x, 2), F.avg_pool2d(x, 2)
        torch.cuda.synchronize(device)
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def modules():
    """The server's own modules a load imports, imported now (FlopCounterMode, the dispatch modes)."""
    for name in ("torch.utils.flop_counter", "torch.utils._python_dispatch", "kagent_ref.problem",
                 "kagent_ref.flops", "kagent_ref.reads", "kagent_ref.reference64", "kagent_ref.lower_precision",
                 "kagent_wire.ipc"):
        importlib.import_module(name)
