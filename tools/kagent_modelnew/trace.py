"""What the GPU did during a few profiled samples of a solution, from the profiler's trace (CUPTI's
kernel records under torch.profiler, exported as a Chrome trace): every kernel on every stream,
whether the timed span covered it, and which of them PyTorch's own operators launched.

Pure Python on the trace's JSON (no torch), so the rules are tested without a GPU. The worker
lays out each profiled sample as

    [prepare: poison outputs, restore inputs, flush L2]  annotation "kagent_prepare"
    marker A (torch.cuda._sleep: a spin_kernel on the timing stream)
    start event, the solution's call (annotation "kagent_call"), stop event
    marker B (spin_kernel) and a device-wide synchronize

so on the GPU, A ends before the timed span starts and B starts once the timing stream reaches
the stop event. A kernel launched during the call (any thread, any stream) is covered when it ran
between A's end and B's start; one that ended after B started ran outside the timed span (work on
a stream the events did not wait for). A kernel launched neither by the harness nor during a call
(a thread of the solution launching later) is never covered.
"""

MARKER = "spin_kernel"
SLACK_US = 2.0  # CUPTI timestamps vs the markers' own launch latency


def _events(trace):
    return trace.get("traceEvents", trace) if isinstance(trace, dict) else trace


def _span(e):
    ts = float(e.get("ts", 0.0))
    return ts, ts + float(e.get("dur", 0.0))


def _is_torch_op(name):
    return name.startswith("aten::")


def analyze(trace, samples):
    """{"samples", "kernels": [{"name", "stream", "us", "calls", "torch_op"}], "uncovered": [...],
    "stray": [...], "streams": [...], "torch_ops": {op: us}, "torch_us", "kernel_us",
    "torch_share", "custom_kernels", "problem"} for a trace of `samples` profiled samples."""
    ev = [e for e in _events(trace) if isinstance(e, dict) and e.get("ph") == "X"]
    kernels = sorted((e for e in ev if e.get("cat") == "kernel"), key=lambda e: float(e.get("ts", 0)))
    launches = {}
    for e in ev:
        if e.get("cat") in ("cuda_runtime", "cuda_driver"):
            corr = (e.get("args") or {}).get("correlation")
            if corr is not None:
                launches[corr] = e
    calls = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "kagent_call"]
    prepares = [e for e in ev if e.get("cat") == "user_annotation" and e.get("name") == "kagent_prepare"]
    ops = [e for e in ev if e.get("cat") == "cpu_op" and _is_torch_op(e.get("name", ""))]

    def inside(host_ts, tid, spans):
        for s in spans:
            a, b = _span(s)
            if a <= host_ts <= b and (tid is None or s.get("tid") == tid):
                return s
        return None

    markers = [k for k in kernels if MARKER in k.get("name", "")]
    # Markers come in pairs per sample: A (before the start event), B (after the stop event).
    windows = [(_span(markers[i])[1], _span(markers[i + 1])[0]) for i in range(0, len(markers) - 1, 2)]

    out = {"samples": samples, "kernels": [], "uncovered": [], "stray": [], "streams": [], "torch_ops": {},
           "torch_us": 0.0, "kernel_us": 0.0, "torch_share": 0.0, "custom_kernels": 0, "problem": ""}
    if len(windows) < samples:
        out["problem"] = f"the trace holds {len(markers)} marker kernels for {samples} samples"
    by_name = {}
    main_streams = {(markers[0].get("args") or {}).get("stream")} if markers else set()
    streams = set()
    for k in kernels:
        name = k.get("name", "")
        if MARKER in name:
            continue
        args = k.get("args") or {}
        launch = launches.get(args.get("correlation"))
        host_ts = float(launch.get("ts", 0.0)) if launch else None
        tid = launch.get("tid") if launch else None
        if launch is not None and inside(host_ts, tid, prepares) is not None:
            continue  # the harness's own poison, restore and flush
        start, end = _span(k)
        in_call = launch is not None and inside(host_ts, None, calls) is not None
        if not in_call:
            in_call = any(a - SLACK_US <= start <= b for a, b in windows)
        if not in_call:
            out["stray"].append({"name": name, "stream": args.get("stream"), "us": end - start})
            continue
        streams.add(args.get("stream"))
        covered = any(a - SLACK_US <= start and end <= b + SLACK_US for a, b in windows)
        if not covered:
            out["uncovered"].append({"name": name, "stream": args.get("stream"), "us": end - start,
                                     "late_us": max(0.0, end - min((b for a, b in windows if a <= start),
                                                                    default=end))})
        op = None
        if launch is not None:
            enclosing = [o for o in ops if o.get("tid") == tid and _span(o)[0] <= host_ts <= _span(o)[1]]
            if enclosing:  # the outermost: aten::matmul rather than the aten::mm inside it
                op = min(enclosing, key=lambda o: _span(o)[0]).get("name")
        dur = end - start
        out["kernel_us"] += dur
        if op:
            out["torch_us"] += dur
            out["torch_ops"][op] = out["torch_ops"].get(op, 0.0) + dur
        else:
            out["custom_kernels"] += 1
        row = by_name.setdefault((name, args.get("stream"), op),
                                 {"name": name, "stream": args.get("stream"), "us": 0.0, "calls": 0, "torch_op": op})
        row["us"] += dur
        row["calls"] += 1
    out["kernels"] = sorted(by_name.values(), key=lambda r: -r["us"])
    out["streams"] = sorted(str(s) for s in streams)
    out["off_stream"] = sum(r["calls"] for r in out["kernels"] if r["stream"] not in main_streams)
    if out["kernel_us"] > 0:
        out["torch_share"] = out["torch_us"] / out["kernel_us"]
    return out
