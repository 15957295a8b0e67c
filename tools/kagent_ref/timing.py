"""Eager and torch.compile baselines timed with the runner's protocol (docs/measurement.md): L2 reset
by reading a buffer of twice its size before every sample, queued before the start event;
warm-up of at least 3 runs and 50 ms of GPU busy time; the same stopping rule (kagent_wire/stats.py)."""

import time

import torch

from kagent_wire import stats


class Timer:
    def __init__(self, device):
        self.device = device
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
        # Read, not written: a written buffer leaves dirty lines the timed work would write back.
        self.flush_buf = torch.zeros(2 * l2 // 4, dtype=torch.int32, device=device)
        self.flush_bytes = 2 * l2

    def _flush(self):
        self.flush_buf.sum()

    def time(self, fn, rule=None):
        rule = dict(stats.DEFAULT_RULE, **(rule or {}))
        stream = torch.cuda.current_stream(self.device)
        begin = torch.cuda.Event(enable_timing=True)
        start = torch.cuda.Event(enable_timing=True)
        stop = torch.cuda.Event(enable_timing=True)

        def sample():
            begin.record(stream)
            self._flush()
            start.record(stream)
            fn()
            stop.record(stream)
            stop.synchronize()
            return start.elapsed_time(stop), begin.elapsed_time(stop)

        t0 = time.monotonic()
        runs, busy = 0, 0.0
        with torch.no_grad():
            while not stats.warmup_done(runs, busy) and time.monotonic() - t0 < rule["max_wall_s"]:
                busy += sample()[1]
                runs += 1
            t0 = time.monotonic()
            samples = []
            busy_ms = 0.0
            while True:
                timed_ms, sample_busy_ms = sample()
                samples.append(timed_ms)
                busy_ms += sample_busy_ms
                reason = stats.should_stop(samples, time.monotonic() - t0, rule, busy_ms / 1000.0)
                if reason:
                    break
        s = stats.summarize(samples)
        s["stop_reason"] = reason
        return s
