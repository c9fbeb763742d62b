"""Every public name has a Google-style docstring (docs/reference/ is built from them).

Walks the names of tests/api_names.txt and the public methods of the main classes and
fails, listing offenders, when

- a docstring is missing;
- a callable with parameters has no `Args:` section (a class documents its constructor's
  arguments in the class docstring, or in `__init__`'s, as Keras does);
- a function or method that returns a value has no `Returns:` (or `Yields:`) section and
  its summary does not start with "Returns"/"Yields" (Google style allows that for a
  summary that describes the result fully).

Names of JAX's own functions re-exported under Keras names are documented by JAX and
skipped, as the reference pages skip them (tests/docs/reference_pages.py).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAMES = ROOT / "tests" / "api_names.txt"

# The main classes whose public methods are checked too: {public name: methods to check, or
# None for every public method and property the class (or a loopax base) defines}.
MAIN_CLASSES = {
    "loopax.Variable": None,
    "loopax.GradientTape": None,
    "loopax.Layer": None,
    "loopax.Model": None,
    "loopax.Sequential": None,
    "loopax.models.Functional": None,
    "loopax.Optimizer": None,
    "loopax.Loss": None,
    "loopax.Metric": None,
    "loopax.callbacks.Callback": None,
}
# Trainer (a base of Model) is checked for these methods; its other public members are
# checked only as far as Model's walk reaches them, which the list below narrows.
TRAINER_METHODS = {"compile", "fit", "evaluate", "predict", "train_on_batch",
                   "test_on_batch", "predict_on_batch"}

# Names that need no `Args:` section although they take parameters: {qualified name: why}.
ARGS_NOT_NEEDED: dict[str, str] = {}

# Known gaps, still to be written: the problems this test found when it was added, less those
# fixed since (one "name: problem" line each). The test fails on any problem not listed here
# and on a listed one that is gone (delete that line), so the file only shrinks.
KNOWN_GAPS = Path(__file__).with_name("docstring_gaps.txt")

# Names that need no `Returns:` section although a `return value` is in their source.
RETURNS_NOT_NEEDED: dict[str, str] = {}

_SECTION = re.compile(r"^\s*(Args|Arguments|Returns|Yields|Raises|Example|Examples)\s*:\s*$",
                      re.MULTILINE)


def _sections(doc: str | None) -> set[str]:
    return set(_SECTION.findall(doc or ""))


def _resolve(line: str):
    module, _, name = line.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _is_loopax(obj) -> bool:
    return (getattr(obj, "__module__", None) or "").startswith("loopax")


def _parameters(fn, *, bound: bool) -> list[str]:
    """The parameters a caller passes (not `self`/`cls`)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    params = list(sig.parameters)
    if bound and params and params[0] in ("self", "cls"):
        params = params[1:]
    return params


def _returns_value(fn) -> bool:
    """Whether `fn`'s own body (not nested functions) has `return <something not None>`."""
    fn = inspect.unwrap(fn)
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError):
        return False
    tree = ast.parse(source)
    body = tree.body[0]
    found = False

    def visit(node):
        nonlocal found
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                  ast.ClassDef)):
                continue
            if isinstance(child, ast.Return) and child.value is not None and not (
                    isinstance(child.value, ast.Constant) and child.value.value is None):
                found = True
            if isinstance(child, (ast.Yield, ast.YieldFrom)):
                found = True
            visit(child)

    visit(body)
    return found


def _init_doc(cls) -> str:
    init = cls.__dict__.get("__init__")
    return (cls.__doc__ or "") + "\n" + ((init.__doc__ or "") if init else "")


def _own_init_params(cls) -> list[str]:
    """The constructor's parameters when `cls` or a loopax base defines `__init__`."""
    for base in cls.__mro__:
        if "__init__" in base.__dict__:
            if not _is_loopax(base):
                return []
            return _parameters(base.__dict__["__init__"], bound=True)
    return []


def _check_callable(qualname: str, fn, doc: str | None, *, bound: bool, problems: list):
    if not (doc or "").strip():
        problems.append(f"{qualname}: no docstring")
        return
    sections = _sections(doc)
    if (_parameters(fn, bound=bound) and not sections & {"Args", "Arguments"}
            and qualname not in ARGS_NOT_NEEDED):
        problems.append(f"{qualname}: no Args: section")
    if (_returns_value(fn) and not sections & {"Returns", "Yields"}
            and not doc.lstrip().startswith(("Returns", "Yields"))
            and qualname not in RETURNS_NOT_NEEDED):
        problems.append(f"{qualname}: no Returns: section")


