"""AdaptiveMaxPooling1D/2D/3D, AdaptiveAveragePooling1D/2D/3D and
ops.adaptive_max_pool / adaptive_average_pool against Keras itself (outputs and
input gradients, through a GradientTape and jax.jit), and against the window
rule written out in NumPy."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import layers, ops

keras = pytest.importorskip("keras")

RTOL, ATOL = 1e-6, 1e-6

# (spatial input size, output_size, data_format): sizes that divide, that do not
# (overlapping windows of two sizes), equal sizes, and outputs larger than the input.
CASES = [
    pytest.param((7,), 3, "channels_last", id="1d-7to3"),
    pytest.param((10,), 4, "channels_first", id="1d-10to4-channels_first"),
    pytest.param((5,), 5, "channels_last", id="1d-5to5"),
    pytest.param((3, 8), (5, 2), "channels_first", id="2d-3x8to5x2-channels_first"),
    pytest.param((7, 10), (3, 4), "channels_last", id="2d-7x10to3x4"),
    pytest.param((5, 7, 4), (3, 2, 6), "channels_first", id="3d-5x7x4to3x2x6-channels_first"),
]
REDUCTIONS = ["Max", "Average"]


def _input(spatial, data_format, batch=2, channels=3, seed=0):
    shape = (batch, *spatial, channels) if data_format == "channels_last" \
        else (batch, channels, *spatial)
    return np.random.default_rng(seed).standard_normal(shape).astype("float32")


def _layers(reduction, rank, output_size, data_format):
    name = f"Adaptive{reduction}Pooling{rank}D"
    return (getattr(layers, name)(output_size, data_format=data_format),
            getattr(keras.layers, name)(output_size, data_format=data_format))


def _input_gradient(f, x, cotangent):
    return jax.grad(lambda x: jnp.sum(f(x) * cotangent))(x)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("spatial,output_size,data_format", CASES)
def test_layer_matches_keras(reduction, spatial, output_size, data_format):
    x = _input(spatial, data_format)
    ours, theirs = _layers(reduction, len(spatial), output_size, data_format)
    expected = np.asarray(jax.jit(theirs)(x))   # Keras eagerly compiles op by op: slower
    got = ours(x)
    assert got.shape == expected.shape == ours.compute_output_shape(x.shape)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=RTOL, atol=ATOL)


# Keras's max-pool gradient compiles slowly on CPU: a few cases cover both
# reductions, both layouts, overlapping windows and outputs larger than the input
# (gradients summed over repeated entries).
GRADIENT_CASES = [
    pytest.param("Max", (10,), 4, "channels_first", id="max-1d-10to4-channels_first"),
    pytest.param("Max", (3,), 5, "channels_last", id="max-1d-3to5"),
    pytest.param("Average", (7, 10), (3, 4), "channels_first",
                 id="average-2d-7x10to3x4-channels_first"),
    pytest.param("Average", (5, 2, 3), (3, 5, 3), "channels_last", id="average-3d-5x2x3to3x5x3"),
]


@pytest.mark.parametrize("reduction,spatial,output_size,data_format", GRADIENT_CASES)
def test_input_gradients_match_keras_through_jit_and_tape(reduction, spatial, output_size,
                                                          data_format):
    x = jnp.asarray(_input(spatial, data_format, seed=4))
    ours, theirs = _layers(reduction, len(spatial), output_size, data_format)
    out_shape = ours.compute_output_shape(x.shape)
    cotangent = np.random.default_rng(1).standard_normal(out_shape).astype("float32")
    want = jax.jit(lambda x: _input_gradient(theirs, x, cotangent))(x)
    got = jax.jit(lambda x: _input_gradient(ours, x, cotangent))(x)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL, atol=ATOL)
    xv = loopax.Variable(x)
    with loopax.GradientTape() as tape:
        loss = ops.sum(ours(xv) * cotangent)
    np.testing.assert_allclose(np.asarray(tape.gradient(loss, xv)), np.asarray(want),
                               rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("spatial,output_size,data_format", [CASES[1], CASES[5]])
def test_op_matches_keras_op(reduction, spatial, output_size, data_format):
    x = _input(spatial, data_format, batch=1, seed=2)
    name = f"adaptive_{reduction.lower()}_pool"
    want = jax.jit(lambda x: getattr(keras.ops, name)(x, output_size, data_format=data_format))
    np.testing.assert_allclose(
        np.asarray(getattr(ops, name)(x, output_size, data_format=data_format)),
        np.asarray(want(x)), rtol=RTOL, atol=ATOL)


def test_windows_follow_floor_and_ceil_of_the_scaled_index():
    """Output i of an axis of n entries pools entries floor(i n / out) ..
    ceil((i+1) n / out) - 1."""
    x = np.random.default_rng(3).standard_normal((2, 7, 10, 3)).astype("float32")
    out_h, out_w = 3, 4

    def window(i, n, out):
        return slice(math.floor(i * n / out), math.ceil((i + 1) * n / out))

    for reduce, name in ((np.max, "adaptive_max_pool"), (np.mean, "adaptive_average_pool")):
        want = np.stack([np.stack([reduce(x[:, window(i, 7, out_h), window(j, 10, out_w)],
                                          axis=(1, 2)) for j in range(out_w)], axis=1)
                         for i in range(out_h)], axis=1)
        np.testing.assert_allclose(np.asarray(getattr(ops, name)(x, (out_h, out_w))), want,
                                   rtol=1e-6, atol=1e-6)


def test_dtypes_match_keras():
    ints = np.arange(2 * 7 * 3, dtype="int32").reshape(2, 7, 3) % 5
    floats = _input((7,), "channels_last")
    for reduction in REDUCTIONS:
        ours, theirs = _layers(reduction, 1, 3, "channels_last")
        got, want = ours(ints), jax.jit(theirs)(ints)
        assert got.dtype == want.dtype    # max: int32; average: float32
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=RTOL)
        name = f"Adaptive{reduction}Pooling1D"
        ours, theirs = (getattr(lib.layers, name)(3, dtype="mixed_bfloat16")
                        for lib in (loopax, keras))
        got, want = ours(floats), jax.jit(theirs)(floats)
        assert got.dtype == want.dtype == "bfloat16"   # (loopax sums in float32)
        np.testing.assert_allclose(np.asarray(got, "float32"), np.asarray(want, "float32"),
                                   rtol=1e-2, atol=1e-2)


def test_compute_output_shape_matches_keras_and_any_input_size_works():
    for data_format, shape in (("channels_last", (None, 7, 9, 4)),
                               ("channels_first", (None, 4, 7, 9))):
        ours, theirs = _layers("Average", 2, (2, 3), data_format)
        assert ours.compute_output_shape(shape) == theirs.compute_output_shape(shape)
    # Any spatial size in, a fixed size out: one model takes images of several sizes.
    inputs = loopax.Input((None, None, 4))
    model = loopax.Model(inputs, layers.Flatten()(layers.AdaptiveMaxPooling2D((2, 3))(inputs)))
    assert model.output_shape == (None, 24)
    for spatial in ((7, 9), (4, 3)):
        x = _input(spatial, "channels_last", channels=4)
        np.testing.assert_array_equal(np.asarray(model(x)),
                                      np.asarray(ops.adaptive_max_pool(x, (2, 3))).reshape(2, -1))


@pytest.mark.parametrize("name,output_size", [
    ("AdaptiveMaxPooling1D", 4), ("AdaptiveAveragePooling2D", (2, 5)),
    ("AdaptiveMaxPooling3D", [1, 2, 3])], ids=["1d", "2d", "3d-list"])
def test_config_round_trips_and_keras_reads_it(name, output_size):
    layer = getattr(layers, name)(output_size, data_format="channels_first", name="pool")
    config = layer.get_config()
    rank = int(name[-2])
    expected = (output_size,) * rank if isinstance(output_size, int) else tuple(output_size)
    assert config["output_size"] == expected and config["data_format"] == "channels_first"
    assert type(layer).from_config(config).get_config() == config
    assert type(layers.deserialize(layers.serialize(layer))) is type(layer)
    theirs = getattr(keras.layers, name).from_config(config)
    assert (tuple(theirs.output_size), theirs.data_format) == (expected, "channels_first")
    back = getattr(layers, name).from_config(
        {k: v for k, v in theirs.get_config().items() if k in config and k != "dtype"})
    assert back.get_config() == config


@pytest.mark.parametrize("make,error,match", [
    (lambda: layers.AdaptiveMaxPooling1D(2.0), TypeError,
     r"AdaptiveMaxPooling1D: `output_size` must be an int or a tuple of 1 ints, got 2\.0"),
    (lambda: layers.AdaptiveAveragePooling2D("3"), TypeError, "must be an int or a tuple of 2"),
    (lambda: layers.AdaptiveAveragePooling2D(None), TypeError, "got None"),
    (lambda: layers.AdaptiveMaxPooling2D((2, 2.5)), TypeError, "tuple of 2 ints"),
    (lambda: layers.AdaptiveAveragePooling1D(0), ValueError,
     r"AdaptiveAveragePooling1D: `output_size` must be a positive int .* got \(0,\)"),
    (lambda: layers.AdaptiveMaxPooling3D((2, -1, 2)), ValueError, "positive ints"),
    (lambda: layers.AdaptiveMaxPooling1D((1, 2)), ValueError, r"tuple of 1 positive.*\(1, 2\)"),
    (lambda: layers.AdaptiveAveragePooling2D((2, 2, 2)), ValueError, "tuple of 2 positive"),
    (lambda: layers.AdaptiveMaxPooling2D(2, data_format="NHWC"), ValueError,
     "`data_format` must be 'channels_last' or 'channels_first'"),
], ids=["float", "str", "none", "float-in-tuple", "zero", "negative", "too-long-1d",
        "too-long-2d", "data_format"])
def test_bad_arguments_are_refused(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match=r"adaptive_max_pool: `output_size` must be .* 2 "
                                         r"positive ints .* got \(2, 2, 2\)"):
        ops.adaptive_max_pool(np.zeros((1, 4, 4, 1), "float32"), (2, 2, 2))
    with pytest.raises(ValueError, match=r"adaptive_average_pool: inputs must have 1 to 3 "
                                         r"spatial dimensions.*\(2, 4\)"):
        ops.adaptive_average_pool(np.zeros((2, 4), "float32"), 2)
    with pytest.raises(ValueError, match=r"has shape \(1, 4, 4\), but the layer expects rank 4"):
        layers.AdaptiveMaxPooling2D(2)(np.zeros((1, 4, 4), "float32"))
