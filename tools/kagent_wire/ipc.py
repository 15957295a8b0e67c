"""CUDA IPC between kagent's children, through the driver API (ctypes on libcuda.so.1, which torch
has loaded already). Independent of torch's own sharing code, whose handle format changes between
releases.

- export(name, tensor): a tensor's handle for kagent-runner (the reference server's inputs and
  outputs, the ModelNew worker's outputs).
- copy_into(refs, dests, device): tensors exported by another process opened, copied into this
  process's own tensors and closed again, so nothing after the copy holds a pointer into the
  exporter's allocations.

A tensor is exported as the IPC handle of the allocation that holds it plus the byte offset of
its first element: torch's caching allocator hands out blocks inside larger segments, and an IPC
handle always names a whole allocation. The runner opens each handle once (the same handle
twice in one context is an error), copies what it needs into memory of its own and closes it.
"""

import ctypes

import torch

CUDA_SUCCESS = 0


class IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


class IpcError(Exception):
    pass


_loaded = None


def driver():
    global _loaded
    if _loaded is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                                ctypes.c_uint64]
        lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(IpcHandle), ctypes.c_uint64]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _loaded = lib
    return _loaded


def check(rc, what):
    if rc != CUDA_SUCCESS:
        name = ctypes.c_char_p()
        driver().cuGetErrorName(rc, ctypes.byref(name))
        raise IpcError(f"{what}: {name.value.decode() if name.value else rc}")


def export(name, t):
    """{name, handle (hex), offset, bytes} for a contiguous CUDA tensor."""
    if not t.is_cuda or not t.is_contiguous():
        raise IpcError(f"tensor '{name}' must be a contiguous CUDA tensor to be shared")
    nbytes = t.numel() * t.element_size()
    if nbytes == 0:
        return {"name": name, "handle": "", "offset": 0, "bytes": 0}
    lib = driver()
    # The driver calls below work in the current context: it must be the tensor's GPU's, not the one
    # torch happened to make current first (GPU 0's, say, when the problem runs on GPU 1).
    torch.cuda.set_device(t.device)
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    check(lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), t.data_ptr()),
           f"cuMemGetAddressRange for '{name}'")
    handle = IpcHandle()
    rc = lib.cuIpcGetMemHandle(ctypes.byref(handle), base.value)
    if rc != CUDA_SUCCESS:
        # Expandable segments (PYTORCH_CUDA_ALLOC_CONF) use virtual memory that legacy IPC cannot share.
        check(rc, f"cuIpcGetMemHandle for '{name}' (is PYTORCH_CUDA_ALLOC_CONF=expandable_segments set?)")
    return {"name": name, "handle": bytes(handle.reserved).hex(), "offset": t.data_ptr() - base.value,
            "bytes": nbytes}

CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 1

# kagent's dtype names (src/spec/dtype.cpp).
KAGENT_TO_TORCH = {
    "f32": torch.float32, "f16": torch.float16, "bf16": torch.bfloat16, "f64": torch.float64,
    "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "u8": torch.uint8,
    "bool": torch.bool,
}


class _Bytes:
    """A device byte range as __cuda_array_interface__, so torch can copy from it."""

    def __init__(self, ptr, nbytes):
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False), "version": 3}


def _open_fns():
    lib = driver()
    open_fn = getattr(lib, "cuIpcOpenMemHandle_v2", None) or lib.cuIpcOpenMemHandle
    open_fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), IpcHandle, ctypes.c_uint]
    lib.cuIpcCloseMemHandle.argtypes = [ctypes.c_uint64]
    return open_fn, lib.cuIpcCloseMemHandle


def copy_into(refs, dests, device):
    """Copies each IPC tensor reference (dict: name, handle, offset, bytes) into the tensor of the
    same position in `dests` (contiguous, on `device`, exactly `bytes` long)."""
    if len(refs) != len(dests):
        raise IpcError(f"{len(refs)} tensors sent for {len(dests)} inputs")
    torch.cuda.set_device(device)
    open_fn, close_fn = _open_fns()
    opened = {}
    try:
        for ref, dst in zip(refs, dests):
            nbytes = dst.numel() * dst.element_size()
            if int(ref["bytes"]) != nbytes:
                raise IpcError(f"tensor '{ref['name']}': {ref['bytes']} bytes sent, {nbytes} expected")
            if nbytes == 0:
                continue
            h = ref["handle"]
            if h not in opened:  # one open per allocation: a second open of a handle fails
                raw = IpcHandle()
                ctypes.memmove(raw.reserved, bytes.fromhex(h), 64)
                base = ctypes.c_uint64()
                check(open_fn(ctypes.byref(base), raw, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                       f"cuIpcOpenMemHandle for '{ref['name']}'")
                opened[h] = base.value
            src = torch.as_tensor(_Bytes(opened[h] + int(ref["offset"]), nbytes), device=device)
            dst.view(-1).view(torch.uint8).copy_(src)
            del src
        torch.cuda.synchronize(device)
    finally:
        for base in opened.values():
            close_fn(base)
