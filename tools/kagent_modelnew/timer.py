"""Timed samples of a solution's call, by docs/measurement.md's protocol as kagent-runner times a plan:
before each sample (queued after the `begin` event) the previous outputs are poisoned, the inputs
restored (and, where the reference draws random numbers, the generator reseeded) and the L2 cache
flushed; then start event, the call, stop event. Warm-up and the stopping
rule are kagent_ref.stats's (the C++ rule's twin).

Every torch function the timer calls is captured when this module is imported, before any
solution is: a solution that replaces torch.cuda.Event.elapsed_time afterwards does not change
what is measured here (and guard.Snapshot reports the replacement).
"""

import time

import torch

from kagent_wire import stats

_Event = torch.cuda.Event
_record = torch.cuda.Event.record
_elapsed = torch.cuda.Event.elapsed_time
_ev_sync = torch.cuda.Event.synchronize
_current_stream = torch.cuda.current_stream
_device_sync = torch.cuda.synchronize
_sleep = torch.cuda._sleep
_copy = torch.Tensor.copy_
_fill = torch.Tensor.fill_
_sum = torch.Tensor.sum
_no_grad = torch.no_grad
_monotonic = time.monotonic
_record_function = torch.profiler.record_function
manual_seed = torch.manual_seed  # the worker's reseed before each call (kagent_ref/draws.py)


def _poison_value(t):
    if t.is_floating_point():
        return float("nan")
    if t.dtype == torch.bool:
        return True
    return -1 if t.dtype.is_signed else 255


class Timer:
    def __init__(self, device, call, inputs, pristine, before_call=None):
        """`call()` runs the solution once on `inputs` (the tensors it sees) and returns its outputs
        as a list; `pristine` are copies of the inputs, restored into them before every sample;
        `before_call()` runs then too (the generator state a reference that draws started from)."""
        self.device = device
        self.call = call
        self.before_call = before_call
        self.inputs = inputs
        self.pristine = pristine
        props = torch.cuda.get_device_properties(device)
        l2 = getattr(props, "L2_cache_size", 50 << 20) or (50 << 20)
        # Read, not written: a written buffer leaves dirty lines the timed work would write back.
        self.flush_buf = torch.zeros(2 * l2 // 4, dtype=torch.int32, device=device)
        self.flush_bytes = 2 * l2
        self.last = []  # the last call's outputs: poisoned before the next sample
        self.stream = _current_stream(device)
        self.begin, self.start, self.stop = (_Event(enable_timing=True) for _ in range(3))

    def prepare(self):
        """Outputs of the previous call poisoned (a solution returning them again, or torch.empty
        handing their memory back, shows NaN), inputs restored, L2 flushed."""
        for t in self.last:
            _fill(t, _poison_value(t))
        self.last = []
        for dst, src in zip(self.inputs, self.pristine):
            _copy(dst, src)
        if self.before_call is not None:
            self.before_call()
        _sum(self.flush_buf)

    def sample(self, after_each=None, marked=False):
        """One timed sample: (the call's ms, the sample's GPU busy ms). `after_each()` runs after the
        stop event completed (the tamper check). `marked`: profiler layout (trace.py)."""
        with _no_grad():
            _record(self.begin, self.stream)
            if marked:
                with _record_function("kagent_prepare"):
                    self.prepare()
                    _sleep(1)
            else:
                self.prepare()
            _record(self.start, self.stream)
            if marked:
                with _record_function("kagent_call"):
                    outs = self.call()
            else:
                outs = self.call()
            _record(self.stop, self.stream)
            if marked:
                with _record_function("kagent_prepare"):
                    _sleep(1)
                _device_sync(self.device)
            _ev_sync(self.stop)
        self.last = [o for o in outs if isinstance(o, torch.Tensor)]
        if after_each:
            after_each()
        return _elapsed(self.start, self.stop), _elapsed(self.begin, self.stop)

    def warm_up(self, runs, busy_ms, max_wall_s, after_each=None):
        t0 = _monotonic()
        n, busy = 0, 0.0
        while (n < runs or busy < busy_ms) and _monotonic() - t0 < max_wall_s:
            busy += self.sample(after_each)[1]
            n += 1
        return n

    def time(self, rule, after_each=None):
        rule = dict(stats.DEFAULT_RULE, **(rule or {}))
        t0 = _monotonic()
        samples = []
        busy_ms = 0.0
        while True:
            timed_ms, sample_busy_ms = self.sample(after_each)
            samples.append(timed_ms)
            busy_ms += sample_busy_ms
            reason = stats.should_stop(samples, _monotonic() - t0, rule, busy_ms / 1000.0)
            if reason:
                break
        s = stats.summarize(samples)
        s["stop_reason"] = reason
        return s
