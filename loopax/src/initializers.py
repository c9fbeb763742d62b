"""Weight initializers: objects called as `init(shape, dtype=None) -> array`.

Random initializers take `seed=`: an int (every call returns the same
values), a `loopax.random.SeedGenerator`, or None (draws from loopax's
global generator, so `loopax.utils.set_random_seed(n)` makes them
reproducible). Names follow Keras: `get("glorot_uniform")`,
`get("GlorotUniform")`, `get({"class_name": ..., "config": ...})`.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import dtypes, random, state
from loopax.src.api_export import export
from loopax.src.utils.registry import Registry, name_table


@export("loopax.initializers.compute_fans")
def compute_fans(shape, input_axes=None, output_axes=None):
    """(fan_in, fan_out) of a weight shape, as Keras computes them.

    Dense kernels `(in, out)`; convolution kernels `(*window, in, out)`
    count the receptive field: fan_in = prod(window) · in. Given both
    `input_axes` and `output_axes` (Keras 3.15's EinsumDense kernels), the
    fans are the products of those axes' sizes.

    Args:
        shape: The weight's shape (a rank-0 shape gives `(1, 1)`, rank 1 `(n, n)`).
        input_axes: The axes that count into fan_in, or None.
        output_axes: The axes that count into fan_out, or None.

    Returns:
        `(fan_in, fan_out)`, two ints.
    """
    shape = tuple(shape)
    if input_axes is not None and output_axes is not None:
        return (math.prod(shape[a] for a in input_axes),
                math.prod(shape[a] for a in output_axes))
    if len(shape) == 0:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive_field = math.prod(shape[:-2])
    return shape[-2] * receptive_field, shape[-1] * receptive_field


def _dtype(dtype):
    return dtypes.standardize(dtype) if dtype is not None else dtypes.floatx()


# Weights up to `_SMALL_SIZE` entries are all drawn at that size, larger ones up to
# `_BUCKETED_SIZE` at the next power of two; above `_SMALL_SIZE` only where the
# values are those of a draw at the weight's own shape (`random.prefix_stable_draws`).
_BUCKETED_SIZE = 1 << 22
_SMALL_SIZE = 1 << 16


def _sample(draw, shape):
    """`draw(shape)`, the values of a weight of `shape`.

    Weights are drawn flat at a few sizes and cut, so that weights of different
    shapes share a few compiled samplers instead of compiling one per shape
    (0.15-0.3 s each on CPU: most of a small model's first build, and a DenseNet121
    has 18 kernel sizes above 2**16). Every weight up to `_SMALL_SIZE` entries
    shares one sampler (a draw of 2**16 takes under a millisecond); larger ones up
    to `_BUCKETED_SIZE` (16 MiB in float32: all of a ResNet's or DenseNet's) are
    drawn at the next power of two. The values are the same: JAX's (partitionable)
    threefry gives entry i the same bits at any size; with another PRNG only
    weights up to `_SMALL_SIZE` are bucketed. Larger weights are drawn at exactly
    `shape`, so their peak memory is the weight itself, as in Keras."""
    shape = tuple(shape)
    size = math.prod(shape)
    if size > (_BUCKETED_SIZE if random.prefix_stable_draws() else _SMALL_SIZE):
        return draw(shape)
    bucket = max(1 << max(size - 1, 0).bit_length(), _SMALL_SIZE)
    values = draw((bucket,))
    if state.is_tracer(values):
        return values[:size].reshape(shape)
    # Eagerly, cut on the host: a device slice would compile once per shape.
    return jax.device_put(np.asarray(values)[:size].reshape(shape))


def _filled(shape, value, dtype):
    """An array of `shape` filled with `value`. Eagerly, small ones are made on
    the host: `jnp.full` would compile one program per shape."""
    shape, dtype = tuple(shape), _dtype(dtype)
    if math.prod(shape) > _BUCKETED_SIZE or state.tracing():
        return jnp.full(shape, value, dtype)
    return jax.device_put(np.full(shape, value, jnp.dtype(dtype)))


@export("loopax.initializers.Initializer")
class Initializer:
    """Base class: subclasses implement `__call__(shape, dtype=None)`."""

    def __call__(self, shape, dtype=None):
        raise NotImplementedError

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def clone(self):
        return type(self).from_config(self.get_config())

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"


@export("loopax.initializers.Zeros", "loopax.initializers.zeros")
class Zeros(Initializer):
    """All zeros: `Zeros()(shape, dtype=None)` -> an array of `shape` in `dtype`
    (default `loopax.config.floatx()`)."""

    def __call__(self, shape, dtype=None):
        return _filled(shape, 0, dtype)


@export("loopax.initializers.Ones", "loopax.initializers.ones")
class Ones(Initializer):
    """All ones: `Ones()(shape, dtype=None)` -> an array of `shape` in `dtype`
    (default `loopax.config.floatx()`)."""

    def __call__(self, shape, dtype=None):
        return _filled(shape, 1, dtype)


@export("loopax.initializers.Constant", "loopax.initializers.constant")
class Constant(Initializer):
    """Every entry equals `value`.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        value: The fill value, a number (default 0.0).
    """

    def __init__(self, value=0.0):
        self.value = value

    def __call__(self, shape, dtype=None):
        return _filled(shape, self.value, dtype)

    def get_config(self):
        return {"value": self.value}


class RandomInitializer(Initializer):
    def __init__(self, seed=None):
        if seed is not None and not isinstance(seed, (int, np.integer, random.SeedGenerator)):
            raise TypeError(
                f"{type(self).__name__}(seed=...) must be an int, a "
                f"loopax.random.SeedGenerator or None; got {seed!r}.")
        self.seed = seed

    def get_config(self):
        return {"seed": self.seed if not isinstance(self.seed, random.SeedGenerator) else None}


@export("loopax.initializers.RandomNormal", "loopax.initializers.random_normal")
class RandomNormal(RandomInitializer):
    """N(mean, stddev²).

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        mean: The mean (default 0.0).
        stddev: The standard deviation (default 0.05).
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        super().__init__(seed)
        self.mean, self.stddev = mean, stddev

    def __call__(self, shape, dtype=None):
        return _sample(lambda s: random.normal(s, self.mean, self.stddev, _dtype(dtype),
                                               seed=self.seed), shape)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, **super().get_config()}


