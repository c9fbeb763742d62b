"""Autograph (loopax/src/autograph.py): Python control flow on traced values in
`loopax.function` becomes lax control flow. Values and gradients are checked
against the same computation written by hand with jax.lax; break/continue/
return numbers against what TensorFlow 2.21's tf.function gave for the same
functions (recorded from /work/tfvenv runs of these function bodies)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
import loopax.tf as tf
from loopax import function, ops
from loopax.src import autograph


def test_if_on_a_traced_value_is_lax_cond_with_its_values_and_gradients():
    @function
    def f(x):
        if ops.sum(x) > 0:
            y = x * x
        else:
            y = -3.0 * x
        return ops.sum(y)

    def by_hand(x):
        return jnp.sum(jax.lax.cond(jnp.sum(x) > 0, lambda: x * x, lambda: -3.0 * x))

    for x in (np.array([1.0, 2.0], np.float32), np.array([-1.0, -2.0], np.float32)):
        np.testing.assert_allclose(np.asarray(f(x)), by_hand(x))
        np.testing.assert_allclose(jax.grad(lambda v: f(v))(x), jax.grad(by_hand)(x))
    assert f.experimental_get_tracing_count() == 1   # one program for both branches


def test_for_over_tf_range_is_a_fori_loop_with_its_values_and_gradients():
    @function
    def f(x):
        s = x
        for i in tf.range(4):
            s = s * x + i
        return s

    def by_hand(x):
        return jax.lax.fori_loop(0, 4, lambda i, s: s * x + i, x)

    x = np.float32(0.7)
    np.testing.assert_allclose(np.asarray(f(x)), by_hand(x), rtol=1e-6)
    np.testing.assert_allclose(jax.grad(lambda v: f(v))(x), jax.grad(by_hand)(x), rtol=1e-6)


def test_while_on_a_traced_value_is_a_while_loop():
    @function
    def f(x, limit):
        n = 0
        while x < limit:
            x = x * 2.0
            n += 1
        return x, n

    def by_hand(x, limit):
        return jax.lax.while_loop(lambda c: c[0] < limit, lambda c: (c[0] * 2.0, c[1] + 1),
                                  (x, 0))

    for limit in (1.0, 10.0, 1000.0):
        got, want = f(np.float32(1.5), np.float32(limit)), by_hand(1.5, limit)
        np.testing.assert_allclose([float(got[0]), int(got[1])], [float(want[0]), int(want[1])])
    assert f.experimental_get_tracing_count() == 1


def test_break_continue_and_early_return_as_tensorflow():
    @tf.function
    def brk(x):                       # TF 2.21: 9 for x = 6
        s = tf.constant(0)
        for i in tf.range(10):
            if i > x:
                break
            if i % 2 == 0:
                continue
            s += i
        return s

    @tf.function
    def count_up(n):                  # TF 2.21: 7 for n = 7
        i = tf.constant(0)
        while True:
            i += 1
            if i >= n:
                break
        return i

    @tf.function
    def early(x):                     # TF 2.21: 3.0 for x = -3
        if x > 0:
            return x
        return -x

    @tf.function
    def logic(x):                     # TF 2.21: 1 for x = -5
        if x > 0 and x < 10 or not x != -5:
            return 1
        else:
            return 0

    assert int(brk(tf.constant(6))) == 9
    assert int(count_up(tf.constant(7))) == 7
    assert float(early(tf.constant(-3.0))) == 3.0 and float(early(tf.constant(2.0))) == 2.0
    assert [int(logic(tf.constant(v))) for v in (-5, 3, 12)] == [1, 1, 0]


def test_python_control_flow_on_python_values_stays_python():
    branches = []

    @function
    def f(x, flag, n):
        if flag:
            branches.append("true")
            y = x + 1.0
        else:
            branches.append("false")
            y = x - 1.0
        for _ in range(n):            # a Python range: unrolled, as TensorFlow
            y = y * 2.0
        return y

    assert float(f(np.float32(1.0), True, 3)) == 16.0
    assert float(f(np.float32(1.0), False, 2)) == 0.0
    assert branches == ["true", "false"]   # only the taken branch ran, once per trace
    converted = autograph.convert(f.python_function)
    jaxpr = str(jax.make_jaxpr(lambda x: converted(x, True, 3))(1.0))
    assert "cond" not in jaxpr and "while" not in jaxpr


def test_variables_assigned_in_branches_and_loops_are_carried():
    total = loopax.Variable(0.0)
    calls = loopax.Variable(0)

    @function
    def f(n):
        calls.assign_add(1)
        for i in tf.range(n):
            if i % 2 == 0:            # TF 2.21: 0 + 2 + 4 = 6.0 for n = 5
                total.assign_add(ops.cast(i, "float32"))
        return total.value

    assert float(f(np.int32(5))) == 6.0
    assert float(f(np.int32(3))) == 8.0      # 6 + 0 + 2: the Variable was written back
    assert float(total.value) == 8.0 and int(calls.value) == 2


def test_random_ops_in_a_traced_loop_draw_new_numbers_each_iteration():
    @function
    def draws(n):
        out = ops.zeros((3,))
        for i in tf.range(n):
            out = ops.where(ops.arange(3) == i, loopax.random.uniform(()), out)
        return out

    values = np.asarray(draws(np.int32(3)))
    assert len(set(values.tolist())) == 3 and np.all((values >= 0) & (values < 1))
    assert not np.allclose(values, np.asarray(draws(np.int32(3))))   # fresh each call


def test_do_not_convert_and_autograph_false_keep_the_python_as_written():
    def branch(x):
        return x if x > 0 else -x

    for f in (function(branch, autograph=False),
              tf.function(tf.autograph.experimental.do_not_convert(branch)),
              tf.function(branch, autograph=False)):
        with pytest.raises(TypeError, match=r"loopax\.ops\.cond"):
            f(np.float32(2.0))
    assert float(tf.function(lambda x: x * 2.0)(np.float32(2.0))) == 4.0   # no source: as is


def _loop_that_grows(x):
    for _ in tf.range(3):
        x = tf.concat([x, x], 0)
    return x


def _defined_in_one_branch(x):
    if x > 0:
        y = x * 2
    return y


def _return_in_a_traced_loop(x):
    for i in tf.range(3):
        if x[i] > 2:
            return i
    return -1


@pytest.mark.parametrize("fn, arg, offset, message", [
    (_loop_that_grows, [1.0], 1, r"'x' has shape \(1,\) before this `for` loop .* \(2,\) after"),
    (_defined_in_one_branch, 1.0, 1, r"'y' is used but was left undefined"),
    (_return_in_a_traced_loop, [1.0, 3.0, 5.0], 2, r"returns from the function in one branch"),
], ids=["shape_changes_in_a_loop", "defined_in_one_branch", "return_in_a_traced_loop"])
def test_a_construct_that_cannot_be_converted_names_the_file_and_line(fn, arg, offset,
                                                                      message):
    line = fn.__code__.co_firstlineno + offset
    with pytest.raises((ValueError, UnboundLocalError), match=message) as info:
        tf.function(fn)(tf.constant(arg))
    assert f"test_autograph.py:{line}:" in str(info.value) or (
        f"test_autograph.py:{line}" in str(info.value))


class _Counter(loopax.Module):
    def __init__(self):
        super().__init__()
        self.__steps = loopax.Variable(0.0)

    @function
    def run(self, n):
        for _ in tf.range(n):
            self.__steps.assign_add(1.0)
        return super().__repr__() is not None, self.__steps.value


def test_methods_with_private_names_and_super_convert():
    counter = _Counter()
    flag, steps = counter.run(np.int32(4))
    assert bool(flag) and float(steps) == 4.0


def test_to_code_shows_the_rewrite():
    def f(x):
        while x > 1:
            x = x / 2
        return x

    code = tf.autograph.to_code(f)
    assert "while_stmt" in code and "def f(x):" in code


def _user_helper(x):
    if x > 0:                 # converted when a loopax.function calls it, as in TensorFlow
        return x * 10.0
    return x


def test_user_functions_called_inside_are_converted_too():
    @tf.function
    def f(x):
        return _user_helper(x) + 1.0

    assert float(f(tf.constant(2.0))) == 21.0 and float(f(tf.constant(-2.0))) == -1.0


def test_a_gradient_tape_inside_differentiates_through_converted_control_flow():
    w = tf.Variable(3.0)

    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            if x > 0:                      # both branches joined by where (the tape's way)
                y = x * w * w
            else:
                y = -w
            for _ in tf.range(3):          # unrolled for the tape
                y = y + w
        return tape.gradient(y, w)

    # d/dw: 2*x*w + 3 for x > 0 (x = 2, w = 3: 15); -1 + 3 = 2 otherwise
    assert float(grad(tf.constant(2.0))) == 15.0 and float(grad(tf.constant(-2.0))) == 2.0


@tf.function
def _countdown(n):
    if n > 0:                             # a Python int: Python recursion, one trace each
        return _countdown(n - 1) + 1
    return 0


def test_a_recursive_function_refers_to_itself_not_to_its_conversion():
    assert int(_countdown(4)) == 4     # (the nested calls run inline in the one trace)


def test_a_decorated_function_keeps_its_decorator():
    import functools

    calls = []

    def logged(fn):
        @functools.wraps(fn)
        def wrapper(x):
            calls.append(1)
            return fn(x) + 100.0
        return wrapper

    @logged
    def inner(x):
        if x > 0:
            return x
        return -x

    converted = autograph.convert(inner)
    assert float(converted(np.float32(-2.0))) == 102.0 and calls == [1]


def test_a_value_leaking_out_of_a_traced_loop_names_tensorarray():
    @tf.function
    def collect(n):
        out = []
        for i in tf.range(n):
            out.append(i)             # TF 2.21 refuses this too (a Python list in a tf loop)
        return tf.stack(out)

    with pytest.raises(TypeError, match=r"escaped it.*tf\.TensorArray"):
        collect(tf.constant(3))
