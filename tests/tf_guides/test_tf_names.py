"""`loopax.tf` names: TensorFlow's signatures and defaults, each checked against
NumPy or a closed form (TensorFlow's documented behaviour)."""

from __future__ import annotations

import warnings

import jax
import numpy as np
import pytest

import loopax
import loopax.tf as tf

X = np.array([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], np.float32)
I = np.array([[1, 5], [7, 2]], np.int32)

# (id, computed by loopax.tf, expected by NumPy)
CASES = [
    ("reduce_sum_all", lambda: tf.reduce_sum(X), lambda: X.sum()),
    ("reduce_sum_axis_list_keepdims", lambda: tf.reduce_sum(X, axis=[0, 1], keepdims=True),
     lambda: X.sum(keepdims=True)),
    ("reduce_mean_axis1", lambda: tf.reduce_mean(X, axis=1), lambda: X.mean(1)),
    ("reduce_max_keepdims", lambda: tf.reduce_max(X, 0, keepdims=True),
     lambda: X.max(0, keepdims=True)),
    ("reduce_min", lambda: tf.reduce_min(X, axis=-1), lambda: X.min(-1)),
    ("reduce_prod", lambda: tf.reduce_prod(X, axis=0), lambda: X.prod(0)),
    ("reduce_any", lambda: tf.reduce_any(X > 4, axis=1), lambda: (X > 4).any(1)),
    ("reduce_all", lambda: tf.reduce_all(X > -7), lambda: (X > -7).all()),
    ("argmax_default_axis_0", lambda: tf.argmax(I), lambda: I.argmax(0)),
    ("argmin_axis_1", lambda: tf.argmin(I, axis=1, output_type=tf.int32),
     lambda: I.argmin(1)),
    ("concat", lambda: tf.concat([X, X], axis=1), lambda: np.concatenate([X, X], 1)),
    ("stack_axis1", lambda: tf.stack([X, X], axis=1), lambda: np.stack([X, X], 1)),
    ("reshape_with_tf_shape", lambda: tf.reshape(X, [tf.shape(X)[1], -1]),
     lambda: X.reshape(3, -1)),
    ("transpose_perm", lambda: tf.transpose(X[None], perm=[2, 0, 1]),
     lambda: X[None].transpose(2, 0, 1)),
    ("range_int", lambda: tf.range(5), lambda: np.arange(5, dtype=np.int32)),
    ("range_float_delta", lambda: tf.range(1.0, 2.0, 0.25),
     lambda: np.arange(1.0, 2.0, 0.25, dtype=np.float32)),
    ("cast_truncates", lambda: tf.cast(X * 0.9, tf.int32), lambda: (X * 0.9).astype(np.int32)),
    ("matmul_transpose_b", lambda: tf.matmul(X, X, transpose_b=True), lambda: X @ X.T),
    ("matmul_transpose_a", lambda: tf.matmul(X, X, transpose_a=True), lambda: X.T @ X),
    ("divide", lambda: tf.divide(X, 2.0), lambda: X / 2),
    ("pow", lambda: tf.pow(X, 2.0), lambda: X ** 2),
    ("maximum", lambda: tf.maximum(X, 0.0), lambda: np.maximum(X, 0)),
    ("ones", lambda: tf.ones([2, 3]), lambda: np.ones((2, 3), np.float32)),
    ("zeros_like_dtype", lambda: tf.zeros_like(X, dtype=tf.int32),
     lambda: np.zeros((2, 3), np.int32)),
    ("fill", lambda: tf.fill([2, 2], 7), lambda: np.full((2, 2), 7)),
    ("eye_rectangular", lambda: tf.eye(2, 3), lambda: np.eye(2, 3, dtype=np.float32)),
    ("shape", lambda: tf.shape(X), lambda: np.array([2, 3], np.int32)),
    ("rank", lambda: tf.rank(X), lambda: np.array(2, np.int32)),
    ("size", lambda: tf.size(X), lambda: np.array(6, np.int32)),
    ("expand_dims", lambda: tf.expand_dims(X, -1), lambda: X[..., None]),
    ("squeeze_axis", lambda: tf.squeeze(X[None, :, None], axis=[0]), lambda: X[:, None]),
    ("tile", lambda: tf.tile(X, [2, 1]), lambda: np.tile(X, (2, 1))),
    ("where_select", lambda: tf.where(X > 0, X, -X), lambda: np.abs(X)),
    ("where_indices", lambda: tf.where(X > 2), lambda: np.argwhere(X > 2)),
    ("gather_default_axis_0", lambda: tf.gather(X, [1, 1, 0]), lambda: X[[1, 1, 0]]),
    ("gather_axis_1", lambda: tf.gather(X, [2, 0], axis=1), lambda: X[:, [2, 0]]),
    ("gather_batch_dims", lambda: tf.gather(X, [[2], [0]], axis=1, batch_dims=1),
     lambda: np.take_along_axis(X, np.array([[2], [0]]), 1)),
    ("boolean_mask", lambda: tf.boolean_mask(X, X > 0), lambda: X[X > 0]),
    ("boolean_mask_rows", lambda: tf.boolean_mask(X, [False, True]), lambda: X[[1]]),
    ("one_hot", lambda: tf.one_hot([2, 0, 5], 3),
     lambda: np.eye(4, 3, dtype=np.float32)[[2, 0, 3]]),
    ("one_hot_on_off", lambda: tf.one_hot([1], 2, on_value=3.0, off_value=-1.0),
     lambda: np.array([[-1.0, 3.0]], np.float32)),
    ("clip_by_value", lambda: tf.clip_by_value(X, -1.0, 2.0), lambda: np.clip(X, -1, 2)),
    ("clip_by_norm_clips", lambda: tf.clip_by_norm(X, 1.0), lambda: X / np.linalg.norm(X)),
    ("clip_by_norm_keeps_small", lambda: tf.clip_by_norm(X, 100.0), lambda: X),
    ("clip_by_norm_axes", lambda: tf.clip_by_norm(X, 1.0, axes=[1]),
     lambda: X / np.linalg.norm(X, axis=1, keepdims=True)),
    ("identity", lambda: tf.identity(tf.Variable(X)), lambda: X),
    ("math_log1p", lambda: tf.math.log1p(np.abs(X)), lambda: np.log1p(np.abs(X))),
    ("math_squared_difference", lambda: tf.math.squared_difference(X, 1.0),
     lambda: (X - 1) ** 2),
    ("math_count_nonzero", lambda: tf.math.count_nonzero(X > 0, axis=1),
     lambda: (X > 0).sum(1)),
    ("math_reduce_logsumexp", lambda: tf.math.reduce_logsumexp(X, axis=1),
     lambda: np.log(np.exp(X).sum(1))),
    ("nn_relu", lambda: tf.nn.relu(X), lambda: np.maximum(X, 0)),
    ("nn_softmax_default_last_axis", lambda: tf.nn.softmax(X),
     lambda: np.exp(X) / np.exp(X).sum(-1, keepdims=True)),
    ("nn_l2_loss", lambda: tf.nn.l2_loss(X), lambda: (X ** 2).sum() / 2),
    ("nn_sigmoid_cross_entropy", lambda: tf.nn.sigmoid_cross_entropy_with_logits(
        labels=(X > 0).astype(np.float32), logits=X),
     lambda: -((X > 0) * np.log(1 / (1 + np.exp(-X)))
               + (X <= 0) * np.log(1 - 1 / (1 + np.exp(-X))))),
    ("nn_softmax_cross_entropy", lambda: tf.nn.softmax_cross_entropy_with_logits(
        labels=np.eye(3, dtype=np.float32)[[0, 2]], logits=X),
     lambda: -np.log(np.exp(X) / np.exp(X).sum(-1, keepdims=True))[[0, 1], [0, 2]]),
    ("nn_sparse_softmax_cross_entropy", lambda: tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=np.array([0, 2]), logits=X),
     lambda: -np.log(np.exp(X) / np.exp(X).sum(-1, keepdims=True))[[0, 1], [0, 2]]),
    ("nn_gelu_exact_by_default", lambda: tf.nn.gelu(np.float32([1.0])),
     lambda: np.float32([0.8413447])),
    ("linalg_inv", lambda: tf.linalg.inv(X @ X.T), lambda: np.linalg.inv(X @ X.T)),
    ("linalg_svd_s_u_v", lambda: (lambda s, u, v: tf.matmul(u * s, v, adjoint_b=True))(
        *tf.linalg.svd(X)), lambda: X),
    ("linalg_diag", lambda: tf.linalg.diag([1.0, 2.0]), lambda: np.diag([1.0, 2.0])),
    ("linalg_band_part_upper", lambda: tf.linalg.band_part(np.ones((3, 3), np.float32), 0, -1),
     lambda: np.triu(np.ones((3, 3)))),
    ("split_sizes_with_minus_one", lambda: tf.split(np.arange(10), [3, -1, 2])[1],
     lambda: np.arange(3, 8)),
    ("norm_all_entries", lambda: tf.norm(X), lambda: np.linalg.norm(X)),
    ("norm_axis_1", lambda: tf.norm(X, axis=1), lambda: np.linalg.norm(X, axis=1)),
    ("norm_two_axes_keepdims", lambda: tf.norm(X, axis=[0, 1], keepdims=True),
     lambda: np.linalg.norm(X, keepdims=True)),
    ("cumsum_exclusive_reverse", lambda: tf.cumsum([1, 2, 3], exclusive=True, reverse=True),
     lambda: np.array([5, 3, 0])),
]


