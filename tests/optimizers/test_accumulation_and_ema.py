"""Gradient accumulation and EMA of weights, eagerly, against Keras 3, and
inside fit() with fused and unfused steps."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import optimizers

RNG = np.random.default_rng(0)
X = RNG.normal(size=(64, 3)).astype("float32")
Y = (X @ np.array([[1.0], [-2.0], [0.5]], np.float32) + 0.3).astype("float32")
GRADS = [RNG.normal(size=2).astype("float32") for _ in range(8)]


def keras_or_skip():
    os.environ.setdefault("KERAS_BACKEND", "jax")
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("needs Keras on JAX")
    return keras


def apply_sequence(lib, make_optimizer):
    variable = lib.Variable(np.array([0.5, -0.5], np.float32))
    optimizer = make_optimizer(lib)
    trace = []
    for g in GRADS:
        optimizer.apply([jnp.asarray(g)], [variable])
        trace.append(np.asarray(variable).copy())
    return trace, optimizer


def apply_sequence_keras(keras, make_optimizer):
    """`apply_sequence` in Keras through its `stateless_apply` compiled once (run
    eagerly, Keras compiles each of its ops on first use); the final values are
    assigned back to the optimizer's variables."""
    variable = keras.Variable(np.array([0.5, -0.5], np.float32))
    optimizer = make_optimizer(keras)
    optimizer.build([variable])
    step = jax.jit(optimizer.stateless_apply)
    slots, values = [v.value for v in optimizer.variables], [variable.value]
    trace = []
    for g in GRADS:
        values, slots = step(slots, [jnp.asarray(g)], values)
        trace.append(np.asarray(values[0]).copy())
    for v, value in zip(optimizer.variables, slots):
        v.assign(value)
    return trace, optimizer


@pytest.mark.parametrize("make", [
    lambda lib: lib.optimizers.Adam(0.1, gradient_accumulation_steps=4),
    lambda lib: lib.optimizers.SGD(0.1, momentum=0.9, gradient_accumulation_steps=3),
    lambda lib: lib.optimizers.SGD(0.3, use_ema=True, ema_momentum=0.8),
    lambda lib: lib.optimizers.Adam(0.1, use_ema=True, ema_momentum=0.5,
                                    ema_overwrite_frequency=3),
    lambda lib: lib.optimizers.Adam(
        lib.optimizers.schedules.ExponentialDecay(0.1, 1, 0.5),
        gradient_accumulation_steps=2, use_ema=True, ema_momentum=0.7),
], ids=["adam-accumulate", "momentum-accumulate", "ema", "ema-overwrite", "schedule-both"])
def test_matches_keras_step_by_step(make):
    keras = keras_or_skip()
    ours, optimizer = apply_sequence(loopax, make)
    theirs, keras_optimizer = apply_sequence_keras(keras, make)
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert int(optimizer.iterations) == int(np.asarray(keras_optimizer.iterations))


def test_micro_steps_run_no_update():
    variable = loopax.Variable(np.array([0.5, -0.5], np.float32))
    optimizer = optimizers.Adam(0.1, gradient_accumulation_steps=4)
    optimizer.build([variable])
    slots = lambda: [v.numpy().copy() for v in optimizer.variables[2:4]]
    for g in GRADS[:3]:
        optimizer.apply([jnp.asarray(g)], [variable])
        np.testing.assert_array_equal(variable.numpy(), [0.5, -0.5])
        assert all(not s.any() for s in slots())      # moments untouched
    np.testing.assert_allclose(optimizer.variables[-1].numpy(), sum(GRADS[:3]), rtol=1e-6)
    optimizer.apply([jnp.asarray(GRADS[3])], [variable])
    # One Adam step (t=1) on the mean gradient: lr * m / (sqrt(v) + eps) ~ lr * sign.
    mean = sum(GRADS[:4]) / 4
    np.testing.assert_allclose(variable.numpy(), np.array([0.5, -0.5]) - 0.1 * np.sign(mean),
                               rtol=1e-5)
    assert not optimizer.variables[-1].numpy().any()   # accumulator reset


def _model(seed=0):
    loopax.utils.set_random_seed(seed)
    inputs = loopax.Input((3,))
    h = loopax.layers.Dense(5, activation="tanh")(inputs)
    return loopax.Model(inputs, loopax.layers.Dense(1)(h))


def _fit(optimizer, batch_size, epochs, steps_per_execution, callbacks=None):
    model = _model()
    model.compile(optimizer, "mse", steps_per_execution=steps_per_execution)
    history = model.fit(X, Y, batch_size=batch_size, epochs=epochs, shuffle=False,
                        verbose=0, callbacks=callbacks)
    return model, history


@pytest.mark.parametrize("make", [lambda **k: optimizers.SGD(0.1, momentum=0.5, **k),
                                  lambda **k: optimizers.Adam(0.02, **k)],
                         ids=["sgd", "adam"])
def test_four_micro_batches_equal_one_step_on_the_4x_batch(make):
    big, _ = _fit(make(), batch_size=32, epochs=3, steps_per_execution=1)
    for steps_per_execution in (1, 8):
        small, _ = _fit(make(gradient_accumulation_steps=4), batch_size=8, epochs=3,
                        steps_per_execution=steps_per_execution)
        assert int(small.optimizer.iterations) == int(big.optimizer.iterations) == 6
        for a, b in zip(small.get_weights(), big.get_weights()):
            np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


