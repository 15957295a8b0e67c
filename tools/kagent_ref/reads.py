"""Which of a reference's tensors its forward reads: an input or state_dict entry is read when one
ATen operator of a forward call is given its storage (a view of it included); torch's dispatch mode
sees every such call. A parameter of a layer forward never calls (KernelBench level3/50's c_proj)
or an input forward ignores is marked "unread" in the signature: a candidate need not read it, and
the memory floor does not count its bytes."""


def storages_read(torch, run):
    """The storage addresses the operators of run() were given, or None where the mode could not
    follow it (the signature then marks nothing)."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    seen = set()

    class Reads(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            for a in tree_flatten((args, kwargs))[0]:
                if isinstance(a, torch.Tensor):
                    seen.add(a.untyped_storage().data_ptr())
            return func(*args, **kwargs)

    try:
        with torch.no_grad(), Reads():
            run()
    except Exception:  # an operator the mode cannot follow: no claim either way
        return None
    return seen


def unread(named, seen):
    """The names of (name, tensor) pairs whose storage no operator was given; a tensor without
    elements is never called unread (it has nothing to read)."""
    if seen is None:
        return set()
    return {n for n, t in named if t.numel() > 0 and t.untyped_storage().data_ptr() not in seen}
