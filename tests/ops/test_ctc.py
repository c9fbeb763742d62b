"""loopax.ops.ctc_loss against keras.ops (Keras 3 on JAX); ctc_decode is in
test_ctc_decode.py."""



import jax
import numpy as np
import pytest
from jax.test_util import check_grads

import loopax
from loopax import ops

keras = pytest.importorskip("keras")

rng = np.random.default_rng(11)


def check(actual, expected, tol=1e-5):
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


def ctc_batch(batch=4, time=12, classes=6, labels=5, mask_index=0):
    """Random logits and labels (never the blank), with a repeated label,
    an empty label sequence and outputs shorter than max_time."""
    output = (rng.normal(size=(batch, time, classes)) * 2).astype("float32")
    choices = [c for c in range(classes) if c != mask_index]
    target = rng.choice(choices, size=(batch, labels)).astype("int32")
    target[0, 1] = target[0, 0]
    target_length = rng.integers(0, labels + 1, size=batch).astype("int32")
    target_length[0] = labels
    target_length[-1] = 0 if batch > 1 else target_length[-1]
    output_length = rng.integers(2 * labels + 1, time + 1, size=batch).astype("int32")
    return target, output, target_length, output_length


LOSS_CASES = {"blank-0": dict(), "blank-2-batch-of-1": dict(mask_index=2, batch=1)}


@pytest.mark.parametrize("case", list(LOSS_CASES), ids=list(LOSS_CASES))
def test_ctc_loss_and_gradient_match_keras(case):
    kwargs = LOSS_CASES[case]
    target, output, target_length, output_length = ctc_batch(**kwargs)
    mask_index = kwargs.get("mask_index", 0)

    def ours(o):
        return ops.ctc_loss(target, o, target_length, output_length, mask_index=mask_index)

    @jax.jit
    def theirs(o):  # jitted: Keras's eager scan would recompile on every call
        return keras.ops.ctc_loss(target, o, target_length, output_length, mask_index=mask_index)

    def values_and_gradient(loss):
        """Per-sample losses and the gradient of their sum from one forward and
        backward pass (2 compilations of the loss, not 3)."""
        def summed(o):
            values = loss(o)
            return values.sum(), values
        (_, values), gradient = jax.value_and_grad(summed, has_aux=True)(output)
        return values, gradient

    ours_values, ours_gradient = values_and_gradient(ours)
    theirs_values, theirs_gradient = values_and_gradient(theirs)
    check(ours_values, theirs_values, tol=1e-4)
    check(ours_gradient, theirs_gradient, tol=1e-4)


def test_ctc_loss_gradient_matches_finite_differences():
    target, output, target_length, output_length = ctc_batch(batch=2, time=5, classes=3, labels=2)
    with jax.enable_x64(True):
        check_grads(lambda o: ops.ctc_loss(target, o, target_length, output_length).sum(),
                    (output.astype("float64"),), order=1, modes=["rev"], atol=1e-4, rtol=1e-4)


def test_ctc_loss_under_jit_and_tape():
    """Same values and gradients as the eager op (compared with Keras above)."""
    target, output, target_length, output_length = ctc_batch()
    jitted = jax.jit(lambda o, t, tl, ol: ops.ctc_loss(t, o, tl, ol))
    check(jitted(output, target, target_length, output_length),
          ops.ctc_loss(target, output, target_length, output_length))
    logits = loopax.Variable(output)
    with loopax.GradientTape() as tape:
        value = ops.mean(ops.ctc_loss(target, logits, target_length, output_length))
    expected = jax.grad(lambda o: ops.ctc_loss(target, o, target_length, output_length).mean())
    check(tape.gradient(value, logits), expected(output))


def test_impossible_alignment_gives_a_large_finite_loss():
    target = np.array([[1, 2, 3, 1]])
    loss = ops.ctc_loss(target, rng.normal(size=(1, 3, 4)).astype("float32"), [4], [3])
    assert np.isfinite(loss).all() and float(loss[0]) > 1e4


def test_ctc_bad_inputs():
    output = np.zeros((2, 5, 3), "float32")
    with pytest.raises(ValueError, match="strategy='viterbi' is not supported"):
        ops.ctc_decode(output, [5, 5], strategy="viterbi")
    with pytest.raises(ValueError, match=r"ctc_decode: `output` must be \(batch, max_time"):
        ops.ctc_decode(output[0], [5])
    with pytest.raises(ValueError, match=r"ctc_loss: `target` must be \(batch, max_label_length\)"):
        ops.ctc_loss(np.ones(2, "int32"), output, [1, 1], [5, 5])
