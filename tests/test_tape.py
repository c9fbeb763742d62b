"""GradientTape: gradients equal jax.grad of the same computation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import ops
from loopax.src.tape import GradientTape

A = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]], np.float32)
B = np.array([[1.0, 2.0, -0.5], [0.2, -1.2, 0.9]], np.float32)


def close(a, b, tol=1e-5):
    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=tol, atol=tol)


def tape_grads(fn, *values):
    """Gradients of `fn` w.r.t. each input, with the inputs as watched Tensors."""
    xs = [loopax.constant(v) for v in values]
    with GradientTape() as tape:
        tape.watch(xs)
        y = fn(*xs)
    return tape.gradient(y, xs)


# Each family written with loopax ops and operators; without a tape the same
# code runs on arrays, so jax.grad of it is the independent reference.
FAMILIES = {
    "arithmetic": lambda a, b: (a + b) * (a - b) / (b * b + 1.0) + a ** 2,
    "unary": lambda a, b: ops.sum(ops.exp(a) + ops.tanh(b) + ops.sin(a * b)
                                  + ops.sqrt(ops.square(b) + 1.0) + ops.abs(a) - (-b)),
    "reductions": lambda a, b: ops.sum(ops.mean(a * b, axis=0)) + ops.max(a, axis=1)[0]
    + ops.logsumexp(b),
    "matmul": lambda a, b: ops.sum(ops.matmul(a, ops.transpose(b)) + a @ b.T)
    + ops.sum(ops.einsum("ij,ij->i", a, b)),
    "shapes": lambda a, b: ops.sum(ops.reshape(ops.concatenate([a, b], axis=0), (3, 4))[1:, ::2]
                                   * ops.sum(ops.stack([a, b])[1, :, None, :])),
    "nn": lambda a, b: ops.sum(ops.relu(a) * ops.sigmoid(b) + ops.softmax(a, axis=-1)
                               + ops.log_softmax(b, axis=-1) * 0.1),
    "select": lambda a, b: ops.sum(ops.where(a > b, a * 2.0, b) + ops.clip(a, -0.5, 0.5)
                                   + ops.maximum(a, b) + ops.minimum(a, 0.0)),
    "linalg": lambda a, b: ops.norm(a) + ops.sum(ops.cumsum(b, axis=1)),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_op_families_match_jax_grad(family):
    fn = FAMILIES[family]
    got = tape_grads(fn, A, B)
    want = jax.grad(lambda a, b: jnp.sum(fn(a, b)), argnums=(0, 1))(jnp.asarray(A), jnp.asarray(B))
    for g, w in zip(got, want):
        close(g, w)


def test_seed_001_watched_constant():
    x = loopax.constant(3.0)
    with GradientTape() as g:
        g.watch(x)
        y = x * x
    assert float(g.gradient(y, x)) == 6.0


def test_mixed_operands_on_either_side():
    """NumPy arrays, JAX arrays and Python scalars mixed with Tensors and
    Variables, on both sides of each operator."""
    w = loopax.Variable(np.array([1.0, -2.0, 0.5], np.float32))
    x_np = np.array([0.3, 0.7, -1.1], np.float32)
    y_jx = jnp.array([2.0, 1.0, 3.0])

    def compute(w, t):
        r = (x_np - w) * (y_jx + t) + 2.0 / (t + 3.0) - 1 * w
        r = (r - y_jx) ** 2 + x_np * r + (t - x_np) * w + (y_jx * w) / 2
        return r

    t = loopax.constant(np.array([0.2, 0.4, 0.6], np.float32))
    with GradientTape() as tape:
        tape.watch(t)
        out = compute(w, t)
    assert isinstance(out, loopax.Tensor)
    gw, gt = tape.gradient(out, [w, t])
    want = jax.grad(lambda a, b: jnp.sum(compute(a, b)), argnums=(0, 1))(w.value, t.value)
    close(gw, want[0])
    close(gt, want[1])


def test_numpy_target_minus_model_output():
    """`y - model(x)` with y a NumPy array is recorded (seed 003's loss)."""
    model = loopax.layers.Dense(2)
    x = np.ones((4, 3), np.float32)
    y = np.arange(8, dtype=np.float32).reshape(4, 2)
    model(x)
    with GradientTape() as tape:
        loss = ops.mean(ops.square(y - model(x)))
    grads = tape.gradient(loss, model.trainable_variables)

    def reference(k, b):
        return jnp.mean((y - (x @ k + b)) ** 2)
    want = jax.grad(reference, argnums=(0, 1))(*[v.value for v in model.trainable_variables])
    close(grads[0], want[0])
    close(grads[1], want[1])


def test_persistent_and_non_persistent():
    x = loopax.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * x
    assert float(tape.gradient(y, x)) == 4.0
    assert float(tape.gradient(z, x)) == 12.0
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError, match="non-persistent"):
        tape.gradient(y, x)


