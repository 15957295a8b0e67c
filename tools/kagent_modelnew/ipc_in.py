"""The reference server's tensors opened in the worker by CUDA IPC and copied into the worker's
own memory: the mapping is closed before the solution runs, so the solution never holds a pointer
into the server's allocations (ctypes on libcuda.so.1, as kagent_ref/ipc.py exports them)."""

import ctypes

import torch

from kagent_ref.ipc import IpcError, _check, _IpcHandle, _lib

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
    lib = _lib()
    open_fn = getattr(lib, "cuIpcOpenMemHandle_v2", None) or lib.cuIpcOpenMemHandle
    open_fn.argtypes = [ctypes.POINTER(ctypes.c_uint64), _IpcHandle, ctypes.c_uint]
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
                raw = _IpcHandle()
                ctypes.memmove(raw.reserved, bytes.fromhex(h), 64)
                base = ctypes.c_uint64()
                _check(open_fn(ctypes.byref(base), raw, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS),
                       f"cuIpcOpenMemHandle for '{ref['name']}'")
                opened[h] = base.value
            src = torch.as_tensor(_Bytes(opened[h] + int(ref["offset"]), nbytes), device=device)
            dst.view(-1).view(torch.uint8).copy_(src)
            del src
        torch.cuda.synchronize(device)
    finally:
        for base in opened.values():
            close_fn(base)
