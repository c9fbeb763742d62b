"""Keras 3.15 initializers loopax lacked until issue #22 (STFT and the
`*Initializer` compatibility names): values, configs and names equal to Keras's."""

import numpy as np
import pytest
from keras_reference import keras

from loopax import initializers

STFT_CASES = [
    ({}, (16, 1, 9)),
    ({"side": "imag"}, (16, 1, 9)),
    ({"window": "hamming", "scaling": "spectrum"}, (12, 2, 7)),
    ({"window": "hann", "periodic": True}, (16, 1, 9)),
    ({"window": "blackman", "scaling": None}, (10, 1, 6)),
    ({"window": None}, (8, 1, 5)),
    ({"window": np.linspace(0.1, 1.0, 8).tolist(), "side": "imag"}, (8, 1, 5)),
]


def case_id(case):
    kwargs, shape = case
    window = kwargs.get("window", "hann")
    args = {**kwargs, "window": window if window is None or isinstance(window, str) else "array"}
    return "-".join(f"{k}={v}" for k, v in args.items()) + f"-{shape}"


@pytest.mark.parametrize("case", STFT_CASES, ids=[case_id(c) for c in STFT_CASES])
def test_stft_kernel_matches_keras(case):
    kwargs, shape = case
    ours, theirs = initializers.STFT(**kwargs), keras.initializers.STFT(**kwargs)
    # Keras returns (frame_length, 1, bins) whatever `channels` is asked for; loopax
    # gives the shape asked for, the same kernel for every channel.
    expected = np.broadcast_to(theirs(shape), shape)
    np.testing.assert_allclose(ours(shape), expected, rtol=1e-5, atol=1e-6)
    assert ours.get_config() == theirs.get_config()


@pytest.mark.parametrize("name", ["STFT", "STFTInitializer", "stft"])
def test_stft_by_name_and_config_round_trip(name):
    made = initializers.get(name)
    assert type(made) is initializers.STFT
    assert type(made) is type(initializers.get(keras.initializers.serialize(
        keras.initializers.get(name))))
    restored = initializers.deserialize(initializers.serialize(initializers.STFT(side="imag")))
    np.testing.assert_array_equal(restored((8, 1, 5)), initializers.STFT(side="imag")((8, 1, 5)))


def test_orthogonal_initializer_is_orthogonal():
    assert initializers.OrthogonalInitializer is initializers.Orthogonal
    assert type(initializers.get("OrthogonalInitializer")) is initializers.Orthogonal
    assert type(keras.initializers.get("OrthogonalInitializer")) is keras.initializers.Orthogonal


@pytest.mark.parametrize("kwargs,match", [
    ({"side": "imaginary"}, "side='imaginary'"), ({"window": "nope"}, "window='nope'"),
    ({"scaling": "l2"}, "scaling='l2'")], ids=["side", "window", "scaling"])
def test_stft_bad_arguments_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        initializers.STFT(**kwargs)
    with pytest.raises(ValueError):
        keras.initializers.STFT(**kwargs)


def test_stft_window_of_the_wrong_length_names_both_lengths():
    with pytest.raises(ValueError, match=r"\(3,\).*\(8,\)"):
        initializers.STFT(window=[1.0, 2.0, 3.0])((8, 1, 5))