def test_nested_tapes_give_higher_order_derivatives():
    x = loopax.constant(3.0)
    with GradientTape() as outer:
        outer.watch(x)
        with GradientTape() as inner:
            inner.watch(x)
            y = x * x * x
        dy_dx = inner.gradient(y, x)
    d2y_dx2 = outer.gradient(dy_dx, x)
    assert float(dy_dx) == 27.0
    assert float(d2y_dx2) == 18.0


def test_nested_tapes_with_a_variable():
    v = loopax.Variable(2.0)
    with GradientTape() as outer:
        with GradientTape() as inner:
            y = ops.sin(v) * v
        g = inner.gradient(y, v)
    h = outer.gradient(g, v)
    f = lambda a: jnp.sin(a) * a
    close(g, jax.grad(f)(2.0))
    close(h, jax.grad(jax.grad(f))(2.0))


def test_unconnected_sources():
    x, z = loopax.constant(1.0), loopax.constant(5.0)
    i = loopax.constant(np.array([1, 2], np.int32))
    with GradientTape(persistent=True) as tape:
        tape.watch([x, z, i])
        y = x * 2.0 + ops.sum(i)
    with pytest.warns(UserWarning, match="integer"):
        assert tape.gradient(y, [x, z, i])[1:] == [None, None]
    got = tape.gradient(y, {"x": x, "z": z}, unconnected_gradients="zero")
    assert float(got["x"]) == 2.0 and float(got["z"]) == 0.0
    never = loopax.Variable(np.ones(3, np.float32))
    zeros = tape.gradient(y, never, unconnected_gradients="zero")
    assert zeros.shape == (3,) and not np.any(np.asarray(zeros))
    with pytest.raises(ValueError, match="unconnected_gradients"):
        tape.gradient(y, x, unconnected_gradients="nope")


def test_integer_variable_source_warns_and_gives_none():
    count = loopax.Variable(np.array([1, 2], np.int32), name="count")
    w = loopax.Variable(np.array([1.0, 2.0], np.float32))
    with GradientTape() as tape:
        y = ops.sum(w * 3.0) + ops.sum(count)
    with pytest.warns(UserWarning, match=r"\['count'\] have an integer.*float dtype"):
        grads = tape.gradient(y, [w, count])
    close(grads[0], [3.0, 3.0])
    assert grads[1] is None


def test_nonscalar_target_sums_unless_output_gradients():
    x = loopax.constant(np.array([1.0, 2.0, 3.0], np.float32))
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
    close(tape.gradient(y, x), [2.0, 4.0, 6.0])
    close(tape.gradient(y, x, output_gradients=np.array([1.0, 0.0, 2.0], np.float32)),
          [2.0, 0.0, 12.0])
    close(tape.gradient([y, x], x), [3.0, 5.0, 7.0])
    with pytest.raises(ValueError, match="shape"):
        tape.gradient(y, x, output_gradients=np.ones(2, np.float32))


def test_sources_nested_structure_comes_back_the_same():
    a = loopax.Variable(1.0)
    b = loopax.Variable(np.array([1.0, 2.0], np.float32))
    with GradientTape() as tape:
        y = a * 3.0 + ops.sum(b * b)
    got = tape.gradient(y, {"a": a, "pair": (b, [a])})
    assert float(got["a"]) == 3.0
    close(got["pair"][0], [2.0, 4.0])
    assert float(got["pair"][1][0]) == 3.0


