"""Random ops inside compiled fit/evaluate/predict steps draw fresh numbers every
step, and the same numbers again after `set_random_seed`."""

import jax
import numpy as np
import pytest

import loopax

X = np.ones((16, 3), np.float32)
Y = np.zeros((16, 2), np.float32)


class UnseededNoise(loopax.layers.Layer):
    """Adds N(0, 1) noise drawn with `seed=None` (the global generator)."""

    def call(self, x):
        return x + loopax.random.normal(x.shape)


class Sampler(loopax.layers.Layer):
    """Adds N(0, 1) noise drawn from its own SeedGenerator."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.seed_generator = loopax.random.SeedGenerator(3)

    def call(self, x):
        return x + loopax.random.normal(x.shape, seed=self.seed_generator)


def noisy_model(noise_cls, seed=7, steps_per_execution="auto"):
    loopax.utils.set_random_seed(seed)
    # A constant function (zero kernel, zero bias): the outputs are the noise itself.
    model = loopax.Sequential([loopax.layers.Dense(2, kernel_initializer="zeros"), noise_cls()])
    model.compile(loopax.optimizers.SGD(0.0), "mse", steps_per_execution=steps_per_execution)
    return model


@pytest.mark.parametrize("steps_per_execution", ["auto", 1])
def test_unseeded_noise_differs_every_epoch_under_fit(steps_per_execution):
    def run():
        model = noisy_model(UnseededNoise, steps_per_execution=steps_per_execution)
        return model.fit(X, Y, epochs=3, batch_size=4, verbose=0).history["loss"]

    losses = run()
    # Learning rate 0: only the noise changes the loss (mean of 8 squared N(0,1)
    # per batch): a constant noise would repeat the same loss every epoch.
    assert len(set(losses)) == 3, losses
    assert all(0.2 < loss < 3.0 for loss in losses), losses
    assert run() == losses   # bit-identical after set_random_seed


@pytest.mark.parametrize("noise_cls", [UnseededNoise, Sampler])
def test_two_predicts_differ_and_a_seeded_rerun_repeats_them(noise_cls):
    def run():
        model = noisy_model(noise_cls)
        return model.predict(X, batch_size=4, verbose=0), model.predict(X, batch_size=4,
                                                                         verbose=0)

    first, second = run()
    assert not np.allclose(first, second)
    # Fresh noise for every batch and row, roughly standard normal.
    assert len(np.unique(np.round(first, 6))) == first.size
    assert abs(first.mean()) < 0.6 and 0.5 < first.std() < 1.6
    again_first, again_second = run()
    np.testing.assert_array_equal(first, again_first)
    np.testing.assert_array_equal(second, again_second)


def test_predict_writes_the_advanced_seed_state_back():
    model = noisy_model(Sampler)
    sampler = model.layers[-1]
    model.predict(X, batch_size=4, verbose=0)   # builds the model (an eager call draws)
    before = np.asarray(sampler.seed_generator.state.value)
    model.predict(X, batch_size=4, verbose=0)
    assert not np.array_equal(before, np.asarray(sampler.seed_generator.state.value))


@pytest.mark.parametrize("noise_cls", [UnseededNoise, Sampler])
def test_two_evaluates_differ(noise_cls):
    model = noisy_model(noise_cls)
    assert model.evaluate(X, Y, verbose=0) != model.evaluate(X, Y, verbose=0)


def test_unseeded_op_under_bare_jit_raises_asking_for_a_seed_generator():
    with pytest.raises(ValueError, match="SeedGenerator"):
        jax.jit(lambda x: x + loopax.random.normal((2,)))(np.ones(2, np.float32))


def test_unseeded_noise_works_in_a_functional_model():
    inputs = loopax.Input((2,))
    model = loopax.Model(inputs, UnseededNoise()(inputs))
    first, second = model.predict(np.zeros((4, 2), np.float32), verbose=0), \
        model.predict(np.zeros((4, 2), np.float32), verbose=0)
    assert first.shape == (4, 2) and not np.allclose(first, second)
