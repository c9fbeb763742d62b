"""Math ops (`keras.ops.math`): top-k, log-sum-exp, special functions and
segment reductions."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from loopax.src.array_types import Array, ArrayLike, Axis
from loopax.src.ops.utils import as_array, compiled
from loopax.src.tensor import op, unwrap

_IMPORTED = set(globals())


@op
@compiled("k", "sorted")
def top_k(x: ArrayLike, k: int, sorted: bool = True) -> tuple[Array, Array]:
    """(values, indices) of the `k` largest entries along the last axis,
    largest first.

    Args:
        x: Array `(..., n)`.
        k: How many entries.
        sorted: Accepted for Keras compatibility; results are always sorted.

    Returns:
        `(values, indices)`, each `(..., k)`.

    Raises:
        ValueError: `k` is larger than the last axis.
    """
    x = as_array(x)
    if k > x.shape[-1]:
        raise ValueError(f"top_k: k={k} is larger than the last axis of x {x.shape}.")
    return tuple(lax.top_k(x, k))


@op
@compiled("k")
def in_top_k(targets: ArrayLike, predictions: ArrayLike, k: int) -> Array:
    """Whether each `targets[i]` is among the `k` largest of `predictions[i]`
    (ties with the k-th value count as in).

    Args:
        targets: Integer class ids `(batch,)`.
        predictions: Scores `(batch, classes)`.
        k: How many top entries count.

    Returns:
        A bool array `(batch,)`.
    """
    targets = as_array(targets).astype("int32")
    target_score = jnp.take_along_axis(as_array(predictions), targets[:, None], axis=-1)
    return jnp.sum(predictions > target_score, axis=-1) < k


@op
@compiled("axis", "keepdims")
def logsumexp(x: ArrayLike, axis: Axis = None, keepdims: bool = False) -> Array:
    """`log(sum(exp(x)))` over `axis`, computed stably by factoring out the max.

    Args:
        x: Input array.
        axis: Axis or axes to reduce; None reduces all.
        keepdims: Keep the reduced axes, with size 1.

    Returns:
        The log-sum-exp values.
    """
    shift = jnp.max(x, axis=axis, keepdims=True)
    shift = lax.stop_gradient(jnp.where(jnp.isfinite(shift), shift, 0))
    out = jnp.log(jnp.sum(jnp.exp(x - shift), axis=axis, keepdims=True)) + shift
    return out if keepdims else jnp.squeeze(out, axis)


@op
def rsqrt(x: ArrayLike) -> Array:
    """`1 / sqrt(x)`.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape.
    """
    return lax.rsqrt(_float(x))


@op
def erf(x: ArrayLike) -> Array:
    """The error function, elementwise.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape (float).
    """
    return lax.erf(_float(x))


@op
def erfc(x: ArrayLike) -> Array:
    """The complementary error function `1 - erf(x)`, accurate for large `x`.

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape (float).
    """
    return lax.erfc(_float(x))


@op
def erfinv(x: ArrayLike) -> Array:
    """The inverse error function, elementwise (defined on (-1, 1)).

    Args:
        x: Input array.

    Returns:
        An array of `x`'s shape (float).
    """
    return lax.erf_inv(_float(x))


@op
@compiled()
def logdet(x: ArrayLike) -> Array:
    """`log(det(x))` for symmetric positive-definite `x`.

    Args:
        x: A symmetric positive-definite matrix `(..., n, n)`.

    Returns:
        `(...)` log-determinants.
    """
    return jnp.linalg.slogdet(x)[1]


def _float(x):
    x = as_array(x)
    return x if jnp.issubdtype(x.dtype, jnp.inexact) else x.astype("float32")


def _num_segments(segment_ids, num_segments):
    """`num_segments`, or (eagerly) one more than the largest id. Read here,
    outside the op, so a tape replays the op with the same static size."""
    if num_segments is not None:
        return num_segments
    segment_ids = unwrap(segment_ids)
    if isinstance(segment_ids, jax.core.Tracer):
        raise ValueError("segment ops: inside jax.jit `num_segments` must be given "
                         "(the output size has to be static).")
    return int(jnp.max(segment_ids)) + 1


def segment_sum(data: ArrayLike, segment_ids: ArrayLike, num_segments: int | None = None,
                sorted: bool = False) -> Array:
    """Sums of `data` rows sharing a segment id: out[i] = sum(data[ids == i]).

    Args:
        data: Array `(N, ...)`.
        segment_ids: Integer ids `(N,)`.
        num_segments: The number of segments (default `max(segment_ids) + 1`, read eagerly).
        sorted: Whether `segment_ids` is sorted (a speed hint).

    Returns:
        `(num_segments, ...)` sums.
    """
    return _segment_sum(data, segment_ids, _num_segments(segment_ids, num_segments), sorted)


def segment_max(data: ArrayLike, segment_ids: ArrayLike, num_segments: int | None = None,
                sorted: bool = False) -> Array:
    """Maxima of `data` rows sharing a segment id.

    Args:
        data: Array `(N, ...)`.
        segment_ids: Integer ids `(N,)`.
        num_segments: The number of segments (default `max(segment_ids) + 1`, read eagerly).
        sorted: Whether `segment_ids` is sorted (a speed hint).

    Returns:
        `(num_segments, ...)` maxima.
    """
    return _segment_max(data, segment_ids, _num_segments(segment_ids, num_segments), sorted)


def segment_min(data, segment_ids, num_segments=None, sorted=False):
    """Minima of `data` rows sharing a segment id.

    Args:
        data: Array `(N, ...)`.
        segment_ids: Integer ids `(N,)`.
        num_segments: The number of segments (default `max(segment_ids) + 1`, read eagerly).
        sorted: Whether `segment_ids` is sorted (a speed hint).

    Returns:
        `(num_segments, ...)` minima; an empty segment holds the dtype's
        largest value (inf for floats).

    Raises:
        ValueError: inside `jax.jit` without `num_segments`.
    """
    return _segment_min(data, segment_ids, _num_segments(segment_ids, num_segments), sorted)


def segment_prod(data, segment_ids, num_segments=None, sorted=False):
    """Products of `data` rows sharing a segment id.

    Args:
        data: Array `(N, ...)`.
        segment_ids: Integer ids `(N,)`.
        num_segments: The number of segments (default `max(segment_ids) + 1`, read eagerly).
        sorted: Whether `segment_ids` is sorted (a speed hint).

    Returns:
        `(num_segments, ...)` products; an empty segment holds 1.

    Raises:
        ValueError: inside `jax.jit` without `num_segments`.
    """
    return _segment_prod(data, segment_ids, _num_segments(segment_ids, num_segments), sorted)


@op
@compiled("num_segments", "sorted")
def _segment_min(data, segment_ids, num_segments, sorted):
    return jax.ops.segment_min(data, segment_ids, num_segments, indices_are_sorted=sorted)


@op
@compiled("num_segments", "sorted")
def _segment_prod(data, segment_ids, num_segments, sorted):
    return jax.ops.segment_prod(data, segment_ids, num_segments, indices_are_sorted=sorted)


@op
@compiled()
def cdist(x, y):
    """Euclidean distances between the rows of `x` and of `y`.

    Args:
        x: `(..., m, d)`.
        y: `(..., n, d)` (same batch axes).

    Returns:
        `(..., m, n)` distances.

    Raises:
        ValueError: rank below 2 or different last axes.
    """
    if jnp.ndim(x) < 2 or jnp.ndim(y) < 2:
        raise ValueError(f"cdist: `x` and `y` must have rank >= 2 (..., points, features), "
                         f"got shapes {jnp.shape(x)} and {jnp.shape(y)}.")
    if jnp.shape(x)[-1] != jnp.shape(y)[-1]:
        raise ValueError(f"cdist: `x` {jnp.shape(x)} and `y` {jnp.shape(y)} must have the "
                         "same number of features (last axis).")
    difference = jnp.expand_dims(x, -2) - jnp.expand_dims(y, -3)
    return jnp.sqrt(jnp.sum(difference * difference, axis=-1))


@op
@compiled("sequence_length", "sequence_stride")
def extract_sequences(x, sequence_length, sequence_stride):
    """Windows (frames) of the last axis, overlapping when the stride is
    shorter than the window.

    Args:
        x: Input array `(..., n)`.
        sequence_length: The window length (an int <= `n`).
        sequence_stride: The step between window starts (an int).

    Returns:
        `(..., (n - sequence_length) // sequence_stride + 1,
        sequence_length)`, `x`'s dtype; a trailing partial window is dropped.

    Raises:
        ValueError: the last axis is shorter than `sequence_length`.
    """
    count = (jnp.shape(x)[-1] - sequence_length) // sequence_stride + 1
    if count < 1:
        raise ValueError(f"extract_sequences: the last axis of x {jnp.shape(x)} is shorter "
                         f"than sequence_length={sequence_length}.")
    return x[..., _frame_indices(count, sequence_length, sequence_stride)]


@op
@compiled("num_segments", "sorted")
def _segment_sum(data, segment_ids, num_segments, sorted):
    return jax.ops.segment_sum(data, segment_ids, num_segments, indices_are_sorted=sorted)


@op
@compiled("num_segments", "sorted")
def _segment_max(data, segment_ids, num_segments, sorted):
    return jax.ops.segment_max(data, segment_ids, num_segments, indices_are_sorted=sorted)


# --------------------------------------------------------------------------
# Fourier transforms. Complex values travel as a (real, imag) pair of float
# tensors, as in Keras.
# --------------------------------------------------------------------------

def _complex(x, name):
    """The complex array a `(real, imag)` pair stands for."""
    if not isinstance(x, (tuple, list)) or len(x) != 2:
        raise ValueError(f"{name}: `x` must be a (real, imag) tuple of two float tensors, "
                         f"got {type(x).__name__}.")
    real, imag = as_array(x[0]), as_array(x[1])
    if real.shape != imag.shape:
        raise ValueError(f"{name}: the real part has shape {real.shape} and the imaginary "
                         f"part {imag.shape}; they must match.")
    if not (jnp.issubdtype(real.dtype, jnp.floating) and jnp.issubdtype(imag.dtype, jnp.floating)):
        raise ValueError(f"{name}: the real and imaginary parts must be float tensors, got "
                         f"{real.dtype} and {imag.dtype}; cast them with ops.cast(x, 'float32').")
    return lax.complex(real, imag)


def _pair(z):
    return jnp.real(z), jnp.imag(z)


@op
@compiled()
def fft(x):
    """Discrete Fourier transform along the last axis.

    Args:
        x: `(real, imag)`, two float tensors of the same shape.

    Returns:
        `(real, imag)` of the transform, same shape and dtype as the input.
    """
    return _pair(jnp.fft.fft(_complex(x, "fft")))


@op
@compiled()
def fft2(x):
    """2-D discrete Fourier transform over the last two axes.

    Args:
        x: `(real, imag)`, two float tensors of the same shape (rank >= 2).

    Returns:
        `(real, imag)` of the transform, same shape and dtype as the input.
    """
    return _pair(jnp.fft.fft2(_complex(x, "fft2")))


@op
@compiled()
def ifft2(x):
    """Inverse 2-D discrete Fourier transform over the last two axes.

    Args:
        x: `(real, imag)`, two float tensors of the same shape (rank >= 2).

    Returns:
        `(real, imag)` of the inverse transform, same shape and dtype.
    """
    return _pair(jnp.fft.ifft2(_complex(x, "ifft2")))


@op
@compiled("fft_length")
def rfft(x, fft_length=None):
    """Fourier transform of a real signal along the last axis, keeping the
    `fft_length // 2 + 1` non-negative frequencies.

    Args:
        x: a real tensor `(..., n)`.
        fft_length: the transform length; `x` is cut or zero-padded to it
            (default `n`).

    Returns:
        `(real, imag)`, each `(..., fft_length // 2 + 1)`.
    """
    return _pair(jnp.fft.rfft(as_array(x), n=fft_length, axis=-1))


@op
@compiled("fft_length")
def irfft(x, fft_length=None):
    """Inverse of `rfft`: a real signal from its non-negative frequencies.

    Args:
        x: `(real, imag)`, each `(..., bins)`.
        fft_length: the output length (default `2 * (bins - 1)`).

    Returns:
        A real tensor `(..., fft_length)`.
    """
    return jnp.fft.irfft(_complex(x, "irfft"), n=fft_length, axis=-1)


def _frame_indices(num_frames, frame_length, stride):
    return np.arange(num_frames)[:, None] * stride + np.arange(frame_length)[None, :]


def _stft_window(window, sequence_length, fft_length, dtype, name):
    """The analysis window, zero-padded (centred) to `fft_length`; all ones
    over `fft_length` when `window` is None (as Keras does)."""
    if window is None:
        return jnp.ones((fft_length,), dtype)
    if isinstance(window, str):
        if window not in ("hann", "hamming"):
            raise ValueError(f"{name}: window={window!r} is not supported; use 'hann', "
                             "'hamming', a 1-D array of length sequence_length, or None.")
        # Periodic (DFT-even) windows, as scipy.signal.get_window makes them.
        a0 = 0.5 if window == "hann" else 0.54
        n = np.arange(sequence_length)
        window = a0 - (1 - a0) * np.cos(2 * np.pi * n / sequence_length)
    window = jnp.asarray(window, dtype)
    if window.shape != (sequence_length,):
        raise ValueError(f"{name}: `window` must have shape ({sequence_length},) "
                         f"(sequence_length), got {window.shape}.")
    left = (fft_length - sequence_length) // 2
    return jnp.pad(window, (left, fft_length - sequence_length - left))


def _check_stft_lengths(sequence_length, sequence_stride, fft_length, name):
    if fft_length < sequence_length:
        raise ValueError(f"{name}: fft_length={fft_length} must be at least "
                         f"sequence_length={sequence_length}.")
    if sequence_stride < 1:
        raise ValueError(f"{name}: sequence_stride must be positive, got {sequence_stride}.")


@op
@compiled("sequence_length", "sequence_stride", "fft_length", "window", "center")
def _stft(x, window_array, window, sequence_length, sequence_stride, fft_length, center):
    if center:
        half = fft_length // 2
        x = jnp.pad(x, [(0, 0)] * (x.ndim - 1) + [(half, half)], mode="reflect")
    win = _stft_window(window_array if window == "array" else window, sequence_length,
                       fft_length, x.dtype, "stft")
    num_frames = (x.shape[-1] - fft_length) // sequence_stride + 1
    if num_frames < 1:
        raise ValueError(f"stft: the signal (length {x.shape[-1]} after centring) is "
                         f"shorter than fft_length={fft_length}.")
    frames = x[..., _frame_indices(num_frames, fft_length, sequence_stride)]
    # Keras keeps the window sum's sign (its scaling divides by |sum| / sum).
    total = jnp.sum(win)
    return _pair(jnp.fft.rfft(frames * win, n=fft_length) * (jnp.abs(total) / total))


def stft(x, sequence_length, sequence_stride, fft_length, window="hann", center=True):
    """Short-time Fourier transform along the last axis.

    Frames of `fft_length` samples every `sequence_stride` samples are
    multiplied by the window (`sequence_length` long, zero-padded in the
    middle of `fft_length`) and `rfft`-ed.

    Args:
        x: a float32/float64 signal `(..., samples)`.
        sequence_length: the window length.
        sequence_stride: the hop between frames.
        fft_length: the frame (and FFT) length, `>= sequence_length`.
        window: "hann", "hamming" (periodic windows), a 1-D array of length
            `sequence_length`, or None (no window over the whole frame).
        center: pad `fft_length // 2` samples (reflected) at both ends, so
            frame `t` is centred on sample `t * sequence_stride`.

    Returns:
        `(real, imag)`, each `(..., frames, fft_length // 2 + 1)`.

    Raises:
        TypeError: `x` is not float32 or float64.
        ValueError: bad lengths or window.
    """
    dtype = np.dtype(getattr(unwrap(x), "dtype", np.float32))
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"stft: `x` must be float32 or float64, got {dtype}; cast it first.")
    _check_stft_lengths(sequence_length, sequence_stride, fft_length, "stft")
    return _stft(x, *_window_args(window), sequence_length, sequence_stride, fft_length,
                 center=center)


def _window_args(window):
    """`(window_array, window)` for the compiled op: an array window is an
    array argument, a name (or None) a static one."""
    if window is None or isinstance(window, str):
        return None, window
    return window, "array"


@op
@compiled("window", "sequence_length", "sequence_stride", "fft_length", "length", "center")
def _istft(x, window_array, window, sequence_length, sequence_stride, fft_length, length,
           center):
    z = _complex(x, "istft")
    if z.ndim < 2:
        raise ValueError(f"istft: `x` must be (..., frames, bins), got shape {z.shape}.")
    dtype = jnp.real(z).dtype
    win = _stft_window(window_array if window == "array" else window, sequence_length,
                       fft_length, dtype, "istft")
    frames = jnp.fft.irfft(z, n=fft_length, axis=-1) * win
    num_frames = z.shape[-2]
    total = fft_length + sequence_stride * (num_frames - 1)
    index = _frame_indices(num_frames, fft_length, sequence_stride)
    signal = jnp.zeros(z.shape[:-2] + (total,), dtype).at[..., index].add(frames)
    norm = jnp.zeros((total,), dtype).at[index].add(jnp.broadcast_to(win * win, index.shape))
    signal = signal / jnp.where(norm > 1e-10, norm, 1.0)
    if window is None:  # Keras's scaling without a window
        signal = signal * (fft_length / sequence_stride)
    start = fft_length // 2 if center else 0
    if length is not None:
        return signal[..., start:start + length]
    return signal[..., start:total - start]


def istft(x, sequence_length, sequence_stride, fft_length, length=None, window="hann",
          center=True):
    """Inverse short-time Fourier transform: the signal whose `stft` is `x`
    (windowed overlap-add, normalised by the summed squared window).

    Args:
        x: `(real, imag)`, each `(..., frames, fft_length // 2 + 1)`.
        sequence_length: the window length.
        sequence_stride: the hop between frames.
        fft_length: the frame (and FFT) length.
        length: cut the output to this many samples (default: all).
        window: as in `stft`.
        center: whether `stft` padded the signal; the padding is removed.

    Returns:
        A float tensor `(..., samples)`.

    Raises:
        ValueError: bad lengths, window or input shape.
    """
    _check_stft_lengths(sequence_length, sequence_stride, fft_length, "istft")
    return _istft(x, *_window_args(window), sequence_length, sequence_stride, fft_length,
                  length, center=center)


@op
@compiled()
def view_as_complex(x: ArrayLike) -> Array:
    """Pairs of (real, imaginary) floats as complex numbers.

    Args:
        x: Floats `(..., 2)`.

    Returns:
        Complex numbers `(...)`.
    """
    x = as_array(x)
    if x.ndim == 0 or x.shape[-1] != 2:
        raise ValueError(f"view_as_complex: the last axis must have size 2 (real, imaginary); "
                         f"got shape {tuple(x.shape)}.")
    return lax.complex(x[..., 0], x[..., 1])


@op
@compiled()
def view_as_real(x: ArrayLike) -> Array:
    """Complex numbers as (real, imaginary) pairs.

    Args:
        x: Complex numbers `(...)`.

    Returns:
        Floats `(..., 2)`.
    """
    x = as_array(x)
    if not jnp.issubdtype(x.dtype, jnp.complexfloating):
        raise ValueError(f"view_as_real: `x` must be complex, got {x.dtype}.")
    return jnp.stack([x.real, x.imag], axis=-1)


__all__ = sorted(n for n in globals() if n not in _IMPORTED and not n.startswith("_"))
