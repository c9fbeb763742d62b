"""Initializers: fans, bounds and variances (Keras formulas), seeding, names."""

import math

import numpy as np
import pytest

import loopax
from loopax import initializers
from loopax.src import random

BIG = (60, 90)  # enough samples for 5% moment checks, one compile per distribution


def test_compute_fans():
    assert initializers.compute_fans(()) == (1, 1)
    assert initializers.compute_fans((5,)) == (5, 5)
    assert initializers.compute_fans((3, 4)) == (3, 4)
    # conv kernel (kh, kw, in, out): receptive field times channels
    assert initializers.compute_fans((3, 3, 2, 8)) == (18, 72)


@pytest.mark.parametrize("name, limit", [
    ("glorot_uniform", math.sqrt(6 / (60 + 90))),
    ("he_uniform", math.sqrt(6 / 60)),
    ("lecun_uniform", math.sqrt(3 / 60)),
])
def test_uniform_variance_scaling_bounds(name, limit):
    w = np.asarray(initializers.get(name)(BIG))
    assert w.dtype == np.float32
    assert np.abs(w).max() <= limit and np.abs(w).max() > 0.95 * limit
    np.testing.assert_allclose(w.std(), limit / math.sqrt(3), rtol=0.05)


@pytest.mark.parametrize("name, std", [
    ("glorot_normal", math.sqrt(2 / (60 + 90))),
    ("he_normal", math.sqrt(2 / 60)),
    ("lecun_normal", math.sqrt(1 / 60)),
])
def test_truncated_normal_variance_scaling_has_target_std(name, std):
    w = np.asarray(initializers.get(name)(BIG))
    # The stddev is corrected for truncation at two (uncorrected) stddevs.
    np.testing.assert_allclose(w.std(), std, rtol=0.05)
    assert np.abs(w).max() <= 2 * std / 0.87962566103423978 + 1e-6


def test_variance_scaling_modes_and_distributions():
    w = np.asarray(initializers.VarianceScaling(3.0, "fan_out", "untruncated_normal", seed=1)(BIG))
    np.testing.assert_allclose(w.std(), math.sqrt(3 / 90), rtol=0.05)
    with pytest.raises(ValueError, match="mode"):
        initializers.VarianceScaling(mode="fan")


def test_random_distributions():
    w = np.asarray(initializers.RandomNormal(1.0, 0.5, seed=3)(BIG))
    np.testing.assert_allclose([w.mean(), w.std()], [1.0, 0.5], rtol=0.05)
    u = np.asarray(initializers.RandomUniform(-1.0, 3.0, seed=3)(BIG))
    assert u.min() >= -1 and u.max() < 3
    np.testing.assert_allclose(u.mean(), 1.0, atol=0.1)
    t = np.asarray(initializers.TruncatedNormal(0.0, 2.0, seed=3)(BIG))
    assert np.abs(t).max() <= 4.0


def test_constant_initializers_and_dtype():
    np.testing.assert_array_equal(initializers.Zeros()((2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(initializers.get("ones")((2,), "int32"), [1, 1])
    assert initializers.Ones()((2,), dtype="bfloat16").dtype == "bfloat16"
    np.testing.assert_array_equal(initializers.Constant(2.5)((2,)), [2.5, 2.5])
    np.testing.assert_array_equal(initializers.Identity(gain=2.0)((2, 3)), 2 * np.eye(2, 3))


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 3, 4)], ids=["tall", "wide", "rank_3"])
def test_orthogonal(shape):
    w = np.asarray(initializers.Orthogonal(gain=2.0, seed=0)(shape)).reshape(-1, shape[-1])
    small = min(w.shape)
    gram = w.T @ w if w.shape[0] >= w.shape[1] else w @ w.T
    np.testing.assert_allclose(gram, 4 * np.eye(small), atol=1e-5)


def test_int_seed_repeats_and_different_seeds_differ():
    a = initializers.GlorotUniform(seed=5)
    np.testing.assert_array_equal(a((3, 4)), a((3, 4)))
    np.testing.assert_array_equal(a((3, 4)), initializers.GlorotUniform(seed=5)((3, 4)))
    assert not np.array_equal(a((3, 4)), initializers.GlorotUniform(seed=6)((3, 4)))


def test_unseeded_initializers_follow_set_random_seed():
    init = initializers.HeNormal()
    random.set_random_seed(11)
    first, second = np.asarray(init((3, 4))), np.asarray(init((3, 4)))
    assert not np.array_equal(first, second)  # each call draws fresh numbers
    random.set_random_seed(11)
    np.testing.assert_array_equal(init((3, 4)), first)



