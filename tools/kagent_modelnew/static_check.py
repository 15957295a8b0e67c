"""Static check of a ModelNew solution file: what it is built with, and what looks like a hack.

Reads the file's syntax tree only (no import, no torch), so it runs before anything of the
solution executes and on machines without a GPU. Reports:
- whether the file defines ModelNew (a KernelBench solution must), and where;
- its backends: CUDA through torch.utils.cpp_extension (load_inline / load), Triton (@triton.jit),
  and the other DSLs KernelBench accepts (cute, tilelang, thunderkittens), by their imports;
- findings, each with a kind and a line, that the evaluation acts on or reports:
    torch_op          a PyTorch compute op in ModelNew's code (torch.matmul, F.conv2d, x @ w, calling
                      an nn layer kept from __init__, torch::matmul in the extension's C++, ...): the
                      work may not be the solution's own
                      kernels (--torch-ops: what the profiled samples show decides); nn layers that only hold weights are fine
    reference_model   the reference's Model built inside the solution
    fallback          try/except in ModelNew's code: a failing kernel could fall back to PyTorch
    side_stream       torch.cuda.Stream / threads / multiprocessing, or a stream created in the
                      extension's C++ (cudaStreamCreate...): work the timed span may miss
    tampering         assignment to an attribute of torch, torch.cuda, time or the harness
                      (torch.cuda.Event = ..., torch.cuda.synchronize = ...), or setattr on them
    caching           ModelNew's forward stores a tensor on self: outputs cached across calls
    no_kernel         no backend found: nothing custom is compiled or launched
A finding is evidence for a person and for the reward's flags, not proof: the dynamic checks
(fresh inputs per trial, poisoned outputs, CUPTI's kernel list) decide correctness and timing.

Usage: python3 -m kagent_modelnew.static_check FILE.py   (prints one JSON object; exit 2 when the
file cannot be parsed or defines no ModelNew)
"""

import ast
import json
import re
import sys

# Calls that compute on tensors (not shape or allocation helpers). Matched on the last name of a
# dotted call: torch.matmul, F.conv2d, torch.nn.functional.gelu, x.softmax(...).
TORCH_COMPUTE = {
    "matmul", "mm", "bmm", "addmm", "baddbmm", "einsum", "linear", "conv1d", "conv2d", "conv3d",
    "conv_transpose1d", "conv_transpose2d", "conv_transpose3d", "softmax", "log_softmax", "relu",
    "gelu", "silu", "sigmoid", "tanh", "layer_norm", "group_norm", "batch_norm", "instance_norm",
    "max_pool1d", "max_pool2d", "max_pool3d", "avg_pool1d", "avg_pool2d", "avg_pool3d",
    "scaled_dot_product_attention", "sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin",
    "cumsum", "cumprod", "exp", "log", "sqrt", "rsqrt", "pow", "norm", "clamp", "hardtanh", "mish",
    "leaky_relu", "elu", "selu", "softplus", "dropout", "cross_entropy", "mse_loss", "smooth_l1_loss",
    "kl_div", "cosine_similarity", "triplet_margin_loss", "hinge_embedding_loss", "lstm", "gru",
}
TORCH_ROOTS = {"torch", "F", "nn", "functional"}
NN_LAYERS = {"Linear", "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
             "BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "LayerNorm", "GroupNorm", "InstanceNorm2d", "LSTM",
             "GRU", "MultiheadAttention", "Embedding", "MaxPool2d", "AvgPool2d", "Softmax"}
TAMPER_ROOTS = {"torch", "time", "triton", "kagent_modelnew", "builtins", "sys"}
DSL_IMPORTS = {"cutlass": "cute", "cute": "cute", "tilelang": "tilelang", "thunderkittens": "thunderkittens", "tk": None}