@export("loopax.initializers.TruncatedNormal", "loopax.initializers.truncated_normal")
class TruncatedNormal(RandomNormal):
    """N(mean, stddev²) redrawn beyond two standard deviations.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        mean: The mean (default 0.0).
        stddev: The standard deviation before truncation (default 0.05).
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __call__(self, shape, dtype=None):
        return _sample(lambda s: random.truncated_normal(s, self.mean, self.stddev,
                                                         _dtype(dtype), seed=self.seed), shape)


@export("loopax.initializers.RandomUniform", "loopax.initializers.random_uniform")
class RandomUniform(RandomInitializer):
    """U[minval, maxval).

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        minval: The lower bound (default -0.05).
        maxval: The upper bound, excluded (default 0.05).
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        super().__init__(seed)
        self.minval, self.maxval = minval, maxval

    def __call__(self, shape, dtype=None):
        return _sample(lambda s: random.uniform(s, self.minval, self.maxval, _dtype(dtype),
                                                seed=self.seed), shape)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, **super().get_config()}


@export("loopax.initializers.VarianceScaling", "loopax.initializers.variance_scaling")
class VarianceScaling(RandomInitializer):
    """Samples with variance `scale / n`, n the fan chosen by `mode`.

    Args:
        scale: positive float.
        mode: "fan_in", "fan_out" or "fan_avg".
        distribution: "truncated_normal" (stddev corrected for the cut),
            "untruncated_normal" or "uniform" (limit sqrt(3 · scale / n)).
    """

    _MODES = ("fan_in", "fan_out", "fan_avg")
    _DISTRIBUTIONS = ("truncated_normal", "untruncated_normal", "uniform")

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None,
                 input_axes=None, output_axes=None):
        super().__init__(seed)
        self.input_axes, self.output_axes = input_axes, output_axes
        if scale <= 0:
            raise ValueError(f"VarianceScaling: `scale` must be positive, got {scale}.")
        if mode not in self._MODES:
            raise ValueError(f"VarianceScaling: `mode` must be one of {self._MODES}, got {mode!r}.")
        distribution = distribution.lower()
        if distribution == "normal":
            distribution = "truncated_normal"
        if distribution not in self._DISTRIBUTIONS:
            raise ValueError(f"VarianceScaling: `distribution` must be one of "
                             f"{self._DISTRIBUTIONS}, got {distribution!r}.")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def __call__(self, shape, dtype=None):
        fan_in, fan_out = compute_fans(shape, self.input_axes, self.output_axes)
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, fan)
        dtype = _dtype(dtype)
        if self.distribution == "truncated_normal":
            # The stddev of a unit normal cut at ±2 is 0.8796...; undo it.
            stddev = math.sqrt(variance) / 0.87962566103423978
            return _sample(lambda s: random.truncated_normal(s, 0.0, stddev, dtype,
                                                             seed=self.seed), shape)
        if self.distribution == "untruncated_normal":
            return _sample(lambda s: random.normal(s, 0.0, math.sqrt(variance), dtype,
                                                   seed=self.seed), shape)
        limit = math.sqrt(3.0 * variance)
        return _sample(lambda s: random.uniform(s, -limit, limit, dtype, seed=self.seed), shape)

    def _axes_config(self):
        if self.input_axes is None and self.output_axes is None:
            return {}
        return {"input_axes": self.input_axes, "output_axes": self.output_axes}

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                **super().get_config(), **self._axes_config()}


