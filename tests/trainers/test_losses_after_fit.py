"""`model.losses` after fit/evaluate/predict: a compiled step's `add_loss` values
are tracers of its trace and must not outlive it (they did: `losses` returned
`LinearizeTracer`s after `fit()`). Compared with Keras 3.15.1 on the same script."""

import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

X = np.linspace(-1, 1, 24, dtype="float32").reshape(8, 3)
Y = np.ones((8, 2), "float32")


def _model(lib):
    class SquareLoss(lib.layers.Layer):
        def call(self, x):
            self.add_loss(lib.ops.mean(x ** 2))
            return x

    model = lib.Sequential([lib.Input((3,)),
                            lib.layers.Dense(2, activity_regularizer="l2",
                                             kernel_regularizer="l1"),
                            SquareLoss()])
    model.compile("sgd", "mse")
    return model


def _run(model, then):
    model.fit(X, Y, batch_size=4, epochs=1, verbose=0, shuffle=False)
    then(model)
    return model.losses


@pytest.mark.parametrize("then", [
    pytest.param(lambda m: None, id="fit"),
    pytest.param(lambda m: m.evaluate(X, Y, verbose=0), id="evaluate"),
    pytest.param(lambda m: m.predict(X, verbose=0), id="predict"),
    pytest.param(lambda m: m(X), id="eager-call"),
])
def test_losses_after_a_compiled_pass_are_concrete_and_as_keras(then):
    reference, model = _model(keras), _model(loopax)
    model.set_weights(reference.get_weights())
    ours, theirs = _run(model, then), _run(reference, then)
    assert not any(isinstance(loss, jax.core.Tracer) for loss in ours), ours
    assert len(ours) == len(theirs)
    # The kernel penalty (from the trained weights) and, after an eager call,
    # that call's activity and add_loss values.
    np.testing.assert_allclose([float(v) for v in ours], [float(v) for v in theirs],
                               rtol=1e-4)