# In the C++/CUDA text of a load_inline extension (the file's string constants): streams of its
# own, and ATen's compute ops called from C++ instead of a kernel of the solution's.
CPP_SIDE_STREAM = re.compile(r"cudaStreamCreate\w*|getStreamFromPool|cudaStreamNonBlocking")
CPP_ATEN_OP = re.compile(r"\b(?:torch|at)::(matmul|mm|bmm|addmm|linear|conv\w*|softmax|log_softmax|relu|gelu|"
                         r"sigmoid|tanh|layer_norm|batch_norm|group_norm|max_pool\w*|avg_pool\w*|einsum)\s*\(")


def dotted(node):
    """'torch.cuda.Event' for an Attribute chain of Names; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


class Report:
    def __init__(self, path):
        self.path = path
        self.modelnew_line = None
        self.backends = set()
        self.findings = []

    def add(self, kind, node, text):
        line = getattr(node, "lineno", 0)
        if not any(f["kind"] == kind and f["line"] == line and f["text"] == text for f in self.findings):
            self.findings.append({"kind": kind, "line": line, "text": text})

    def to_json(self):
        return {"path": self.path, "modelnew": self.modelnew_line is not None, "modelnew_line": self.modelnew_line,
                "backends": sorted(self.backends),
                "findings": sorted(self.findings, key=lambda f: (f["line"], f["kind"]))}


def scan_module(tree, report):
    """Backends (imports, load_inline calls, @triton.jit) and tampering, over the whole file."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for n in names:
                root = n.split(".")[0]
                if root == "triton":
                    report.backends.add("triton")
                if DSL_IMPORTS.get(root):
                    report.backends.add(DSL_IMPORTS[root])
                if root in ("threading", "multiprocessing", "concurrent"):
                    report.add("side_stream", node, f"imports {n}: work outside the timed stream")
        elif isinstance(node, ast.Call):
            name = dotted(node.func) or ""
            last = name.split(".")[-1]
            if last in ("load_inline", "load") and ("cpp_extension" in name or last == "load_inline"):
                report.backends.add("cuda")
            if last == "Stream" and "cuda" in name:
                report.add("side_stream", node, f"{name}(): a second stream the timed span may not cover")
            if last in ("Thread", "Process", "ThreadPoolExecutor", "ProcessPoolExecutor"):
                report.add("side_stream", node, f"{name}(): work on another thread or process")
            if name == "setattr" and node.args:
                target = dotted(node.args[0]) or ""
                if target.split(".")[0] in TAMPER_ROOTS:
                    report.add("tampering", node, f"setattr({target}, ...): replaces part of {target}")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                name = dotted(t) if isinstance(t, ast.Attribute) else None
                if name and name.split(".")[0] in TAMPER_ROOTS:
                    report.add("tampering", node, f"assigns {name}: replaces part of {name.split('.')[0]}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) > 40:
            text = node.value
            for m in CPP_SIDE_STREAM.finditer(text):
                report.add("side_stream", node, f"{m.group(0)} in the extension's source: work on a stream of its own")
            for m in CPP_ATEN_OP.finditer(text):
                report.add("torch_op", node, f"{m.group(0).rstrip('( ')} in the extension's source: ATen's kernel, "
                                             "not the solution's")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                dn = dotted(d.func if isinstance(d, ast.Call) else d) or ""
                if dn.startswith("triton.") or dn in ("jit", "autotune"):
                    report.backends.add("triton")


def extension_names(tree):
    """Module-level names bound to a built extension (ext = load_inline(...)): their functions are
    the solution's kernels, whatever they are called."""
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            last = (dotted(node.value.func) or "").split(".")[-1]
            if last in ("load_inline", "load"):
                names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return names


def layer_attributes(cls):
    """self.<attr> = nn.Conv2d(...) in ModelNew.__init__: containers of parameters, whose call in
    forward would run PyTorch's kernel."""
    attrs = {}
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            for a in ast.walk(node):
                if isinstance(a, ast.Assign) and isinstance(a.value, ast.Call):
                    layer = dotted(a.value.func) or ""
                    if layer.split(".")[-1] in NN_LAYERS:
                        for t in a.targets:
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                                attrs[t.attr] = layer
    return attrs


class ModelNewScan(ast.NodeVisitor):
    """Findings inside class ModelNew (its methods and what they call in the same class)."""

    def __init__(self, report, extensions=(), layers=None):
        self.report = report
        self.method = None
        self.extensions = set(extensions)
        self.layers = layers or {}

    def visit_FunctionDef(self, node):
        outer, self.method = self.method, node.name
        self.generic_visit(node)
        self.method = outer

    def visit_Try(self, node):
        if self.method == "forward" or self.method not in (None, "__init__"):
            self.report.add("fallback", node, f"try/except in ModelNew.{self.method}: a failure could fall back "
                                              "to another computation")
        self.generic_visit(node)

    def visit_BinOp(self, node):
        if isinstance(node.op, ast.MatMult) and self.method != "__init__":
            self.report.add("torch_op", node, f"'@' (a PyTorch matmul) in ModelNew.{self.method}")
        self.generic_visit(node)

    def visit_Call(self, node):
        name = dotted(node.func) or ""
        parts = name.split(".")
        last = parts[-1] if parts else ""
        in_init = self.method == "__init__"
        if not in_init and last in TORCH_COMPUTE and len(parts) >= 2:
            root = parts[0]
            # torch.relu(x), F.conv2d(...), torch.nn.functional.gelu(x), and a method call on a
            # tensor (x.softmax(-1)) are PyTorch's kernels; a built extension's functions
            # (ext.relu(x)) and the model's own helpers (self.relu(x)) are not.
            if root in TORCH_ROOTS or (root != "self" and root not in self.extensions):
                self.report.add("torch_op", node, f"{name}() in ModelNew.{self.method}")
        if not in_init and len(parts) == 2 and parts[0] == "self" and parts[1] in self.layers:
            self.report.add("torch_op", node, f"self.{parts[1]}(...) in ModelNew.{self.method} runs "
                                              f"{self.layers[parts[1]]}'s PyTorch kernel")
        if not in_init and last in NN_LAYERS and parts[0] in ("nn", "torch"):
            self.report.add("torch_op", node, f"{name} built in ModelNew.{self.method}")
        if last == "Model" and len(parts) == 1:
            self.report.add("reference_model", node, "builds the reference's Model inside the solution")
        self.generic_visit(node)

    def visit_Assign(self, node):
        if self.method == "forward":
            for t in node.targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    self.report.add("caching", node, f"forward stores self.{t.attr}: a result kept across calls "
                                                     "could be returned instead of computed")
        self.generic_visit(node)


def check_source(source, path="<solution>"):
    """The report for a solution's source text; raises SyntaxError for a file Python cannot parse."""
    tree = ast.parse(source, filename=path)
    report = Report(path)
    scan_module(tree, report)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == "ModelNew":
            report.modelnew_line = node.lineno
            ModelNewScan(report, extension_names(tree), layer_attributes(node)).visit(node)
    if report.modelnew_line is not None and not report.backends:
        report.add("no_kernel", tree, "no custom kernel: no load_inline/load, @triton.jit, cute, tilelang or "
                                      "thunderkittens in the file")
    return report.to_json()


def main(argv):
    if len(argv) != 2:
        print("usage: python3 -m kagent_modelnew.static_check FILE.py", file=sys.stderr)
        return 2
    path = argv[1]
    try:
        with open(path, encoding="utf-8") as f:
            source = f.read()
        result = check_source(source, path)
    except (OSError, UnicodeDecodeError) as e:
        print(f"{path}: cannot be read: {e}", file=sys.stderr)
        return 2
    except SyntaxError as e:
        print(f"{path}:{e.lineno}: not valid Python: {e.msg}", file=sys.stderr)
        return 2
    print(json.dumps(result))
    if not result["modelnew"]:
        print(f"{path}: defines no ModelNew: a KernelBench solution defines class ModelNew(nn.Module) with the "
              "reference Model's constructor arguments and forward", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