def test_jacobian_and_batch_jacobian():
    w = loopax.Variable(np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 0.1]], np.float32))
    x = loopax.constant(A)                         # (2, 3)
    f = lambda xx, ww: jnp.tanh(xx @ ww)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = ops.tanh(x @ w)
    close(tape.jacobian(y, w), jax.jacrev(f, argnums=1)(A, w.value))
    close(tape.jacobian(y, x), jax.jacrev(f)(A, w.value))
    full = jax.jacrev(f)(A, w.value)               # (2, 2, 2, 3)
    per_example = np.stack([full[i, :, i, :] for i in range(2)])
    close(tape.batch_jacobian(y, x), per_example)
    assert tape.jacobian(y, loopax.constant(1.0)) is None
    with pytest.raises(ValueError, match="batch"):
        tape.batch_jacobian(y, w)


def test_variable_reads_are_summed_across_assignments():
    """Each read of a Variable is a version; the gradient sums over reads."""
    v = loopax.Variable(2.0)
    with GradientTape() as tape:
        y = v * v                 # two reads of 2.0
        v.assign(3.0)
        z = y + v * 10.0          # a read of 3.0
    assert float(z) == 34.0
    assert float(tape.gradient(z, v)) == 2.0 + 2.0 + 10.0


def test_use_after_the_with_block():
    x = loopax.constant(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError, match="outside the tape's `with` block"):
        tape.watch(x)
    late = ops.square(x)          # not recorded (an eager Tensor the tape does not know)
    assert not tape._follows(late)
    with pytest.warns(UserWarning, match="not a value this tape recorded"):
        assert tape.gradient(late, x) is None
    with GradientTape() as tape2:
        pass
    with pytest.raises(TypeError, match="loopax.constant"):
        tape2.gradient(y, jnp.ones(2))


def test_stop_recording_reset_and_watched_variables():
    v = loopax.Variable(1.0)
    frozen = loopax.Variable(5.0, trainable=False)
    x = loopax.constant(2.0)
    with GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * v * frozen
        with tape.stop_recording():
            z = x * 3.0
        assert not tape._follows(z)
    assert tape.watched_variables() == (v,)
    assert tape.gradient(y, frozen) is None
    assert float(tape.gradient(y, v)) == 10.0
    with GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(frozen)
        y = v * frozen
        tape.reset()
        tape.watch(frozen)
        y = v * frozen * 2.0
    assert tape.watched_variables() == (frozen,)
    assert tape.gradient(y, [v, frozen])[0] is None
    with pytest.raises(RuntimeError, match="stop_recording"):
        with tape.stop_recording():
            pass


def test_jax_numpy_on_a_followed_value_raises():
    x = loopax.constant(2.0)
    with GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError):
            jnp.sin(x)


def test_backward_pass_compiles_once_per_program_structure():
    traces = []

    class Scale(loopax.Layer):
        def build(self, shape):
            self.w = self.add_weight((shape[-1],), "ones", name="w")

        def call(self, x):
            traces.append(1)          # Python runs only eagerly or while tracing
            return x * self.w.value

    layer = Scale()

    def step(i):
        x = np.full((2, 3), float(i), np.float32)
        with GradientTape() as tape:
            loss = ops.sum(ops.square(layer(x)))
        return tape.gradient(loss, layer.trainable_variables)[0]

    step(0), step(1)                  # eager first call, then the compiled forward
    settled = len(traces)
    grads = [step(i) for i in range(2, 6)]
    assert len(traces) == settled     # nothing traced again: forward and backward reused
    # d/dw sum((x w)^2) = sum over the 2 rows of 2 x^2 w = 4 * 5^2 for x = 5, w = 1
    np.testing.assert_allclose(grads[-1], np.full(3, 100.0))


