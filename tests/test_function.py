"""loopax.function: a compiled stateful step equals the same step run eagerly."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax import ops
from loopax.src import function as function_lib
from loopax.src.function import function
from loopax.src.tape import GradientTape

X = np.random.default_rng(1).normal(size=(8, 3)).astype(np.float32)
Y = np.random.default_rng(2).normal(size=(8, 2)).astype(np.float32)


def make_train_step():
    """Seed 001's train_step: tape, apply_gradients, a Mean metric."""
    model = loopax.models.Sequential([loopax.layers.Dense(4, activation="relu"),
                                      loopax.layers.Dense(2)])
    model(X)
    loss_function = loopax.losses.MeanSquaredError()
    optimizer = loopax.optimizers.Adam(learning_rate=0.05)
    train_loss = loopax.metrics.Mean()

    def train_step(images, labels):
        with GradientTape() as tape:
            predictions = model(images)
            loss = loss_function(labels, predictions)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables))
        train_loss(loss)
        return loss
    return model, optimizer, train_loss, train_step


def test_compiled_train_step_matches_the_eager_step():
    model_a, opt_a, metric_a, eager_step = make_train_step()
    model_b, opt_b, metric_b, step = make_train_step()
    model_b.set_weights(model_a.get_weights())
    compiled = function(step)
    for _ in range(3):
        loss_a = eager_step(X, Y)
        loss_b = compiled(X, Y)
        np.testing.assert_allclose(float(loss_a), float(loss_b), rtol=1e-5)
    for a, b in zip(model_a.get_weights(), model_b.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert int(opt_b.iterations.value) == 3 == int(opt_a.iterations.value)
    np.testing.assert_allclose(float(metric_a.result()), float(metric_b.result()), rtol=1e-5)
    assert compiled.experimental_get_tracing_count() == 1


def test_assigned_variables_are_written_back_and_outputs_keep_their_structure():
    total = loopax.Variable(0.0, name="total")
    scale = loopax.Variable(2.0, name="scale")

    @function
    def accumulate(x):
        total.assign_add(ops.sum(x) * scale)
        return {"total": total.value, "tag": "sum", "pair": (x * 2.0, None)}

    held = total.value                     # a reference the caller keeps
    out = accumulate(np.ones(3, np.float32))
    out = accumulate(np.ones(3, np.float32))
    assert float(total.value) == 12.0 and float(out["total"]) == 12.0
    assert out["tag"] == "sum" and out["pair"][1] is None
    np.testing.assert_array_equal(np.asarray(out["pair"][0]), [2.0, 2.0, 2.0])
    assert float(held) == 0.0              # not invalidated by buffer donation
    trace = next(iter(accumulate._traces.values()))
    assert trace.assigned == [total]
    assert [v for v, _ in trace.read_assigned] == [total]
    assert [v for v, _ in trace.read_only] == [scale]
    scale.assign(1.0)                      # read each call, never baked in
    accumulate(np.ones(3, np.float32))
    assert float(total.value) == 15.0


def test_retraces_on_new_shapes_dtypes_and_python_values():
    calls = []

    @function
    def f(x, power):
        calls.append(1)
        return x ** power

    f(np.ones(2, np.float32), 2)
    f(np.full(2, 3.0, np.float32), 2)
    assert f.experimental_get_tracing_count() == 1
    f(np.ones(3, np.float32), 2)
    f(np.ones(3, np.int32), 2)
    np.testing.assert_array_equal(np.asarray(f(np.full(3, 2.0, np.float32), 3)), [8.0] * 3)
    assert f.experimental_get_tracing_count() == 4
    assert len(calls) == 4                 # Python runs only while tracing, once each
    with pytest.warns(UserWarning, match="traced 6 times"):
        for n in range(4, 6):
            f(np.ones(n, np.float32), 2)


def test_the_python_body_runs_once_on_the_first_call_and_its_state_is_lifted():
    first, second = loopax.Variable(1.0), loopax.Variable(10.0)
    side_effects = []

    @function
    def f(x):
        side_effects.append(1)
        v = first if len(side_effects) == 1 else second   # a second run would read `second`
        return v * x

    assert float(f(np.float32(2.0))) == 2.0
    assert side_effects == [1]              # once, as tf.function; not a discovery run too
    first.assign(5.0)                       # read on every call, not baked in
    assert float(f(np.float32(2.0))) == 10.0
    assert side_effects == [1]


@pytest.mark.parametrize("statement", ["if_on_a_variable", "while_on_a_tensor"])
def test_without_autograph_python_control_flow_on_a_traced_value_names_the_loopax_ops(
        statement):
    flag = loopax.Variable(1.0)

    def branch(x):
        return x if flag > 0 else -x

    def loop(x):
        while ops.sum(x) < 10.0:
            x = x * 2.0
        return x

    f = function(branch if statement == "if_on_a_variable" else loop, autograph=False)
    with pytest.raises(TypeError, match=r"loopax\.ops\.cond.*loopax\.ops\.while_loop") as info:
        f(np.float32(2.0))
    assert isinstance(info.value.__cause__, jax.errors.ConcretizationTypeError)


def test_unseeded_random_draws_fresh_numbers_every_call_and_repeats_after_seeding():
    @function
    def noise(x):
        return x + loopax.random.normal(x.shape)

    def run():
        loopax.utils.set_random_seed(3)
        return [np.asarray(noise(np.zeros(4, np.float32))) for _ in range(3)]

    first = run()
    assert not np.allclose(first[0], first[1]) and not np.allclose(first[1], first[2])
    for a, b in zip(first, run()):
        np.testing.assert_array_equal(a, b)


def test_donation_never_invalidates_an_array_someone_holds():
    total = loopax.Variable(np.zeros(3, np.float32))

    @function
    def add(x):
        total.assign_add(x)

    add(np.ones(3, np.float32))
    held = total.value                      # the array the last call wrote
    add(np.ones(3, np.float32))             # must not update `held` in place
    add(np.ones(3, np.float32))
    np.testing.assert_array_equal(np.asarray(held), [1.0] * 3)
    buffer = total._value                   # (peeking, not reading: `value` would hand it out)
    add(np.ones(3, np.float32))             # nothing read it since: donated
    assert buffer.is_deleted()
    np.testing.assert_array_equal(total.numpy(), [4.0] * 3)


def test_loopax_print_prints_every_call_and_python_print_is_warned(capsys):
    v = loopax.Variable(np.array([1.0, 2.0], np.float32))

    @function
    def show(x):
        v.assign(v.value + x)
        loopax_print = function_lib.print
        loopax_print("v:", v, [x, 3])

    for _ in range(2):
        show(np.ones(2, np.float32))
    jax.effects_barrier()
    assert capsys.readouterr().out.splitlines() == ["v: [2. 3.] [[1. 1.], 3]",
                                                    "v: [3. 4.] [[1. 1.], 3]"]
    function_lib.print("eager", loopax.constant(1.5))
    assert capsys.readouterr().out == "eager 1.5\n"

    def noisy(x):
        print("tracing", x)
        return x
    with pytest.warns(UserWarning, match="loopax.print"):
        function(noisy)(np.ones(1, np.float32))


def test_runs_as_python_under_a_tape_inside_jit_and_without_jit_compile():
    w = loopax.Variable(3.0)
    calls = []

    def f(x):
        calls.append(1)
        return w * x * x

    compiled = function(f)
    with GradientTape() as tape:
        y = compiled(np.float32(2.0))
    assert float(tape.gradient(y, w)) == 4.0
    assert float(jax.jit(lambda x: compiled(x))(2.0)) == 12.0
    eager = function(f, jit_compile=False)
    n = len(calls)
    eager(1.0)
    eager(1.0)
    assert len(calls) == n + 2


def test_a_decorated_method():
    class Counter(loopax.Module):
        def __init__(self):
            super().__init__()
            self.count = loopax.Variable(0, dtype="int32")

        @function
        def bump(self, by):
            self.count.assign_add(by)
            return self.count.value

    a, b = Counter(), Counter()
    a.bump(jnp.int32(2))
    a.bump(jnp.int32(3))
    b.bump(jnp.int32(1))
    assert int(a.count.value) == 5 and int(b.count.value) == 1


def test_a_returned_variable_is_read_after_the_steps_assignments():
    # TensorFlow: `v.assign_add(1); return v` in a tf.function returns 1, 2, 3.
    class Counter(loopax.Module):
        def __init__(self):
            super().__init__()
            self.v = loopax.Variable(0.0)

        @function
        def step(self):
            self.v.assign_add(1.0)
            return self.v

        @function
        def nested(self, x):
            self.v.assign_add(x)
            return {"alone": self.v, "in_a_list": [self.v, self.v * 2.0]}

    counter = Counter()
    assert [float(counter.step()) for _ in range(3)] == [1.0, 2.0, 3.0]
    out = counter.nested(np.float32(10.0))
    assert float(out["alone"]) == 13.0
    assert [float(x) for x in out["in_a_list"]] == [13.0, 26.0]


def test_loopax_print_of_python_values_only_prints_on_every_call(capsys):
    # tf.print("step", 1) inside a tf.function prints each time the function runs.
    @function
    def step(x):
        function_lib.print("step", 1, {"lr": 0.5})
        return x + 1.0

    for _ in range(3):
        step(np.float32(0.0))
    jax.effects_barrier()
    assert capsys.readouterr().out.splitlines() == ["step 1 {'lr': 0.5}"] * 3


def test_creating_a_variable_on_every_call_raises_like_tf_function():
    # TensorFlow raises ValueError: "tf.function only supports singleton tf.Variables
    # created on the first call" (eagerly, each call would make a fresh Variable).
    @function
    def fresh_each_call(x):
        v = loopax.Variable(1.0)
        v.assign_add(x)
        return v

    with pytest.raises(ValueError, match=r"'fresh_each_call' created Variable .*first call"):
        fresh_each_call(np.float32(1.0))


def test_a_variable_created_on_a_later_trace_raises():
    class PerShape(loopax.Module):
        def __init__(self):
            super().__init__()
            self.offsets = {}

        @function
        def __call__(self, x):
            n = x.shape[0]
            if n not in self.offsets:
                self.offsets[n] = loopax.Variable(np.ones(n, np.float32))
            return x + self.offsets[n]

    layer = PerShape()
    np.testing.assert_array_equal(np.asarray(layer(np.zeros(2, np.float32))), [1.0, 1.0])
    with pytest.raises(ValueError, match="after its first trace"):
        layer(np.zeros(3, np.float32))


def test_creating_variables_on_each_instances_first_call_works():
    class Accumulator(loopax.Module):
        def __init__(self):
            super().__init__()
            self.total = None

        @function
        def __call__(self, x):
            if self.total is None:
                self.total = loopax.Variable(0.0)
            self.total.assign_add(x)
            return self.total

    a, b = Accumulator(), Accumulator()
    assert [float(a(np.float32(1.0))) for _ in range(3)] == [1.0, 2.0, 3.0]
    assert [float(b(np.float32(2.0))) for _ in range(2)] == [2.0, 4.0]
    assert a.__call__ is a.__call__ and a.__call__.experimental_get_tracing_count() == 1


def test_ctrl_c_right_after_the_compiled_call_leaves_the_variables_usable():
    """A SIGINT landing between the compiled call's return and the write-back is held
    until the Variables hold the new values (the old ones were donated)."""
    import signal

    v = loopax.Variable(np.zeros(3, np.float32))

    @loopax.function
    def step(x):
        v.assign_add(x)
        return v.value.sum()

    step(np.ones(3, np.float32))
    step(np.ones(3, np.float32))        # now v's buffer is owned: the next call donates it
    trace = next(iter(step._traces.values()))
    real = trace._jitted

    def call_then_interrupt(*args):
        out = real(*args)
        signal.raise_signal(signal.SIGINT)
        return out

    trace._jitted = call_then_interrupt
    with pytest.raises(KeyboardInterrupt):
        step(np.ones(3, np.float32))
    trace._jitted = real
    np.testing.assert_array_equal(v.numpy(), [3, 3, 3])
    assert float(step(np.ones(3, np.float32))) == 12