class RecordWeights(loopax.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.trace = []

    def on_train_batch_end(self, batch, logs=None):
        self.trace.append(self.model.get_weights())


def test_ema_weights_equal_a_hand_computed_ema_fused_and_unfused():
    recorder = RecordWeights()
    _fit(optimizers.SGD(0.05), batch_size=16, epochs=2, steps_per_execution=1,
         callbacks=[recorder])
    momentum = 0.9
    expected = recorder.trace[0]                        # first step: the weights
    for weights in recorder.trace[1:]:
        expected = [momentum * e + (1 - momentum) * w for e, w in zip(expected, weights)]
    finals = []
    for steps_per_execution in (1, 8):
        model, _ = _fit(optimizers.SGD(0.05, use_ema=True, ema_momentum=momentum),
                        batch_size=16, epochs=2, steps_per_execution=steps_per_execution)
        # fit ends with finalize_variable_values: the averages become the weights.
        finals.append(model.get_weights())
        for a, e in zip(model.get_weights(), expected):
            np.testing.assert_allclose(a, e, rtol=1e-5, atol=1e-6)
    for a, b in zip(*finals):
        np.testing.assert_array_equal(a, b)


def test_swap_ema_weights_evaluates_with_the_averages_and_swaps_back():
    model = _model()
    model.compile(optimizers.SGD(0.05, use_ema=True, ema_momentum=0.9), "mse")
    model.fit(X, Y, batch_size=16, epochs=1, shuffle=False, verbose=0)
    optimizer = model.optimizer
    # Make the weights and the averages differ, as mid-training.
    raw = [w + 0.5 for w in model.get_weights()]
    model.set_weights(raw)
    averages = [v.numpy().copy() for v in optimizer._averages]
    plain = model.evaluate(X, Y, verbose=0)
    swapped = model.evaluate(X, Y, verbose=0, callbacks=[loopax.callbacks.SwapEMAWeights()])
    model.set_weights(averages)
    assert swapped == pytest.approx(model.evaluate(X, Y, verbose=0), rel=1e-6)
    assert swapped != pytest.approx(plain, rel=1e-3)
    model.set_weights(raw)
    model.predict(X, verbose=0, callbacks=[loopax.callbacks.SwapEMAWeights()])
    for a, b in zip(model.get_weights(), raw):
        np.testing.assert_array_equal(a, b)
    for v, a in zip(optimizer._averages, averages):
        np.testing.assert_array_equal(v.numpy(), a)


def test_swap_ema_weights_needs_an_ema_optimizer():
    model = _model()
    model.compile(optimizers.SGD(0.05), "mse")
    with pytest.raises(ValueError, match="use_ema=True"):
        model.evaluate(X, Y, verbose=0, callbacks=[loopax.callbacks.SwapEMAWeights()])


def test_iterations_is_the_count_of_full_updates_as_keras():
    """With gradient_accumulation_steps=N, `iterations` is calls // N (an array, not
    the Variable) and apply_gradients returns the call counter Variable, as Keras."""
    keras = keras_or_skip()
    traces = {}
    for lib in (loopax, keras):
        variable = lib.Variable(np.array([0.5, -0.5], np.float32))
        optimizer = lib.optimizers.SGD(0.1, gradient_accumulation_steps=3)
        trace = []
        for g in GRADS[:7]:
            counter = optimizer.apply_gradients([(jnp.asarray(g), variable)])
            assert isinstance(counter, lib.Variable)
            assert not isinstance(optimizer.iterations, lib.Variable)
            assert optimizer.iterations.dtype == "int32"
            trace.append((int(optimizer.iterations), int(counter.numpy())))
        assert optimizer.variables[0] is counter and counter.name == "iteration"
        traces[lib.__name__] = trace
    assert traces["loopax"] == traces["keras"] == [(i // 3, i) for i in range(1, 8)]


def _iterations_recorder(lib):
    """A `lib` callback recording (iterations, the call counter) after each batch."""
    class RecordIterations(lib.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            optimizer = self.model.optimizer
            self.trace.append((int(optimizer.iterations), int(optimizer.variables[0].numpy())))

    recorder = RecordIterations()
    recorder.trace = []
    return recorder


def test_fit_counts_iterations_as_keras():
    keras = keras_or_skip()
    traces = []
    for lib in (loopax, keras):
        recorder = _iterations_recorder(lib)
        model = lib.Sequential([lib.Input((3,)), lib.layers.Dense(1, kernel_initializer="ones")])
        model.compile(lib.optimizers.SGD(0.01, gradient_accumulation_steps=3), "mse")
        model.fit(X[:20], Y[:20], batch_size=4, epochs=2, shuffle=False, verbose=0,
                  callbacks=[recorder])
        traces.append((recorder.trace, model.get_weights()))
    (ours, our_weights), (theirs, their_weights) = traces
    assert ours == theirs == [(i // 3, i) for i in range(1, 11)]   # 5 batches x 2 epochs
    for a, b in zip(our_weights, their_weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    # Fused steps count the same.
    model, _ = _fit(optimizers.SGD(0.01, gradient_accumulation_steps=3), batch_size=4,
                    epochs=2, steps_per_execution=5)
    assert int(model.optimizer.iterations) == 2 * 16 // 3
