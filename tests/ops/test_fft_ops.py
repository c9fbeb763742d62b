"""loopax.ops Fourier transforms, STFT and signal windows against keras.ops
(Keras 3 on JAX) on random inputs."""



import jax
import numpy as np
import pytest

import loopax
from loopax import ops

keras = pytest.importorskip("keras")

rng = np.random.default_rng(7)


def check(actual, expected, tol=1e-5):
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            check(a, e, tol)
        return
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol)


def pair(*shape, dtype="float32"):
    return (rng.normal(size=shape).astype(dtype), rng.normal(size=shape).astype(dtype))


COMPLEX_CASES = [("fft", (8,)), ("fft", (2, 4, 6)), ("fft2", (3, 5)), ("fft2", (2, 4, 6)),
                 ("ifft2", (3, 5)), ("ifft2", (2, 4, 6))]


@pytest.mark.parametrize("name,shape", COMPLEX_CASES,
                         ids=[f"{n}-{len(s)}d" for n, s in COMPLEX_CASES])
def test_complex_transforms_match_keras(name, shape):
    x = pair(*shape)
    check(getattr(ops, name)(x), getattr(keras.ops, name)(x))


@pytest.mark.parametrize("fft_length", [None, 6, 15], ids=["default", "shorter", "longer"])
def test_rfft_and_irfft_match_keras(fft_length):
    x = rng.normal(size=(2, 3, 10)).astype("float32")
    check(ops.rfft(x, fft_length), keras.ops.rfft(x, fft_length))
    spectrum = pair(2, 6)
    check(ops.irfft(spectrum, fft_length), keras.ops.irfft(spectrum, fft_length))


def test_irfft_inverts_rfft():
    x = rng.normal(size=(4, 12)).astype("float32")
    check(ops.irfft(ops.rfft(x), 12), x)


# One case per code path: string, absent and array windows; centred and
# uncentred framing; fft_length longer than the frame, and odd; `length`
# left out and cutting the output.
STFT_CASES = {
    "hann-centered-full": (16, 4, 16, "hann", True, None),
    "hamming-uncentered-padded-fft-cut": (10, 3, 16, "hamming", False, 40),
    "no-window-centered-cut": (12, 5, 16, None, True, 40),
    "array-window-uncentered-odd-fft-full": (9, 4, 13, "array", False, None),
}


@pytest.mark.parametrize("case", list(STFT_CASES), ids=list(STFT_CASES))
def test_stft_and_istft_match_keras(case):
    sequence_length, stride, fft_length, window, center, length = STFT_CASES[case]
    if window == "array":
        window = rng.uniform(0.5, 1.0, size=sequence_length).astype("float32")
    signal = rng.normal(size=(2, 3, 60)).astype("float32")
    args = (sequence_length, stride, fft_length)
    spectrum = ops.stft(signal, *args, window=window, center=center)
    # Keras jitted: eagerly it compiles each of its many small ops anew.
    check(spectrum, jax.jit(lambda s: keras.ops.stft(s, *args, window=window, center=center))(
        signal))
    check(ops.istft(spectrum, *args, length=length, window=window, center=center),
          jax.jit(lambda s: keras.ops.istft(s, *args, length=length, window=window,
                                            center=center))(spectrum),
          tol=1e-4)


def test_istft_inverts_centred_stft():
    signal = rng.normal(size=(64,)).astype("float32")
    spectrum = ops.stft(signal, 16, 4, 16)
    check(ops.istft(spectrum, 16, 4, 16, length=64), signal, tol=1e-4)


def test_fft_ops_under_jit_and_tape():
    signal = rng.normal(size=(2, 40)).astype("float32")
    jitted = jax.jit(lambda s: ops.istft(ops.stft(s, 8, 2, 8), 8, 2, 8, length=40))
    keras_jitted = jax.jit(lambda s: keras.ops.istft(keras.ops.stft(s, 8, 2, 8), 8, 2, 8,
                                                     length=40))
    check(jitted(signal), keras_jitted(signal), tol=1e-4)
    x = loopax.Variable(rng.normal(size=(6,)).astype("float32"))
    with loopax.GradientTape() as tape:
        real, imag = ops.rfft(x)
        energy = ops.sum(real ** 2 + imag ** 2)
    grad = tape.gradient(energy, x)

    def keras_energy(v):
        real, imag = keras.ops.rfft(v)
        return keras.ops.sum(real ** 2 + imag ** 2)

    check(grad, jax.jit(jax.grad(keras_energy))(np.asarray(x.value)), tol=1e-4)


def test_fft_bad_inputs():
    with pytest.raises(ValueError, match=r"fft: `x` must be a \(real, imag\) tuple"):
        ops.fft(np.ones(4, "float32"))
    with pytest.raises(ValueError, match="must match"):
        ops.fft((np.ones(4, "float32"), np.ones(5, "float32")))
    with pytest.raises(ValueError, match="must be float tensors"):
        ops.ifft2((np.ones((2, 2), "int32"), np.ones((2, 2), "int32")))
    with pytest.raises(TypeError, match="float32 or float64"):
        ops.stft(np.ones(32, "int32"), 8, 2, 8)
    with pytest.raises(ValueError, match="fft_length=4 must be at least sequence_length=8"):
        ops.stft(np.ones(32, "float32"), 8, 2, 4)
    with pytest.raises(ValueError, match="window='boxcar' is not supported"):
        ops.stft(np.ones(32, "float32"), 8, 2, 8, window="boxcar")
    with pytest.raises(ValueError, match=r"`window` must have shape \(8,\)"):
        ops.istft(pair(3, 5), 8, 2, 8, window=np.ones(7, "float32"))


@pytest.mark.parametrize("name", ["hamming", "hanning", "blackman", "bartlett", "kaiser"])
@pytest.mark.parametrize("length", [1, 2, 7, 32])
def test_windows_match_keras(name, length):
    args = (length, 6.0) if name == "kaiser" else (length,)
    check(getattr(ops, name)(*args), getattr(keras.ops, name)(*args), tol=1e-6)


def test_window_length_must_be_static():
    with pytest.raises(ValueError, match="hamming: the window length must be a Python int"):
        jax.jit(ops.hamming)(5)