def test_layers_built_after_the_same_seed_get_the_same_weights():
    def kernel():
        layer = loopax.layers.Dense(4)
        layer.build((None, 3))
        return layer.kernel.numpy()

    random.set_random_seed(3)
    first = kernel()
    assert not np.array_equal(kernel(), first)
    random.set_random_seed(3)
    np.testing.assert_array_equal(kernel(), first)


def test_get_by_names_classes_and_configs():
    assert isinstance(initializers.get("glorot_uniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("GlorotUniform"), initializers.GlorotUniform)
    assert isinstance(initializers.get("uniform"), initializers.RandomUniform)
    assert initializers.get(None) is None
    init = initializers.RandomNormal(mean=1.0, stddev=2.0, seed=4)
    clone = initializers.get(initializers.serialize(init))
    assert isinstance(clone, initializers.RandomNormal)
    assert clone.get_config() == {"mean": 1.0, "stddev": 2.0, "seed": 4}
    np.testing.assert_array_equal(clone((2, 2)), init((2, 2)))
    assert initializers.HeUniform(seed=1).get_config() == {"seed": 1}
    vs = initializers.VarianceScaling(2.0, "fan_avg", "uniform")
    assert initializers.VarianceScaling.from_config(vs.get_config()).get_config() == vs.get_config()


def test_unknown_initializer_lists_valid_names():
    with pytest.raises(ValueError) as err:
        initializers.get("glorot")
    msg = str(err.value)
    assert "'glorot'" in msg and "glorot_uniform" in msg and "he_normal" in msg


def test_variables_accept_initializer_names():
    v = loopax.Variable("ones", shape=(2, 2))
    np.testing.assert_array_equal(v.numpy(), np.ones((2, 2)))


def _largest_intermediate(jaxpr):
    """The most entries any value in `jaxpr` (nested jaxprs included) holds."""
    from jax.extend.core import Jaxpr
    largest = 0
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            largest = max(largest, math.prod(var.aval.shape))
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", param)
            if isinstance(inner, Jaxpr):
                largest = max(largest, _largest_intermediate(inner))
    return largest


@pytest.mark.parametrize("name", ["glorot_uniform", "he_normal", "random_normal",
                                  "variance_scaling"])
def test_large_weights_are_drawn_at_their_own_size(name):
    # (8193, 16384) was drawn at 2**28 entries (twice the kernel) and cut.
    import jax
    shape = (8193, 16384)
    init = initializers.get({"class_name": name, "config": {"seed": 1}}) \
        if name != "variance_scaling" else initializers.VarianceScaling(
            distribution="untruncated_normal", seed=1)
    jaxpr = jax.make_jaxpr(lambda: init(shape))()   # traced, never allocated
    assert jaxpr.out_avals[0].shape == shape
    assert _largest_intermediate(jaxpr.jaxpr) == math.prod(shape)


@pytest.mark.parametrize("name, expected_std", [
    ("glorot_uniform", math.sqrt(2 / (300 + 400))),   # U[-l, l]: l / sqrt(3)
    ("he_normal", math.sqrt(2 / 300)),
])
def test_large_weights_keep_their_distribution_and_seed(name, expected_std):
    shape = (300, 400)   # above the bucketed size: drawn at exactly this shape
    init = initializers.get({"class_name": name, "config": {"seed": 7}})
    w = np.asarray(init(shape))
    assert w.shape == shape
    np.testing.assert_allclose([w.mean(), w.std()], [0.0, expected_std], atol=expected_std * 0.02)
    np.testing.assert_array_equal(w, np.asarray(init(shape)))   # deterministic per seed
    assert not np.array_equal(w, np.asarray(initializers.get(
        {"class_name": name, "config": {"seed": 8}})(shape)))


# Weights above the old bucketed size (2**16 entries), as a ResNet's and a DenseNet's.
LARGE_SHAPES = [(3, 3, 128, 128), (1, 1, 544, 128), (2048, 1000)]
# Weights all drawn at 2**16 entries: odd sizes, one entry, exactly 2**16.
SMALL_SHAPES = [(1,), (3, 3, 1, 32), (7, 13), (784, 64), (256, 256)]


def _at_own_shape(name, shape, seed):
    """The values of `name`'s initializer drawn by JAX at exactly `shape` (Keras's way)."""
    import jax
    key = jax.random.key(seed)
    fan_in, fan_out = initializers.compute_fans(shape)
    if name == "glorot_uniform":
        limit = math.sqrt(6 / (fan_in + fan_out))
        return jax.random.uniform(key, shape, "float32", -limit, limit)
    # mean + stddev * sample, compiled as one program (as loopax's samplers are: XLA
    # fuses it into one multiply-add, eagerly it is rounded twice).
    if name == "he_normal":
        stddev = math.sqrt(2 / fan_in) / 0.87962566103423978
        return jax.jit(lambda k: 0.0 + stddev * jax.random.truncated_normal(
            k, -2.0, 2.0, shape, "float32"))(key)
    return jax.jit(lambda k: 0.0 + 0.05 * jax.random.normal(k, shape, "float32"))(key)


@pytest.mark.parametrize("shape", LARGE_SHAPES + SMALL_SHAPES,
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", ["glorot_uniform", "he_normal", "random_normal"])
def test_bucketed_weights_equal_a_draw_at_their_shape(name, shape):
    init = initializers.get({"class_name": name, "config": {"seed": 5}})
    np.testing.assert_array_equal(np.asarray(init(shape)),
                                  np.asarray(_at_own_shape(name, shape, 5)))


def _small_resnet_weights():
    loopax.utils.set_random_seed(0)
    layers = loopax.layers
    inputs = loopax.Input((16, 16, 3))
    x = layers.Conv2D(128, 3, padding="same")(inputs)
    y = layers.BatchNormalization()(x)
    y = layers.Conv2D(128, 3, padding="same", kernel_initializer="he_normal")(y)
    x = layers.Concatenate()([x, y])
    x = layers.Conv2D(128, 1)(x)
    x = layers.GlobalAveragePooling2D()(x)
    model = loopax.Model(inputs, layers.Dense(600)(x))
    return [np.asarray(w) for w in model.get_weights()]


def test_model_weights_equal_those_drawn_each_at_its_own_shape(monkeypatch):
    """Same global seed, same weights, whether large kernels share bucketed samplers
    or each is drawn at its own shape."""
    from loopax.src import initializers as initializers_module
    bucketed = _small_resnet_weights()
    monkeypatch.setattr(initializers_module, "_BUCKETED_SIZE", 0)
    monkeypatch.setattr(initializers_module, "_SMALL_SIZE", 0)
    own_shapes = _small_resnet_weights()
    assert [w.shape for w in bucketed] == [w.shape for w in own_shapes]
    assert max(w.size for w in bucketed) > 1 << 16
    for a, b in zip(bucketed, own_shapes):
        np.testing.assert_array_equal(a, b)


def test_kernels_of_many_sizes_share_a_few_compiled_samplers(count_compiles):
    """A DenseNet's 1x1 kernels take 32 more input channels at each layer: drawn each at
    its own shape, every one of them compiled a sampler (~0.3 s on CPU)."""
    with count_compiles() as compiles:
        init = initializers.GlorotUniform(seed=3)
        for channels in range(520, 1024, 32):   # 16 kernels of 66,560 to 126,976 entries
            init((1, 1, channels, 128))
    # The 2**17 sampler and a few small programs (the key); drawn each at its own shape: 18.
    assert len(compiles) <= 4


def test_small_weights_of_every_size_share_one_compiled_sampler(count_compiles):
    """An MLP's or a small convnet's kernels: each size compiled its own sampler
    (0.15-0.3 s each), most of a small script's first build."""
    import jax
    shapes = [(3, 3, 1, 32), (3, 3, 32, 64), (1600, 10), (784, 64), (64, 64), (64, 10)]
    with count_compiles() as compiles:
        kernels = [initializers.GlorotUniform(seed=11)(shape) for shape in shapes]
    assert len(compiles) <= 1   # the sampler, unless an earlier test compiled it
    for shape, kernel in zip(shapes, kernels):   # the values of a draw at the shape
        fan_in, fan_out = initializers.compute_fans(shape)
        limit = math.sqrt(6 / (fan_in + fan_out))
        np.testing.assert_array_equal(np.asarray(kernel), np.asarray(jax.random.uniform(
            jax.random.key(11), shape, "float32", -limit, limit)))
    with count_compiles() as compiles:
        for shape in [(5, 7), (100,), (2, 2, 3, 300)]:
            initializers.GlorotUniform(seed=12)(shape)
    assert compiles == []


@pytest.mark.parametrize("shape", [(32, 128), (128, 32), (3, 3, 4, 8)],
                         ids=lambda s: "x".join(map(str, s)))
def test_orthogonal_is_the_q_of_a_normal_draw_at_its_shape(shape):
    import jax
    rows, cols = math.prod(shape[:-1]), shape[-1]
    a = np.asarray(jax.jit(lambda k: 0.0 + 1.0 * jax.random.normal(
        k, (max(rows, cols), min(rows, cols)), "float32"))(jax.random.key(4)), np.float64)
    q, r = np.linalg.qr(a)
    q = q * np.sign(np.diagonal(r))
    expected = (q.T if rows < cols else q).reshape(shape)
    np.testing.assert_allclose(np.asarray(initializers.Orthogonal(seed=4)(shape)), expected,
                               atol=2e-5)
