"""loopax.ops.ctc_decode (greedy and beam search) against keras.ops (Keras 3 on JAX)."""



import jax
import numpy as np
import pytest

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


GREEDY_CASES = [(0, True), (None, False)]


@pytest.mark.parametrize("mask_index,merge_repeated", GREEDY_CASES,
                         ids=[f"blank-{m}-merge-{r}" for m, r in GREEDY_CASES])
def test_greedy_decode_matches_keras(mask_index, merge_repeated):
    _, output, _, output_length = ctc_batch(classes=4)
    output[1, 3:6] = output[1, 3:6] + 10 * np.eye(4)[[1, 1, 1]]  # forced repeats
    ours = ops.ctc_decode(output, output_length, mask_index=mask_index,
                          merge_repeated=merge_repeated)
    theirs = jax.jit(lambda o, n: keras.ops.ctc_decode(
        o, n, mask_index=mask_index, merge_repeated=merge_repeated))(output, output_length)
    check(ours[0], theirs[0])
    check(ours[1], theirs[1])


BEAM_CASES = [(100, 2, 2), (3, 3, None)]


@pytest.mark.parametrize("beam_width,top_paths,mask_index", BEAM_CASES,
                         ids=[f"width-{w}-top-{t}-blank-{m}" for w, t, m in BEAM_CASES])
def test_beam_search_decode_matches_keras(beam_width, top_paths, mask_index):
    _, output, _, output_length = ctc_batch(time=10, classes=5, labels=3)
    kwargs = dict(strategy="beam_search", beam_width=beam_width, top_paths=top_paths,
                  mask_index=mask_index)
    ours = ops.ctc_decode(output, output_length, **kwargs)
    theirs = jax.jit(lambda o, n: keras.ops.ctc_decode(o, n, **kwargs))(output, output_length)
    check(ours[0], theirs[0])
    check(ours[1], theirs[1], tol=1e-4)


def test_decode_under_jit_and_with_variables():
    _, output, _, output_length = ctc_batch(time=10, classes=5, labels=3)
    kwargs = dict(strategy="beam_search", beam_width=5, top_paths=3)
    ours = jax.jit(lambda o, n: ops.ctc_decode(o, n, **kwargs))(output, output_length)
    eager = ops.ctc_decode(loopax.Variable(output), output_length, **kwargs)
    for a, b in zip(ours, eager):
        check(a, b)