class Penalized(loopax.Layer):
    """A kernel, an add_loss penalty and a call counter (non-trainable)."""

    def build(self, shape):
        self.kernel = self.add_weight((shape[-1], 2), "glorot_uniform", name="kernel")
        self.calls = self.add_weight((), "zeros", trainable=False, name="calls")

    def call(self, x):
        self.add_loss(0.5 * jnp.sum(self.kernel.value ** 2))
        self.calls.assign(self.calls.value + 1.0)
        return jnp.tanh(x @ self.kernel.value)


def test_layer_losses_and_non_trainable_updates_under_the_tape():
    layer = Penalized()
    dense = loopax.layers.Dense(1, kernel_regularizer=loopax.regularizers.L2(0.1))
    model = loopax.models.Sequential([layer, dense])
    x = A
    model(x)
    start_calls = float(layer.calls.value)
    for step in range(3):   # the first call runs eagerly, later ones compiled
        with GradientTape() as tape:
            out = model(x)
            loss = ops.mean(out) + sum(model.losses)
        assert len(model.losses) == 2
        assert float(layer.calls.value) == start_calls + step + 1
        grads = tape.gradient(loss, model.trainable_variables)
        assert [float(l) for l in model.losses]   # still this call's values, not tracers
        k, dk, db = [v.value for v in model.trainable_variables]

        def reference(k, dk, db):
            o = jnp.tanh(x @ k) @ dk + db
            return jnp.mean(o) + 0.5 * jnp.sum(k ** 2) + 0.1 * jnp.sum(dk ** 2)
        want = jax.grad(reference, argnums=(0, 1, 2))(k, dk, db)
        for g, w in zip(grads, want):
            close(g, w)


def test_dropout_gradient_uses_the_mask_of_the_forward_pass():
    drop = loopax.layers.Dropout(0.5, seed=3)
    x = loopax.constant(np.ones((4, 8), np.float32))
    for _ in range(2):
        with GradientTape() as tape:
            tape.watch(x)
            y = drop(x, training=True)
        g = tape.gradient(y, x)
        close(g, np.asarray(y) / 1.0)   # y = mask * 2 and dy/dx = mask * 2


class SeedModule(loopax.Module):
    """Seed 003's model."""

    def __init__(self):
        super().__init__()
        self.w = loopax.Variable(5.0)
        self.b = loopax.Variable(0.0)

    def __call__(self, x):
        return self.w * x + self.b


def test_seed_003_module_matches_full_batch_gradient_descent_in_float64():
    rng = np.random.default_rng(0)
    x = rng.normal(size=1000).astype(np.float32)
    y = (x * 3.0 + 2.0 + rng.normal(size=1000)).astype(np.float32)

    def loss(target_y, predicted_y):
        return ops.mean(ops.square(target_y - predicted_y))

    model = SeedModule()
    w, b = 5.0, 0.0
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    for _ in range(10):
        with GradientTape() as t:
            current_loss = loss(y, model(x))
        dw, db = t.gradient(current_loss, [model.w, model.b])
        model.w.assign_sub(0.1 * dw)
        model.b.assign_sub(0.1 * db)
        residual = yd - (w * xd + b)
        want_loss = np.mean(residual ** 2)
        w, b = w - 0.1 * np.mean(-2 * residual * xd), b - 0.1 * np.mean(-2 * residual)
        assert abs(float(current_loss) - want_loss) < 1e-4
        assert abs(float(model.w.numpy()) - w) < 1e-4
        assert abs(float(model.b.numpy()) - b) < 1e-4


@pytest.mark.parametrize("method", ["gradient", "jacobian"])
def test_none_target_raises_like_tensorflow(method):
    x = loopax.Variable(np.ones(3, np.float32))
    with GradientTape() as tape:
        ops.sum(x * 2.0)
    with pytest.raises(TypeError, match="`target`.*received None"):
        getattr(tape, method)(None, x)


# --------------------------------------------------------------------------
# TensorFlow's rules for targets that are sources and for unconnected paths
# --------------------------------------------------------------------------

def _record_nothing(**tape_kwargs):
    with GradientTape(persistent=True, **tape_kwargs) as tape:
        pass
    return tape