@pytest.mark.parametrize("compute,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_matches_numpy(compute, expected):
    out = compute()
    assert isinstance(out, tf.Tensor), "eager results are Tensors (with .numpy())"
    want = np.asarray(expected())
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)
    assert out.numpy().shape == want.shape


def test_clip_by_global_norm_keeps_none_and_returns_the_norm():
    grads = [np.float32([3.0, 4.0]), None, np.float32([12.0])]
    clipped, norm = tf.clip_by_global_norm(grads, 6.5)
    assert norm.numpy() == pytest.approx(13.0)
    assert clipped[1] is None
    np.testing.assert_allclose(clipped[0].numpy(), [1.5, 2.0], rtol=1e-6)
    np.testing.assert_allclose(clipped[2].numpy(), [6.0], rtol=1e-6)


def test_gradients_are_tensors_and_stop_gradient_is_unconnected():
    x = tf.Variable(3.0)
    with tf.GradientTape(persistent=True) as tape:
        y = x * x
        z = tf.stop_gradient(y) * 2.0
    grad = tape.gradient(y, x)
    assert isinstance(grad, tf.Tensor) and grad.numpy() == 6.0
    assert tape.gradient(z, x) is None
    zero = tape.gradient(z, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert zero.numpy() == 0.0


def test_convert_to_tensor_of_a_variable_is_differentiable():
    v = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        y = tf.convert_to_tensor(v) * 3.0
    assert float(tape.gradient(y, v)) == 3.0
    with pytest.raises(ValueError, match="tf.cast"):
        tf.convert_to_tensor(v, dtype=tf.int32)


def test_cond_and_while_loop_eagerly():
    assert float(tf.cond(tf.constant(2.0) > 1, lambda: tf.constant(1.0),
                         lambda: tf.constant(2.0))) == 1.0
    i, total = tf.while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t + i), [0, 10])
    assert (int(i), int(total)) == (4, 16)


