"""kagent_modelnew: KernelBench-style solutions (a Python file defining ModelNew) as kagent candidates.

- static_check.py: what a solution is made of and what looks like a hack, from its syntax tree
  (no torch; runs anywhere, before anything of the solution executes).
- worker.py: the sandboxed process that builds and runs one solution for one evaluation
  (`python3 -m kagent_modelnew.worker`, started by kagent in its jail).
- guard.py: the harness's primitives captured before the solution is imported, and the check that
  they were not replaced. timer.py: the timed samples. trace.py: the profiler's kernels read back
  (coverage by the timed span, PyTorch's own ops). The framing, IPC and statistics
  come from kagent_wire, shared with the reference server.
"""

__version__ = "1"
