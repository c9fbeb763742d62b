"""Layers under mixed dtype policies against Keras 3: outputs (values and
dtypes) and updated statistics, from ordinary calls.

(Keras's own `stateless_call` runs `call` without the policy's casts, so a
mixed layer called that way computes in float32 there; loopax's applies the
policy as a plain call does. Models are unaffected: their layers are called.)"""

import jax.numpy as jnp
import numpy as np
import pytest
from keras_reference import assert_close, build_pair, keras

import loopax

RNG = np.random.default_rng(0)
X2 = RNG.normal(size=(4, 6)).astype("float32")
X3 = RNG.normal(size=(2, 5, 3)).astype("float32")

CASES = [
    ("Dense", {"units": 3, "activation": "relu"}, X2, {}),
    ("Conv1D", {"filters": 2, "kernel_size": 3}, X3, {}),
    ("BatchNormalization", {}, X2, {"training": True}),
    ("LayerNormalization", {}, X3, {}),
    ("Activation", {"activation": "softmax"}, X2, {}),
]


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
@pytest.mark.parametrize("name, kwargs, x, call_kwargs", CASES, ids=[c[0] for c in CASES])
def test_mixed_layer_matches_keras(policy, name, kwargs, x, call_kwargs):
    pair = build_pair(name, {**kwargs, "dtype": policy}, (x,), call_kwargs)
    assert [str(w.dtype) for w in pair[0].weights] == [str(w.dtype) for w in pair[1].weights]
    k_out, l_out = (jnp.asarray(layer(x, **call_kwargs)) for layer in pair)
    assert l_out.dtype == k_out.dtype == jnp.dtype(pair[0].compute_dtype)
    assert_close(l_out.astype(jnp.float32), k_out.astype(jnp.float32), 1e-2, 1e-2, "outputs")
    assert_close([np.asarray(w) for w in pair[1].weights],
                 [np.asarray(w) for w in pair[0].weights], 1e-4, 1e-4, "weights after the call")


def test_float32_head_of_a_mixed_model_matches_keras():
    """The Keras recipe: a mixed model whose last layer has dtype="float32"."""
    weights = None
    outs = []
    for lib in (keras, loopax):
        lib.mixed_precision.set_global_policy("mixed_bfloat16")
        try:
            inputs = lib.Input((6,))
            h = lib.layers.Dense(5, activation="relu")(inputs)
            logits = lib.layers.Dense(3)(h)
            probs = lib.layers.Activation("softmax", dtype="float32")(logits)
            model = lib.Model(inputs, probs)
        finally:   # Keras's default; loopax's is None (follow floatx)
            lib.mixed_precision.set_global_policy("float32" if lib is keras else None)
        if weights is None:
            weights = [RNG.normal(size=w.shape).astype("float32") for w in model.weights]
        model.set_weights(weights)
        assert str(logits.dtype) == "bfloat16" and str(probs.dtype) == "float32"
        outs.append(np.asarray(model(X2)))
    assert outs[0].dtype == outs[1].dtype == np.float32
    np.testing.assert_allclose(outs[1], outs[0], rtol=1e-2, atol=1e-2)
