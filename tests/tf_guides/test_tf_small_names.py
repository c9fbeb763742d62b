"""The small TensorFlow names issue 36 lists: versions, reductions of lists and shapes,
`*_initializer=None`, `Normalization.mean/variance`, `tf.random.Generator`,
`reset_states`, `tf.train.list_variables/load_variable`, `tf.summary.trace_*`,
`tf.profiler.experimental`, `py_function` as a decorator."""

import glob
import os

import numpy as np
import pytest
from packaging import version

import loopax
import loopax.tf as tf


def test_version():
    assert version.parse(tf.__version__) >= version.parse("2.0")
    assert tf.version.VERSION == tf.__version__
    assert tf.__version__.endswith(loopax.__version__)


def test_reductions_of_lists_and_shapes():
    # TF 2.21: tf.reduce_prod((3, 4)) -> 12 (int32); reduce_sum([1., 2.]) -> 3.0;
    # reduce_mean([1, 2]) -> 1 (an integer mean truncates); reduce_mean([-3, 0]) -> -1.
    assert tf.reduce_prod((3, 4)).numpy() == 12 and tf.reduce_prod((3, 4)).dtype == np.int32
    assert tf.reduce_sum([1.0, 2.0]).numpy() == 3.0
    assert tf.reduce_mean([1, 2]).numpy() == 1 and tf.reduce_mean([-3, 0]).numpy() == -1
    layer = tf.keras.layers.Dense(5)
    layer.build((None, 3))
    assert int(tf.reduce_prod(layer.kernel.shape)) == 15
    assert int(tf.reduce_prod(tf.zeros((2, 3)).shape)) == 6
    stacked = tf.reduce_sum([tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0])], axis=0)
    np.testing.assert_allclose(stacked.numpy(), [4.0, 6.0])


@pytest.mark.parametrize("cls, args, names", [
    pytest.param("Dense", (3,), ["kernel_initializer", "bias_initializer"], id="Dense"),
    pytest.param("Conv2D", (2, 2), ["kernel_initializer", "bias_initializer"], id="Conv2D"),
    pytest.param("LayerNormalization", (), ["gamma_initializer", "beta_initializer"],
                 id="LayerNormalization"),
])
def test_initializer_none_is_keras_default(cls, args, names):
    """Keras 3.15.1 (and tf.keras of TF 2.21) store None and draw the weight with
    add_weight's default: glorot_uniform for float weights (so a None bias is not
    zeros); a survey of Dense, Conv*, normalization and RNN layers found the same."""
    layer = getattr(tf.keras.layers, cls)(*args, **{n: None for n in names})
    shape = (1, 4, 4, 3) if isinstance(layer, tf.keras.layers.Conv2D) else (2, 4)
    layer(np.ones(shape, np.float32))
    for weight in layer.weights:
        values = np.asarray(weight)
        fan_in, fan_out = (values.shape[0], values.shape[0]) if values.ndim == 1 else (
            int(np.prod(values.shape[:-1])), values.shape[-1])
        if values.ndim > 2:
            receptive = int(np.prod(values.shape[:-2]))
            fan_in, fan_out = receptive * values.shape[-2], receptive * values.shape[-1]
        limit = np.sqrt(6.0 / (fan_in + fan_out))
        assert np.all(np.abs(values) <= limit) and len(np.unique(values)) > 1, weight.name
    assert all(layer.get_config()[n] is None for n in names)


def test_add_weight_none_initializer_is_zeros_for_integers():
    layer = tf.keras.layers.Layer()
    w = layer.add_weight(shape=(3,), initializer=None, dtype="int32")
    np.testing.assert_array_equal(np.asarray(w), [0, 0, 0])


def test_normalization_mean_and_variance():
    # Keras 3.15.1: adapt([[1, 2], [3, 6]]) -> mean [[2., 4.]], variance [[1., 4.]].
    norm = tf.keras.layers.Normalization(axis=-1)
    norm.adapt(np.array([[1.0, 2.0], [3.0, 6.0]]))
    np.testing.assert_allclose(norm.mean.numpy(), [[2.0, 4.0]])
    np.testing.assert_allclose(norm.variance.numpy(), [[1.0, 4.0]])
    given = tf.keras.layers.Normalization(mean=[1.0, 2.0], variance=[1.0, 4.0])
    given.build((None, 2))
    np.testing.assert_allclose(given.variance.numpy(), [[1.0, 4.0]])
    with pytest.raises(AttributeError, match="adapt"):
        tf.keras.layers.Normalization().mean