class _VarianceScalingPreset(VarianceScaling):
    """A VarianceScaling with fixed settings; only `seed` (and Keras's
    `input_axes`/`output_axes`) are configurable."""

    def get_config(self):
        return {**RandomInitializer.get_config(self), **self._axes_config()}


@export("loopax.initializers.GlorotUniform", "loopax.initializers.glorot_uniform")
class GlorotUniform(_VarianceScalingPreset):
    """U[-l, l], l = sqrt(6 / (fan_in + fan_out)).

    A `VarianceScaling` preset; fans as `compute_fans`. Keras's default kernel initializer.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).
        input_axes: The kernel axes that make up fan_in (Keras 3.15's EinsumDense),
            or None for the usual `(*window, in, out)` layout.
        output_axes: The kernel axes that make up fan_out, or None.

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_avg", "uniform", seed, input_axes, output_axes)


@export("loopax.initializers.GlorotNormal", "loopax.initializers.glorot_normal")
class GlorotNormal(_VarianceScalingPreset):
    """Truncated normal, stddev sqrt(2 / (fan_in + fan_out)).

    A `VarianceScaling` preset; fans as `compute_fans`.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).
        input_axes: The kernel axes that make up fan_in (Keras 3.15's EinsumDense),
            or None for the usual `(*window, in, out)` layout.
        output_axes: The kernel axes that make up fan_out, or None.

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed, input_axes, output_axes)


