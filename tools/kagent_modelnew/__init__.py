"""kagent_modelnew: KernelBench-style solutions (a Python file defining ModelNew) as kagent candidates.

This package will hold the sandboxed process that builds and runs a ModelNew solution for kagent
(issue #20). What exists so far is its static check (static_check.py), which needs no torch: it
reads the file's syntax tree and says what the solution is made of before anything runs.
"""