def _check_class(qualname: str, cls, problems: list):
    if not (cls.__doc__ or "").strip():
        problems.append(f"{qualname}: no docstring")
        return
    if (_own_init_params(cls) and not _sections(_init_doc(cls)) & {"Args", "Arguments"}
            and qualname not in ARGS_NOT_NEEDED):
        problems.append(f"{qualname}: no Args: section (constructor arguments)")


def public_name_problems() -> list[str]:
    problems, seen = [], set()
    for line in NAMES.read_text().split():
        obj = _resolve(line)
        if inspect.ismodule(obj):
            if not (obj.__doc__ or "").strip():
                problems.append(f"{line}: module without a docstring")
            continue
        if not callable(obj) or not _is_loopax(obj):
            continue   # constants, and JAX's own functions under Keras names
        if id(obj) in seen:
            continue   # an alias of a name checked already (`max_norm = MaxNorm`)
        seen.add(id(obj))
        if inspect.isclass(obj):
            _check_class(line, obj, problems)
        else:
            _check_callable(line, obj, obj.__doc__, bound=False, problems=problems)
    return problems


def _members(cls, only: set[str] | None):
    """(name, defining class, raw attribute) of the public members loopax defines."""
    for name in sorted(dir(cls)):
        if name.startswith("_") or (only is not None and name not in only):
            continue
        for base in cls.__mro__:
            if name in base.__dict__:
                if _is_loopax(base):
                    yield name, base, base.__dict__[name]
                break


def method_problems() -> list[str]:
    problems, seen = [], set()
    for line, only in MAIN_CLASSES.items():
        cls = _resolve(line)
        for name, owner, attr in _members(cls, only):
            if owner.__name__ == "Trainer" and name not in TRAINER_METHODS:
                continue
            key = (owner, name)
            if key in seen:
                continue
            seen.add(key)
            qualname = f"{owner.__module__}.{owner.__qualname__}.{name}"
            if isinstance(attr, property):
                if not (attr.__doc__ or "").strip():
                    problems.append(f"{qualname}: no docstring (property)")
                continue
            fn = attr.__func__ if isinstance(attr, (staticmethod, classmethod)) else attr
            if not callable(fn):
                continue
            _check_callable(qualname, fn, fn.__doc__,
                            bound=not isinstance(attr, staticmethod), problems=problems)
    return problems


def _known_gaps() -> set[str]:
    if not KNOWN_GAPS.exists():
        return set()
    return {line.strip() for line in KNOWN_GAPS.read_text().splitlines()
            if line.strip() and not line.startswith("#")}


def test_main_classes_are_fully_documented():
    problems = method_problems()
    assert not problems, f"{len(problems)} docstring problems:\n" + "\n".join(problems)


def test_public_names_are_documented():
    problems = public_name_problems()
    if os.environ.get("LOOPAX_UPDATE_DOCSTRING_GAPS"):
        KNOWN_GAPS.write_text(
            "# Docstring problems still to fix (tests/docs/test_docstrings.py); delete lines as\n"
            "# they are fixed, never add any.\n" + "".join(p + "\n" for p in sorted(problems)))
    gaps = _known_gaps()
    new = sorted(set(problems) - gaps)
    fixed = sorted(gaps - set(problems))
    assert not new, f"{len(new)} new docstring problems:\n" + "\n".join(new)
    assert not fixed, ("fixed, so delete these lines from tests/docs/docstring_gaps.txt:\n"
                       + "\n".join(fixed))


def test_the_checks_catch_what_they_should():
    """The checker itself: a bare function fails, a documented one passes."""
    def bare(x):
        return x

    def documented(x):
        """Doubles `x`.

        Args:
            x: A number.

        Returns:
            `2 * x`.
        """
        return 2 * x

    problems = []
    _check_callable("bare", bare, bare.__doc__, bound=False, problems=problems)
    assert problems == ["bare: no docstring"]
    bare.__doc__ = "The input, unchanged."
    problems = []
    _check_callable("bare", bare, bare.__doc__, bound=False, problems=problems)
    assert problems == ["bare: no Args: section", "bare: no Returns: section"]
    problems = []
    _check_callable("documented", documented, documented.__doc__, bound=False,
                    problems=problems)
    assert problems == []
