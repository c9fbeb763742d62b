"""The API reference pages (docs/reference/) generated from tests/api_names.txt.

One page per public module, one mkdocstrings entry (`::: loopax.layers.Dense`) per public
name, so the reference covers exactly the public API that tests/test_public_api.py pins.
Regenerate after the API changes (`python tools/api_gen.py` runs this too, after writing the
public `__init__.py` files and tests/api_names.txt):

    python tests/docs/reference_pages.py
"""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = ROOT / "tests" / "api_names.txt"
REFERENCE = ROOT / "docs" / "reference"

INTRO = {
    "loopax": "Top-level names: models, layers' base classes, Variable, GradientTape, function.",
    "loopax.layers": "Layers, with Keras 3's names and arguments.",
    "loopax.ops": "Operations on arrays, Variables and Tensors (Keras 3's `keras.ops`).",
    "loopax.tf": "TensorFlow 2 names with TensorFlow's signatures and defaults "
                 "(`import loopax.tf as tf`); see the guide 'Migrating from tf.keras'.",
}


def _page_name(module):
    return "index" if module == "loopax" else module.removeprefix("loopax.").replace(".", "_")


def pages():
    """{file name: page text} for every public module."""
    by_module, foreign, constants = {}, {}, {}
    for line in NAMES.read_text().split():
        module, _, name = line.rpartition(".")
        obj = getattr(importlib.import_module(module), name, None)
        if inspect.ismodule(obj):
            continue   # a submodule has a page of its own
        if obj is None or isinstance(obj, (bool, int, float, str)):
            constants.setdefault(module, []).append((name, obj))   # nothing to inspect
            continue
        origin = getattr(obj, "__module__", None) or ""
        if callable(obj) and not origin.startswith("loopax"):
            # JAX's own function under a Keras name: documented by JAX, linked here.
            foreign.setdefault(module, []).append((name, f"{origin}.{obj.__name__}"))
            continue
        by_module.setdefault(module, []).append(name)
    out = {}
    for module, names in sorted(by_module.items()):
        lines = [f"# {module}", ""]
        if module in INTRO:
            lines += [INTRO[module], ""]
        if module == "loopax":
            others = sorted(m for m in by_module if m != "loopax")
            lines += ["Modules: " + ", ".join(f"[{m}]({_page_name(m)}.md)" for m in others), ""]
        if module in foreign:
            lines += ["JAX's functions, under Keras's names: "
                      + ", ".join(f"`{name}` (`{target.replace('._src', '')}`)"
                                  for name, target in foreign[module]), ""]
        if module in constants:
            lines += ["Constants: " + ", ".join(f"`{name}` = `{value!r}`"
                                                for name, value in constants[module]), ""]
        for name in names:
            lines += [f"::: {module}.{name}", ""]
        out[_page_name(module) + ".md"] = "\n".join(lines)
    return out


def write():
    REFERENCE.mkdir(parents=True, exist_ok=True)
    for old in REFERENCE.glob("*.md"):
        old.unlink()
    for name, text in pages().items():
        (REFERENCE / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    import sys
    sys.path.insert(0, str(ROOT))
    write()
    print(f"wrote {len(pages())} pages to {REFERENCE}")
