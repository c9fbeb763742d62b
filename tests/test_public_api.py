"""The public API is deliberate: the names each public module exports are
checked in (tests/api_names.txt), so adding or removing one shows in a diff.

After a deliberate change, regenerate the list with
`LOOPAX_UPDATE_API=1 python -m pytest tests/test_public_api.py` and review its diff.
"""

from __future__ import annotations

import builtins
import importlib
import os
import pkgutil
from pathlib import Path

import pytest

import loopax

NAMES_FILE = Path(__file__).with_name("api_names.txt")


def public_modules() -> list[str]:
    """`loopax` and its public subpackages/modules (everything outside `loopax.src`)."""
    names = ["loopax"]
    for info in pkgutil.walk_packages(loopax.__path__, "loopax."):
        if not info.name.startswith("loopax.src"):
            names.append(info.name)
    return sorted(names)


def exported_names(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n in vars(module) if not n.startswith("_")]
    return sorted(set(names))


def current_api() -> list[str]:
    return [f"{m}.{n}" for m in public_modules() for n in exported_names(m)]


def test_exported_names_match_the_checked_in_list():
    current = current_api()
    if os.environ.get("LOOPAX_UPDATE_API"):
        NAMES_FILE.write_text("\n".join(current) + "\n")
    expected = NAMES_FILE.read_text().split()
    added = sorted(set(current) - set(expected))
    removed = sorted(set(expected) - set(current))
    assert not added and not removed, (
        f"The public API changed. Added: {added}. Removed: {removed}. If that is "
        "deliberate, run `LOOPAX_UPDATE_API=1 python -m pytest tests/test_public_api.py` and "
        "commit the list.")


def test_star_import_does_not_shadow_builtins():
    namespace = {}
    exec("from loopax import *", namespace)
    shadowed = sorted(n for n in namespace if not n.startswith("__") and hasattr(builtins, n))
    assert shadowed == []
    assert "Model" in namespace and "layers" in namespace


@pytest.mark.parametrize("module_name", sorted(set(public_modules()) - {"loopax"}))
def test_public_modules_only_reexport(module_name):
    """Public modules define no functions or classes of their own (they live in loopax.src)."""
    module = importlib.import_module(module_name)
    own = [n for n, v in vars(module).items()
           if getattr(v, "__module__", None) == module_name and callable(v)]
    assert own == []


def test_keras_public_names_exist():
    keras = pytest.importorskip("keras")
    for name in ("StatelessScope", "Loss", "Metric", "Optimizer", "Initializer",
                 "Regularizer", "InputSpec", "Variable", "Input", "Layer", "Model",
                 "Sequential", "name_scope"):
        assert hasattr(keras, name) and hasattr(loopax, name), name
    for name in ("floatx", "set_floatx", "epsilon", "backend", "image_data_format"):
        assert getattr(loopax.config, name)() if name != "set_floatx" else True
        assert hasattr(keras.config, name)
    assert loopax.config.epsilon() == keras.config.epsilon()
    assert loopax.config.floatx() == keras.config.floatx() == "float32"
    assert loopax.config.image_data_format() == keras.config.image_data_format()
    assert loopax.backend.backend() == "jax"
    assert loopax.backend.floatx() == "float32" and loopax.backend.epsilon() == 1e-7
    assert callable(loopax.utils.clear_session)


def test_set_floatx_changes_the_default_weight_dtype():
    try:
        loopax.config.set_floatx("float16")
        assert loopax.backend.floatx() == "float16"
        layer = loopax.layers.Dense(2)
        layer.build((None, 3))
        assert layer.kernel.dtype == "float16"
    finally:
        loopax.config.set_floatx("float32")


def test_clear_session_resets_automatic_names():
    loopax.utils.clear_session()
    first = loopax.layers.Dense(1).name
    loopax.utils.clear_session()
    assert loopax.layers.Dense(1).name == first


def test_stateless_scope_substitutes_and_collects_like_keras():
    v = loopax.Variable(1.0)
    with loopax.StatelessScope([(v, 5.0)]) as scope:
        assert float(v.value) == 5.0
        v.assign(7.0)
    assert float(v.value) == 1.0 and float(scope.get_current_value(v)) == 7.0

