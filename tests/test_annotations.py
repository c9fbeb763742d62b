"""The core packages' public functions are fully annotated, so mypy checks their callers.

"Public" is a module-level function or a method of a module-level class whose names do not
start with an underscore, in the packages pyproject.toml's [tool.mypy] checks. Each such
function annotates every parameter (but `self`/`cls`) and its return.
"""

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def checked_files():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    for entry in config["files"]:
        path = ROOT / entry
        yield from sorted(path.rglob("*.py")) if path.is_dir() else [path]


def public_functions(tree):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_"):
                yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if (isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))
                        and not item.name.startswith("_")):
                    yield f"{node.name}.{item.name}", item


def missing_annotations(function):
    args = function.args
    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    if params and params[0].arg in ("self", "cls"):
        params = params[1:]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    missing = [p.arg for p in params if p.annotation is None]
    if function.returns is None:
        missing.append("return")
    return missing


def test_public_functions_are_annotated():
    gaps = []
    for path in checked_files():
        tree = ast.parse(path.read_text(), filename=str(path))
        for name, function in public_functions(tree):
            missing = missing_annotations(function)
            if missing:
                where = f"{path.relative_to(ROOT)}:{function.lineno}"
                gaps.append(f"{where} {name}: {', '.join(missing)}")
    assert not gaps, f"{len(gaps)} public functions lack annotations:\n" + "\n".join(gaps)