@export("loopax.initializers.HeNormal", "loopax.initializers.he_normal")
class HeNormal(_VarianceScalingPreset):
    """Truncated normal, stddev sqrt(2 / fan_in).

    A `VarianceScaling` preset; fans as `compute_fans`. Suits ReLU layers.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).
        input_axes: The kernel axes that make up fan_in (Keras 3.15's EinsumDense),
            or None for the usual `(*window, in, out)` layout.
        output_axes: The kernel axes that make up fan_out, or None.

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed, input_axes, output_axes)


@export("loopax.initializers.HeUniform", "loopax.initializers.he_uniform")
class HeUniform(_VarianceScalingPreset):
    """U[-l, l], l = sqrt(6 / fan_in).

    A `VarianceScaling` preset; fans as `compute_fans`. Suits ReLU layers.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).
        input_axes: The kernel axes that make up fan_in (Keras 3.15's EinsumDense),
            or None for the usual `(*window, in, out)` layout.
        output_axes: The kernel axes that make up fan_out, or None.

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(2.0, "fan_in", "uniform", seed, input_axes, output_axes)


@export("loopax.initializers.LecunNormal", "loopax.initializers.lecun_normal")
class LecunNormal(_VarianceScalingPreset):
    """Truncated normal, stddev sqrt(1 / fan_in).

    A `VarianceScaling` preset; fans as `compute_fans`. Suits SELU layers.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).
        input_axes: The kernel axes that make up fan_in (Keras 3.15's EinsumDense),
            or None for the usual `(*window, in, out)` layout.
        output_axes: The kernel axes that make up fan_out, or None.

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_in", "truncated_normal", seed, input_axes, output_axes)


@export("loopax.initializers.LecunUniform", "loopax.initializers.lecun_uniform")
class LecunUniform(_VarianceScalingPreset):
    """U[-l, l], l = sqrt(3 / fan_in).

    A `VarianceScaling` preset; fans as `compute_fans`.

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).
        input_axes: The kernel axes that make up fan_in (Keras 3.15's EinsumDense),
            or None for the usual `(*window, in, out)` layout.
        output_axes: The kernel axes that make up fan_out, or None.

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
    """

    def __init__(self, seed=None, input_axes=None, output_axes=None):
        super().__init__(1.0, "fan_in", "uniform", seed, input_axes, output_axes)


@export(
    "loopax.initializers.Orthogonal",
    "loopax.initializers.OrthogonalInitializer",
    "loopax.initializers.orthogonal",
)
class Orthogonal(RandomInitializer):
    """A (semi-)orthogonal matrix times `gain`; shapes of rank > 2 are
    flattened to (prod(shape[:-1]), shape[-1]).

    The default `recurrent_initializer` of the RNN cells. Called as
    `init(shape, dtype=None)` (rank >= 2); the matrix is computed in float32 and
    cast to `dtype`.

    Args:
        gain: The scale factor (default 1.0).
        seed: An int (the same values on every call), a
            `loopax.random.SeedGenerator`, or None (loopax's global generator).

    Raises:
        TypeError: `seed` is not an int, a SeedGenerator or None.
        ValueError: (when called) `shape` has rank < 2.
    """

    def __init__(self, gain=1.0, seed=None):
        super().__init__(seed)
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) < 2:
            raise ValueError(f"Orthogonal initializer needs a shape of rank >= 2, got {shape}.")
        rows, cols = math.prod(shape[:-1]), shape[-1]
        a = _sample(lambda s: random.normal(s, dtype="float32", seed=self.seed),
                    (max(rows, cols), min(rows, cols)))
        return _orthogonalize(a, self.gain, transpose=rows < cols, shape=shape,
                              dtype=_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain, **super().get_config()}


@functools.partial(jax.jit, static_argnames=("transpose", "shape", "dtype"))
def _orthogonalize(a, gain, transpose, shape, dtype):
    """`gain` times the Q of `a`'s QR decomposition with the signs of R's diagonal
    (which makes the distribution uniform), as `shape`. One compiled program:
    eagerly, the dozen ops it takes would compile one by one."""
    q, r = jnp.linalg.qr(a)
    q = q * jnp.sign(jnp.diagonal(r))
    if transpose:
        q = q.T
    return (gain * q).reshape(shape).astype(dtype)


@export(
    "loopax.initializers.Identity",
    "loopax.initializers.IdentityInitializer",
    "loopax.initializers.identity",
)
class Identity(Initializer):
    """`gain` times the identity matrix (2-D shapes only; a non-square one has ones
    on its main diagonal).

    Called as `init(shape, dtype=None)`: returns an array of `shape` in `dtype`
    (default `loopax.config.floatx()`).

    Args:
        gain: The scale factor (default 1.0).

    Raises:
        ValueError: (when called) `shape` is not 2-D.
    """

    def __init__(self, gain=1.0):
        self.gain = gain

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) != 2:
            raise ValueError(f"Identity initializer needs a 2-D shape, got {shape}.")
        return self.gain * jnp.eye(*shape, dtype=_dtype(dtype))

    def get_config(self):
        return {"gain": self.gain}


IdentityInitializer = Identity


@export(
    "loopax.initializers.STFT",
    "loopax.initializers.STFTInitializer",
    "loopax.initializers.stft",
)
class STFT(Initializer):
    """Conv kernels whose convolution computes one side (real or imaginary) of a
    short-time Fourier transform, for spectrogram layers.

    Called as `init((frame_length, 1, bins), dtype=None)`: entry `[t, 0, f]` is
    `cos` (side "real") or `sin` (side "imag") of `-2 pi t f / fft_length`,
    where `fft_length = 2 * (bins - 1)`, times the window divided by its
    scaling.

    Args:
        side: `"real"` or `"imag"`.
        window: A `scipy.signal.windows` name (`"hann"`, `"hamming"`, ...), a 1-D
            array of `frame_length` values, or None (no window).
        scaling: `"density"` (divide by the window's L2 norm), `"spectrum"` (its
            L1 norm) or None.
        periodic: Make the named window periodic (DFT-even) instead of symmetric.

    Raises:
        ValueError: an unknown `side`, `window` name or `scaling`; (when called) a
            shape that is not `(frame_length, channels, bins)` or a window of
            another length.
    """

    def __init__(self, side="real", window="hann", scaling="density", periodic=False):
        if side not in ("real", "imag"):
            raise ValueError(f"STFT(side={side!r}): use 'real' or 'imag'.")
        if isinstance(window, str):
            _named_window(window, 1, periodic)  # fails now on an unknown name
        if scaling not in (None, "density", "spectrum"):
            raise ValueError(f"STFT(scaling={scaling!r}): use 'density', 'spectrum' or None.")
        self.side, self.window, self.scaling, self.periodic = side, window, scaling, periodic

    def __call__(self, shape, dtype=None):
        shape = tuple(shape)
        if len(shape) != 3:
            raise ValueError(f"STFT initializer needs a shape (frame_length, channels, bins), "
                             f"got {shape}.")
        frame_length, _, bins = shape
        time = np.arange(frame_length)[:, None, None]
        freq = np.arange(bins)[None, None, :] / (2 * (bins - 1))
        angle = -2 * np.pi * time * freq
        kernel = np.cos(angle) if self.side == "real" else np.sin(angle)
        if self.window is not None:
            kernel = kernel * self._scaled_window(frame_length)[:, None, None]
        return jnp.asarray(np.broadcast_to(kernel, shape), _dtype(dtype))

    def _scaled_window(self, frame_length):
        window = (_named_window(self.window, frame_length, self.periodic)
                  if isinstance(self.window, str) else np.asarray(self.window, "float64"))
        if window.shape != (frame_length,):
            raise ValueError(f"STFT initializer: the window has shape {window.shape}; it must "
                             f"be ({frame_length},), the kernel's frame_length.")
        if self.scaling == "density":
            return window / np.sqrt(np.sum(window ** 2))
        if self.scaling == "spectrum":
            return window / np.sum(np.abs(window))
        return window

    def get_config(self):
        window = self.window if self.window is None or isinstance(self.window, str) \
            else np.asarray(self.window).tolist()
        return {"side": self.side, "window": window, "periodic": self.periodic,
                "scaling": self.scaling}


def _named_window(name, length, periodic):
    """`scipy.signal.get_window(name, length)`: symmetric unless `periodic`."""
    import scipy.signal  # jax depends on SciPy; imported only when a window is named

    try:
        return scipy.signal.get_window(name, length, fftbins=periodic)
    except ValueError as err:
        raise ValueError(f"STFT(window={name!r}): not a scipy.signal.windows name ({err}).") \
            from None


STFTInitializer, OrthogonalInitializer = STFT, Orthogonal

_CLASSES = [Zeros, Ones, Constant, RandomNormal, RandomUniform, TruncatedNormal,
            VarianceScaling, GlorotUniform, GlorotNormal, HeNormal, HeUniform,
            LecunNormal, LecunUniform, Orthogonal, Identity, STFT]
_REGISTRY = Registry(
    "initializer",
    name_table(_CLASSES, {"zero": Zeros, "one": Ones, "normal": RandomNormal,
                          "uniform": RandomUniform, "IdentityInitializer": Identity,
                          "OrthogonalInitializer": Orthogonal, "STFTInitializer": STFT}),
    base=Initializer, unlisted=[cls.__name__ for cls in _CLASSES]
    + ["IdentityInitializer", "OrthogonalInitializer", "STFTInitializer"],
    accepts="an Initializer or a callable")


@export("loopax.initializers.serialize")
def serialize(initializer):
    """`{"class_name": ..., "config": ...}` for a loopax initializer; other
    callables come back unchanged.

    Args:
        initializer: An Initializer, or any callable.

    Returns:
        A JSON-serializable dict that `deserialize` turns back into an equal
        initializer (or `initializer` itself when it is not an Initializer).
    """
    return _REGISTRY.serialize(initializer)


@export("loopax.initializers.deserialize")
def deserialize(config, custom_objects=None):
    """The initializer a `serialize()` dict (or a name) describes.

    Args:
        config: A dict with `class_name` (and `config`), or a name.
        custom_objects: `{name: class}` for custom initializers.

    Returns:
        A new initializer.

    Raises:
        ValueError: the dict has no `class_name`, or it names an unknown class.
    """
    return _REGISTRY.deserialize(config, custom_objects)


@export("loopax.initializers.get")
def get(identifier):
    """An initializer from a name, a config dict, an Initializer or a callable.

    Args:
        identifier: None, a name (`"glorot_uniform"`, `"GlorotUniform"`), a config
            dict, an Initializer (returned as is), a class, or a callable
            `f(shape, dtype=None)`.

    Returns:
        The initializer (None for None); a name or a class gives a default instance.

    Raises:
        ValueError: an unknown name, or something that is neither of these.
    """
    return _REGISTRY.get(identifier)


# Keras' lower-case function-style aliases.
zeros, ones, constant = Zeros, Ones, Constant
random_normal, random_uniform, truncated_normal = RandomNormal, RandomUniform, TruncatedNormal
variance_scaling, orthogonal, identity, stft = VarianceScaling, Orthogonal, Identity, STFT
glorot_uniform, glorot_normal = GlorotUniform, GlorotNormal
he_normal, he_uniform, lecun_normal, lecun_uniform = HeNormal, HeUniform, LecunNormal, LecunUniform


state.register_initializer_lookup(get)   # for `Variable("zeros", shape=...)`
