"""The engine's boundaries (issue #20), kept by a scan of loopax/src: only `models/` and
`trainers/` read a model's private attributes, and only `data_adapters/` branches on the
class of a data adapter (everywhere else uses the `DataAdapter` interface)."""

import ast
import functools
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "loopax" / "src"


@functools.cache
def _parsed():
    return [(path.relative_to(SRC).as_posix(), ast.parse(path.read_text(encoding="utf-8")))
            for path in sorted(SRC.rglob("*.py"))]


def _sources(excluded):
    return [(relative, tree) for relative, tree in _parsed()
            if not any(relative.startswith(folder) for folder in excluded)]


def _is_model(node):
    """`model` or `<anything>.model`."""
    return (isinstance(node, ast.Name) and node.id == "model") or (
        isinstance(node, ast.Attribute) and node.attr == "model")


def private_model_reads(sources):
    return sorted(f"{relative}:{node.lineno} model.{node.attr}"
            for relative, tree in sources for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr.startswith("_")
            and not node.attr.startswith("__") and _is_model(node.value))


def adapter_class_checks(sources):
    found = []
    for relative, tree in sources:
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" \
                    and len(node.args) == 2 and "Adapter" in ast.unparse(node.args[1]):
                found.append(f"{relative}:{node.lineno} {ast.unparse(node)}")
    return found


def test_the_scans_see_what_they_look_for():
    code = ast.parse(
        "model._trainer_state.bounds\nself.model._fns\nmodel.__class__\n"
        "isinstance(adapter, ArrayDataAdapter)\nisinstance(x, (int, a.PyDatasetAdapter))"
    )
    assert private_model_reads([("x.py", code)]) == ["x.py:1 model._trainer_state",
                                                      "x.py:2 model._fns"]
    assert len(adapter_class_checks([("x.py", code)])) == 2


def test_only_models_and_trainers_read_a_models_private_attributes():
    assert private_model_reads(_sources(excluded=("models/", "trainers/"))) == []


def test_only_data_adapters_branch_on_an_adapter_class():
    assert adapter_class_checks(_sources(excluded=("trainers/data_adapters/",))) == []


def private_jax_imports(trees):
    """Every `import jax._src...` / `from jax._src... import` in the given modules:
    JAX's private modules move between releases without notice."""
    found = []
    for relative, tree in trees:
        for node in ast.walk(tree):
            names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            found += [f"{relative}:{node.lineno} {name}" for name in names
                      if name == "jax._src" or name.startswith("jax._src.")]
    return found


def test_no_private_jax_import_in_loopax_or_its_tests():
    tests = Path(__file__).resolve().parent
    texts = [(path.relative_to(tests).as_posix(), path.read_text("utf-8"))
             for path in sorted(tests.rglob("*.py"))]
    # Only files naming `_src` can import it (an identifier is never split in the source):
    # parsing the other ~330 test files cost about 1 s.
    test_trees = [(relative, ast.parse(text)) for relative, text in texts if "_src" in text]
    assert private_jax_imports(_parsed() + test_trees) == []


def test_private_jax_imports_are_found():
    trees = [("a.py", ast.parse("from jax._src.array import ArrayImpl\nimport jax._src.core\n"
                                "from jax import numpy\nimport jax._srcx\n"))]
    assert private_jax_imports(trees) == ["a.py:1 jax._src.array", "a.py:2 jax._src.core"]