def test_random_tf_signatures_statistics_and_seeds():
    tf.random.set_seed(7)
    x = tf.random.normal([20000], mean=2.0, stddev=3.0, seed=1)
    assert x.dtype == tf.float32 and x.shape == (20000,)
    assert abs(float(np.mean(x.numpy())) - 2.0) < 0.1
    assert abs(float(np.std(x.numpy())) - 3.0) < 0.1
    u = tf.random.uniform([20000], minval=-1.0, maxval=3.0, seed=2)
    assert -1.0 <= float(np.min(u.numpy())) and float(np.max(u.numpy())) < 3.0
    k = tf.random.uniform([1000], 0, 4, dtype=tf.int32)
    assert set(np.unique(k.numpy())) == {0, 1, 2, 3}
    # as TensorFlow: an op seed gives a new draw each call, the same sequence after set_seed
    tf.random.set_seed(3)
    first, second = tf.random.uniform([3], seed=5).numpy(), tf.random.uniform([3], seed=5).numpy()
    tf.random.set_seed(3)
    np.testing.assert_array_equal(tf.random.uniform([3], seed=5).numpy(), first)
    assert not np.array_equal(first, second)
    with pytest.raises(ValueError, match="maxval"):
        tf.random.uniform([2], dtype=tf.int32)