@pytest.mark.parametrize("how", ["not_read", "read", "not_watched"])
def test_gradient_of_a_variable_with_respect_to_itself_is_ones(how):
    # TensorFlow: tape.gradient(v, v) is ones of v's shape, whether the tape read
    # or watched v or not; d[y, v]/dv adds dy/dv (3) to it where y was recorded.
    v = loopax.Variable(np.array([2.0, -1.0], np.float32))
    with GradientTape(persistent=True, watch_accessed_variables=how != "not_watched") as tape:
        y = v * 3.0 if how != "not_read" else None
    close(tape.gradient(v, v), [1.0, 1.0])
    if how == "read":
        close(tape.gradient([y, v], v), [4.0, 4.0])
        close(tape.gradient([y, v], v, output_gradients=[np.ones(2, np.float32),
                                                          np.array([10.0, 20.0], np.float32)]),
              [13.0, 23.0])


def test_a_target_that_is_a_source_is_ones_and_other_sources_unconnected():
    v, w = loopax.Variable(2.0), loopax.Variable(1.0)
    x = loopax.constant([1.0, 2.0, 3.0])          # never watched
    tape = _record_nothing()
    close(tape.gradient(x, x), np.ones(3))
    grads = tape.gradient(v, [v, w])
    close(grads[0], 1.0)
    assert grads[1] is None
    close(tape.gradient(v, [v, w], unconnected_gradients="zero")[1], 0.0)
    close(tape.jacobian(x, x), np.eye(3))        # d x_i / d x_j


def test_stop_gradient_is_unconnected_inside_a_tape():
    # TensorFlow: a source reached only through stop_gradient has no gradient (None);
    # zeros with unconnected_gradients="zero"; other paths still count.
    v = loopax.Variable(np.array([1.5, 2.5], np.float32))
    with GradientTape(persistent=True) as tape:
        only_stopped = ops.sum(ops.stop_gradient(v) * 2.0)
        both = ops.sum(v * 3.0 + ops.stop_gradient(v) ** 2)
    assert tape.gradient(only_stopped, v) is None
    for zero in ("zero", loopax.UnconnectedGradients.ZERO):
        close(tape.gradient(only_stopped, v, unconnected_gradients=zero), [0.0, 0.0])
    assert tape.gradient(only_stopped, v,
                         unconnected_gradients=loopax.UnconnectedGradients.NONE) is None
    close(tape.gradient(both, v), [3.0, 3.0])


def test_a_path_through_integer_values_is_unconnected():
    # TensorFlow: casting to an integer (or argmax) ends the gradient: None, not 0.
    v = loopax.Variable(np.array([1.5, 2.5], np.float32))
    with GradientTape(persistent=True) as tape:
        through_int = ops.sum(ops.cast(ops.cast(v, "int32"), "float32") * 3.0)
        through_argmax = ops.cast(ops.argmax(v * 2.0), "float32")
        mixed = ops.sum(ops.cast(ops.cast(v, "int32"), "float32") * v)
    assert tape.gradient(through_int, v) is None
    assert tape.gradient(through_argmax, v) is None
    close(tape.gradient(mixed, v), [1.0, 2.0])   # d(int(v) * v)/dv = int(v)


def test_a_source_computed_from_another_source_passes_the_gradient_on():
    # TensorFlow: with h = w², y = sin(h)·w, tape.gradient(y, [h, w]) is
    # [∂y/∂h, dy/dw] = [cos(h)·w, cos(h)·w·2w + sin(h)]; a source is no barrier.
    w = loopax.Variable(1.5)
    with GradientTape(persistent=True) as tape:
        h = w * w
        y = ops.sin(h) * w
    dy_dh, dy_dw = tape.gradient(y, [h, w])
    h0 = 1.5 ** 2
    close(dy_dh, np.cos(h0) * 1.5)
    close(dy_dw, np.cos(h0) * 1.5 * 2 * 1.5 + np.sin(h0))
    close(tape.gradient(h, [h, w])[1], 2 * 1.5)    # d h/d w through the target itself
    close(tape.jacobian(y, [h, w])[1], np.cos(h0) * 1.5 * 2 * 1.5 + np.sin(h0))
