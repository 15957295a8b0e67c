"""The JSON-lines loop of kagent's Python children (the reference server, the ModelNew worker):
framing as kagent-runner's (include/kagent/protocol/child_client.hpp). One request per line on
stdin, one reply per line on a private copy of stdout; everything else the process prints goes to
stderr, so a problem or solution file that prints cannot corrupt the replies."""

import json
import os
import sys
import traceback


def protocol_out():
    """The replies' stream: a private copy of fd 1; fd 1 (and print()) then go to stderr."""
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def write(out, obj):
    out.write(json.dumps(obj, allow_nan=False, default=str) + "\n")
    out.flush()


def error_reply(rid, e, tail=8):
    """{"id", "ok": false, "error", "traceback": its last `tail` lines} for an exception."""
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    lines = "".join(tb).rstrip().splitlines()
    return {"id": rid, "ok": False, "error": f"{type(e).__name__}: {e}", "traceback": lines[-tail:]}


def torch_hello(name, version, **extra):
    """The hello line: torch's version and whether it sees a GPU, or why torch does not import."""
    try:
        import torch

        return {"hello": name, "version": version, "torch": torch.__version__, "cuda": torch.cuda.is_available(),
                "pid": os.getpid(), **extra}
    except ImportError as e:
        return {"hello": name, "version": version, "torch": None, "cuda": False, "pid": os.getpid(),
                "error": f"torch is not importable: {e}"}


def dispatch(req, handlers):
    """A request's reply body from handlers[req["cmd"]](req); "ping" answers {} in every child, and an
    unknown command is an error reply naming it."""
    cmd = req.get("cmd")
    if cmd == "ping":
        return {}
    handler = handlers.get(cmd)
    if handler is None:
        raise ValueError(f"unknown cmd '{cmd}'")
    return handler(req)


def serve(out, hello, handle, on_error=error_reply):
    """Writes `hello`, then answers each request line with handle(req)'s body, or on_error(id, e):
    every failure is a reply, and the loop keeps serving until stdin closes."""
    write(out, hello)
    for line in sys.stdin:
        rid = None
        try:
            req = json.loads(line)
            rid = req.get("id")
            write(out, {"id": rid, "ok": True, **handle(req)})
        except Exception as e:
            write(out, on_error(rid, e))
    return 0
