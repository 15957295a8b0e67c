"""Which forward parameters a trial passes, and how: KernelBench calls `model(*get_inputs())`, so
parameters that get_inputs() leaves out take their defaults. A default that is a tensor or a
scalar is an argument like any other (the candidate sees it under the parameter's name); a None
default is not part of the operator at all. No torch here, so the rule is testable without a GPU.
"""

import inspect


class BindError(Exception):
    """get_inputs() and forward's parameters do not fit together; the message says how."""


class Binding:
    """The parameters one call passes, in order: the first `positional` by position (what
    get_inputs() returned), the rest by keyword (defaults that are not None)."""

    def __init__(self, names, values, positional):
        self.names = names
        self.values = values
        self.positional = positional

    def call(self, fn, values=None):
        """fn called as KernelBench calls the model, with `values` (same order) in place of ours."""
        vals = self.values if values is None else values
        return fn(*vals[:self.positional], **dict(zip(self.names[self.positional:], vals[self.positional:])))


def bind(forward, raw, where="the problem"):
    """Binds get_inputs()' values `raw` to `forward`'s parameters as `forward(*raw)` would."""
    params = list(inspect.signature(forward).parameters.values())
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            prefix = "*" if p.kind == p.VAR_POSITIONAL else "**"
            raise BindError(f"{where}: forward takes {prefix}{p.name}; kagent needs named parameters")
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    raw = list(raw)
    if len(raw) > len(positional):
        raise BindError(f"{where}: get_inputs() returns {len(raw)} values, forward takes at most "
                        f"{len(positional)} ({', '.join(p.name for p in positional)})")
    names = [p.name for p in positional[:len(raw)]]
    values = list(raw)
    for p in params[len(raw):]:
        if p.default is inspect.Parameter.empty:
            raise BindError(f"{where}: get_inputs() returns {len(raw)} values, forward takes {len(params)} "
                            f"({', '.join(q.name for q in params)}) and '{p.name}' has no default")
        if p.default is None:
            continue  # not passed: forward's own default applies, and the operator has no such input
        if p.kind == p.POSITIONAL_ONLY:
            raise BindError(f"{where}: forward's positional-only parameter '{p.name}' has a default kagent "
                            "cannot pass by name")
        names.append(p.name)
        values.append(p.default)
    return Binding(names, values, len(raw))