def test_py_function_eager_and_compiled():
    def numpy_cumprod(a):
        return np.cumprod(a.numpy())

    x = tf.constant([1.0, 2.0, 3.0])
    np.testing.assert_allclose(tf.py_function(numpy_cumprod, [x], tf.float32).numpy(),
                               [1, 2, 6])

    @tf.function
    def f(x):
        return tf.py_function(numpy_cumprod, [x], tf.float32) + 1.0

    np.testing.assert_allclose(f(x).numpy(), [2, 3, 7])
    np.testing.assert_allclose(f(tf.constant([2.0, 2.0, 2.0])).numpy(), [3, 5, 9])


def test_tensor_array_eager_growth_and_bounds():
    ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
    for i in range(3):
        ta = ta.write(i, [float(i), 2.0 * i])
    np.testing.assert_allclose(ta.stack().numpy(), [[0, 0], [1, 2], [2, 4]])
    assert int(ta.size()) == 3 and ta.read(1).numpy().tolist() == [1.0, 2.0]
    with pytest.raises(IndexError, match="dynamic_size=True"):
        tf.TensorArray(tf.float32, size=1).write(0, 1.0).write(1, 2.0)


def test_devices_and_soft_placement():
    cpus = tf.config.list_physical_devices("CPU")
    assert cpus and cpus[0].device_type == "CPU"
    assert cpus[0].name == "/physical_device:CPU:0"
    with tf.device("/CPU:0"):
        x = tf.ones([2])
    assert {d.platform for d in x.value.devices()} == {"cpu"}
    if not tf.config.list_physical_devices("GPU"):
        with pytest.warns(UserWarning, match="soft placement"):
            with tf.device("/GPU:0"):
                y = tf.ones([2])
        assert y.numpy().tolist() == [1.0, 1.0]


def test_variable_signature_and_isinstance():
    v = tf.Variable(initial_value=lambda: tf.zeros([2]), trainable=False, name="w:0")
    assert isinstance(v, loopax.Variable) and isinstance(v, tf.Variable)
    assert v.name == "w" and not v.trainable and v.shape == (2,)
    assert not isinstance(np.zeros(2), tf.Variable)


def test_module_keras_and_init_scope():
    assert tf.Module is loopax.Module and tf.keras is loopax
    from loopax.tf.keras.layers import Dense  # TensorFlow's import path
    assert Dense is loopax.layers.Dense

    @tf.function
    def f(x):
        with tf.init_scope():
            concrete = tf.constant(2.0) * 3
        return x * concrete

    assert float(f(tf.constant(1.0))) == 6.0


def test_errors_are_catchable_as_tensorflow_and_python_errors():
    assert issubclass(tf.errors.InvalidArgumentError, tf.errors.OpError)
    assert issubclass(tf.errors.InvalidArgumentError, ValueError)
    with pytest.raises(tf.errors.NotFoundError):
        raise tf.errors.NotFoundError(None, None, "missing")


@pytest.mark.parametrize("name,hint", [
    ("SparseTensorSpec", "pad_sequences"), ("RaggedTensorSpec", "pad_sequences"),
    ("Session", "GradientTape"),
], ids=["sparse", "ragged", "session"])
def test_names_left_out_raise_naming_the_alternative(name, hint):
    with pytest.raises(AttributeError, match=hint):
        getattr(tf, name)


def test_dynamic_shape_ops_refuse_inside_a_compiled_function():
    @tf.function
    def f(x):
        return tf.boolean_mask(x, x > 0)

    with pytest.raises(TypeError, match="tf.where"):
        f(tf.constant([1.0, -1.0]))


def test_input_signature_refuses_python_floats_for_an_integer_spec():
    @tf.function(input_signature=[tf.TensorSpec([None], tf.int32)])
    def f(x):
        return x * 2

    assert f([1, 2]).numpy().tolist() == [2, 4]
    with pytest.raises(TypeError, match="cast it first"):
        f([1.5, 2.0])   # TensorFlow: TypeError, cannot convert to int32


def test_shape_as_list_and_tensor_spec():
    spec = tf.TensorSpec([None, 3], tf.float32)
    assert spec.shape.as_list() == [None, 3]
    assert spec.is_compatible_with(tf.zeros([5, 3]))
    assert not spec.is_compatible_with(tf.zeros([5, 3], tf.int32))
    assert not spec.is_compatible_with(tf.zeros([5]))


def test_no_warnings_from_64_bit_defaults():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tf.argmax(I)
    assert out.dtype == jax.dtypes.canonicalize_dtype(np.int64)
