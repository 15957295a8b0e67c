"""kagent's reference server: runs PyTorch reference operators (KernelBench problem files) for
kagent. Standard library and torch only. Started by kagent as `python3 -m kagent_ref`; speaks
JSON lines on stdin/stdout (see server.py)."""

__version__ = "0.1.0"
