"""CUDA IPC export of reference tensors to kagent-runner, through the driver API (ctypes on
libcuda.so.1, which torch has loaded already). Independent of torch's own sharing code, whose
handle format changes between releases.

A tensor is exported as the IPC handle of the allocation that holds it plus the byte offset of
its first element: torch's caching allocator hands out blocks inside larger segments, and an IPC
handle always names a whole allocation. The runner opens each handle once (the same handle
twice in one context is an error), copies what it needs into memory of its own and closes it.
"""

import ctypes

import torch

CUDA_SUCCESS = 0


class _IpcHandle(ctypes.Structure):
    _fields_ = [("reserved", ctypes.c_ubyte * 64)]


class IpcError(Exception):
    pass


_driver = None


def _lib():
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuMemGetAddressRange_v2.argtypes = [ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_size_t),
                                                ctypes.c_uint64]
        lib.cuIpcGetMemHandle.argtypes = [ctypes.POINTER(_IpcHandle), ctypes.c_uint64]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _driver = lib
    return _driver


def _check(rc, what):
    if rc != CUDA_SUCCESS:
        name = ctypes.c_char_p()
        _lib().cuGetErrorName(rc, ctypes.byref(name))
        raise IpcError(f"{what}: {name.value.decode() if name.value else rc}")


def export(name, t):
    """{name, handle (hex), offset, bytes} for a contiguous CUDA tensor."""
    if not t.is_cuda or not t.is_contiguous():
        raise IpcError(f"tensor '{name}' must be a contiguous CUDA tensor to be shared")
    nbytes = t.numel() * t.element_size()
    if nbytes == 0:
        return {"name": name, "handle": "", "offset": 0, "bytes": 0}
    lib = _lib()
    # The driver calls below work in the current context: it must be the tensor's GPU's, not the one
    # torch happened to make current first (GPU 0's, say, when the problem runs on GPU 1).
    torch.cuda.set_device(t.device)
    base, size = ctypes.c_uint64(), ctypes.c_size_t()
    _check(lib.cuMemGetAddressRange_v2(ctypes.byref(base), ctypes.byref(size), t.data_ptr()),
           f"cuMemGetAddressRange for '{name}'")
    handle = _IpcHandle()
    rc = lib.cuIpcGetMemHandle(ctypes.byref(handle), base.value)
    if rc != CUDA_SUCCESS:
        # Expandable segments (PYTORCH_CUDA_ALLOC_CONF) use virtual memory that legacy IPC cannot share.
        _check(rc, f"cuIpcGetMemHandle for '{name}' (is PYTORCH_CUDA_ALLOC_CONF=expandable_segments set?)")
    return {"name": name, "handle": bytes(handle.reserved).hex(), "offset": t.data_ptr() - base.value,
            "bytes": nbytes}
