"""Writes docs/api.md, the reference of jaxnn's public names, from the code.

    python docs/api.py          # rewrite docs/api.md
    python docs/api.py --check  # exit 1 if docs/api.md is not what the code says

For every name in the ``__all__`` of each public module: its signature
(annotations left out, defaults kept) and the first paragraph of its
docstring, with the docstrings' reStructuredText roles as Markdown code.
``tests/test_api_docs.py`` fails when the file is stale.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import sys

MODULES = ("jaxnn", "jaxnn.losses", "jaxnn.datasets", "jaxnn.metrics", "jaxnn.baselines", "jaxnn.ensemble",
           "jaxnn.sklearn", "jaxnn.experiments", "jaxnn.plot", "jaxnn.config",
           "jaxnn.tabular")
PATH = pathlib.Path(__file__).with_name("api.md")
HEADER = """# API reference

Every public name of jaxnn, module by module: its signature and the first paragraph of its
docstring (`help(jaxnn.fit)` and the like give the whole). The [user guide](guide/README.md)
shows how they fit together. Written by `python docs/api.py` from the code;
`tests/test_api_docs.py` fails when it is out of date.
"""


def _markdown(text: str) -> str:
    """A docstring paragraph on one line, its reStructuredText roles and
    literals as Markdown code: :func:`~a.b` → `b`, ``x`` → `x`."""
    text = " ".join(text.split())
    text = re.sub(r":(?:func|class|mod|data|meth|attr):`~?([^`]+)`",
                  lambda m: f"`{m.group(1).rsplit('.', 1)[-1] if m.group(0).find('~') > 0 else m.group(1)}`", text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def _summary(doc: str) -> str:
    """The docstring's first paragraph as Markdown, with the next ones while
    a paragraph ends in ':' or ',' (it introduces a formula)."""
    paragraphs = [p for p in doc.split("\n\n") if p.strip()][:3]
    kept = paragraphs[:1]
    for paragraph in paragraphs[1:]:
        if not kept[-1].rstrip().endswith((":", ",")):
            break
        kept.append(paragraph)
    return " ".join(_markdown(p) for p in kept)


def _signature(name: str, obj) -> str:
    """``name(params)`` without annotations (they name internal types), or
    the value of a constant (a dict: its keys)."""
    if isinstance(obj, dict):
        return f"{name} = {{{', '.join(repr(key) + ': …' for key in obj)}}}"
    if not callable(obj):
        return f"{name} = {obj!r}"
    signature = inspect.signature(obj)
    params = [p.replace(annotation=inspect.Parameter.empty) for p in signature.parameters.values()]
    return name + str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _kind(obj) -> str:
    if inspect.isclass(obj):
        return "class"
    return "function" if callable(obj) else "constant"


def render() -> str:
    """The text of docs/api.md."""
    parts = [HEADER]
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        parts.append(f"\n## `{module_name}`\n\n{_markdown((inspect.getdoc(module) or '').split(chr(10) * 2)[0])}\n")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.ismodule(obj):
                parts.append(f"\n### `{module_name}.{name}` (module)\n\nSee `{obj.__name__}` below.\n")
                continue
            doc = "" if _kind(obj) == "constant" else inspect.getdoc(obj) or ""
            summary = _summary(doc)
            parts.append(f"\n### `{module_name}.{name}` ({_kind(obj)})\n\n```python\n{_signature(name, obj)}\n```\n"
                         + (f"\n{summary}\n" if summary else ""))
    return "".join(parts)


def main(argv) -> int:
    text = render()
    if "--check" in argv:
        if PATH.read_text() != text:
            print(f"{PATH} is out of date: run python docs/api.py", file=sys.stderr)
            return 1
        return 0
    PATH.write_text(text)
    print(f"wrote {PATH} ({text.count(chr(10))} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