def test_random_generator():
    g1, g2 = tf.random.Generator.from_seed(1), tf.random.Generator.from_seed(1)
    a = g1.normal(shape=(1000,))
    np.testing.assert_array_equal(a.numpy(), g2.normal(shape=(1000,)).numpy())
    assert not np.array_equal(a.numpy(), g1.normal(shape=(1000,)).numpy())  # it advances
    assert abs(float(np.mean(a))) < 0.15 and abs(float(np.std(a)) - 1) < 0.1
    u = g1.uniform((500,), minval=2.0, maxval=3.0)
    assert 2.0 <= float(np.min(u)) and float(np.max(u)) < 3.0
    ints = g1.uniform((200,), maxval=5, dtype=tf.int32)
    assert set(np.unique(ints.numpy())) == {0, 1, 2, 3, 4}
    with pytest.raises(ValueError, match="maxval"):
        g1.uniform((2,), dtype=tf.int32)
    children = g1.split(2)
    assert not np.array_equal(children[0].normal([4]).numpy(), children[1].normal([4]).numpy())
    assert g1.make_seeds(3).shape == (2, 3)

    @tf.function
    def draw():
        return g2.normal([3])
    assert not np.array_equal(draw().numpy(), draw().numpy())   # the state advances

    class Holder(tf.Module):
        def __init__(self):
            super().__init__()
            self.generator = tf.random.Generator.from_seed(3)
    assert len(Holder().variables) == 1


def test_metric_reset_states():
    metric = tf.keras.metrics.Mean()
    metric.update_state([2.0, 4.0])
    metric.reset_states()
    metric.update_state(10.0)
    assert float(metric.result()) == 10.0


def test_list_variables_and_load_variable(tmp_path):
    w = tf.Variable([[1.0, 2.0, 3.0]], name="w")
    path = tf.train.Checkpoint(w=w).save(str(tmp_path / "ckpt"))
    assert tf.train.list_variables(str(tmp_path)) == [("save_counter", []), ("w", [1, 3])]
    np.testing.assert_array_equal(tf.train.load_variable(path, "w"), [[1.0, 2.0, 3.0]])
    with pytest.raises(KeyError, match="list_variables"):
        tf.train.load_variable(path, "nope")
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        tf.train.list_variables(str(tmp_path / "empty"))


def test_profiler_writes_a_trace(tmp_path):
    tf.profiler.experimental.start(str(tmp_path))
    with tf.profiler.experimental.Trace("train", step_num=0, _r=1):
        tf.reduce_sum(tf.ones((8, 8))).numpy()
    tf.profiler.experimental.stop()
    assert glob.glob(str(tmp_path / "plugins" / "profile" / "*" / "*.xplane.pb"))
    with pytest.raises(RuntimeError, match="no trace"):
        tf.profiler.experimental.stop()


def test_summary_trace_export_warns_and_writes_the_profile(tmp_path):
    tf.summary.trace_on(graph=True, profiler=True, profiler_outdir=str(tmp_path))

    @tf.function
    def double(x):
        return 2.0 * x
    double(tf.constant(1.0))
    with pytest.warns(UserWarning, match="no graph.*make_jaxpr"):
        assert tf.summary.trace_export("double", step=0) is True
    assert glob.glob(os.path.join(str(tmp_path), "plugins", "profile", "*", "*.xplane.pb"))


def test_py_function_as_a_decorator():
    calls = []

    @tf.py_function(Tout=tf.float32)
    def log_huber(x, m):
        calls.append(1)
        if tf.abs(x) <= m:
            return x ** 2
        return m ** 2 * (1 - 2 * tf.math.log(m) + tf.math.log(x ** 2))

    assert log_huber(tf.constant(1.0), tf.constant(2.0)).numpy() == 1.0

    @tf.function
    def wrapper(x):
        return log_huber(x, tf.constant(2.0))
    # 4 * (1 - 2 log 2 + log 9), TF 2.21 prints 7.243721.
    np.testing.assert_allclose(wrapper(tf.constant(3.0)).numpy(),
                               4 * (1 - 2 * np.log(2) + np.log(9)), rtol=1e-6)
    with pytest.raises(TypeError, match="Tout"):
        tf.py_function(lambda x: x)
