"""What a completion's text holds for kagent: its last fenced code block, and the kind of candidate
that block is. Both the client (a request's default kind) and the rewards read them, so they live
apart from either."""
import re

__all__ = ["kind_of", "last_code_block"]

_FENCE = re.compile(r"```[ \t]*([^\n`]*)\n(.*?)```", re.DOTALL)
_MODELNEW = re.compile(r"^class\s+ModelNew\b", re.MULTILINE)


def last_code_block(text):
    """(language, code) of the last complete ``` fenced block of a completion, or None."""
    blocks = _FENCE.findall(text or "")
    if not blocks:
        return None
    lang, code = blocks[-1]
    return lang.strip().lower(), code


def kind_of(lang, code):
    """"modelnew" for a python block (or one defining class ModelNew), "plan" for CUDA/C++."""
    if lang in ("python", "py", "python3"):
        return "modelnew"
    if lang in ("cuda", "cu", "cpp", "c++", "c"):
        return "plan"
    return "modelnew" if _MODELNEW.search(code or "") else "plan"
