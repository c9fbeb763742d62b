"""The logs of an eager run (`run_eagerly=True` or `jit_compile=False`) list
their keys in the order Keras 3 lists them, the order a compiled run has:
`History.history`, `evaluate(return_dict=True)` and callbacks' logs."""

import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")
if keras.backend.backend() != "jax":
    pytest.skip("needs Keras with KERAS_BACKEND=jax", allow_module_level=True)

x = np.linspace(-1, 1, 24, dtype="float32").reshape(8, 3)
y = (np.arange(8) % 2).astype("int32")


def key_orders(library, **compile_kwargs):
    """`(history keys, evaluate keys, keys of on_epoch_end's logs)` of one fit."""
    model = library.Sequential([library.Input((3,)), library.layers.Dense(2, activation="softmax")])
    model.compile(
        "adam",
        "sparse_categorical_crossentropy",
        metrics=["accuracy", library.metrics.SparseTopKCategoricalAccuracy(k=1, name="top1")],
        **compile_kwargs,
    )
    seen = []
    logger = library.callbacks.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(list(logs)))
    history = model.fit(x, y, validation_data=(x, y), verbose=0, callbacks=[logger])
    evaluated = model.evaluate(x, y, verbose=0, return_dict=True)
    return list(history.history), list(evaluated), seen[0]


@pytest.mark.parametrize("compile_kwargs", [
    pytest.param({"run_eagerly": True}, id="run_eagerly"),
    pytest.param({"jit_compile": False}, id="jit_compile_false"),
])
def test_log_keys_in_keras_order(compile_kwargs):
    assert key_orders(loopax, **compile_kwargs) == key_orders(keras, **compile_kwargs)
