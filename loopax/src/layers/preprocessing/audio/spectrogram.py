"""Audio spectrogram layers, as Keras 3's: `STFTSpectrogram` (a short-time
Fourier transform computed by a strided convolution with trainable STFT
kernels) and `MelSpectrogram` (a fixed mel-scale power spectrogram, in dB)."""

from __future__ import annotations

import math
import warnings

import jax.numpy as jnp
import numpy as np

from loopax.src import initializers
from loopax.src.api_export import export
from loopax.src.config import epsilon
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.ops.math import stft
from loopax.src.ops.nn import conv
from loopax.src.tensor import unwrap

STFT_MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")
_FLOAT_INPUTS = ("float16", "float32", "float64")


def _check_stft_arguments(mode, frame_length, frame_step, fft_length, scaling, padding):
    """Keras's argument checks for `STFTSpectrogram`, with errors naming the fix."""
    if frame_step is not None and not 1 <= frame_step <= frame_length:
        raise ValueError(f"STFTSpectrogram: `frame_step` must be an int in [1, frame_length="
                         f"{frame_length}], got frame_step={frame_step}.")
    if fft_length is not None and fft_length < frame_length:
        raise ValueError(f"STFTSpectrogram: `fft_length` must be >= frame_length={frame_length}"
                         f", got fft_length={fft_length}.")
    if fft_length is not None and fft_length & -fft_length != fft_length:
        warnings.warn(f"STFTSpectrogram: fft_length={fft_length} is not a power of two; "
                      "a power of two is recommended (as Keras warns).", stacklevel=3)
    if mode not in STFT_MODES:
        raise ValueError(f"STFTSpectrogram: `mode` must be one of {', '.join(STFT_MODES)}; "
                         f"got mode={mode!r}.")
    if scaling not in (None, "density", "spectrum"):
        raise ValueError(f"STFTSpectrogram: `scaling` must be None, 'density' or 'spectrum'; "
                         f"got scaling={scaling!r}.")
    if padding not in ("valid", "same"):
        raise ValueError(f"STFTSpectrogram: `padding` must be 'valid' or 'same'; "
                         f"got padding={padding!r}.")


@export("loopax.layers.STFTSpectrogram")
class STFTSpectrogram(Layer):
    """Spectrogram of each channel of a signal by a short-time Fourier
    transform, computed as a strided 1-D convolution with STFT kernels
    (`real_kernel`, `imag_kernel`, each `(frame_length, 1, fft_length // 2 + 1)`,
    trainable, initialized by `initializers.STFT`).

    `mode`: "real", "imag", "angle" (`arctan2(imag, real)`), "stft" (real then
    imaginary bins), "psd" (power, the inner bins doubled), "magnitude"
    (`sqrt(power)`) or "log" (its natural log); powers and magnitudes are
    floored at `epsilon()`.

    Input shape: `(batch, time, channels)` (channels_last) or
    `(batch, channels, time)` (channels_first), float16/32/64.
    Output shape: channels_last `(batch, frames, channels * bins)`, or with
    `expand_dims=True` `(batch, frames, bins, channels)`; channels_first
    `(batch, channels * bins, frames)`, or `(batch, channels, frames, bins)`.
    `bins` is `fft_length // 2 + 1` (twice that for mode "stft").

    Args:
        mode: The output, one of the modes above (default "log").
        frame_length: Samples per frame (the window length), default 256.
        frame_step: Samples between frames, default `frame_length // 2`.
        fft_length: FFT size (>= frame_length), default the next power of two.
        window: A `scipy.signal.windows` name, a 1-D array, or None.
        periodic: Use the periodic (DFT-even) form of a named window.
        scaling: "density" (default), "spectrum" or None: see `initializers.STFT`.
        padding: "valid" (default) or "same", as for a convolution.
        expand_dims: Keep channels and frequency bins on separate axes.
        data_format: "channels_last" or "channels_first" (default: the config's).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).
    """

    def __init__(self, mode="log", frame_length=256, frame_step=None, fft_length=None,
                 window="hann", periodic=False, scaling="density", padding="valid",
                 expand_dims=False, data_format=None, **kwargs):
        _check_stft_arguments(mode, frame_length, frame_step, fft_length, scaling, padding)
        if isinstance(window, str):
            initializers.STFT("real", window)  # an unknown window name fails now
        super().__init__(**kwargs)
        self.mode, self.frame_length, self.frame_step = mode, frame_length, frame_step
        self.fft_length, self.window, self.periodic = fft_length, window, periodic
        self.scaling, self.padding, self.expand_dims = scaling, padding, expand_dims
        self.data_format = standardize_data_format(data_format)
        self._frame_step = frame_step or frame_length // 2
        self._fft_length = fft_length or 2 ** int(math.ceil(math.log2(frame_length)))
        self.input_spec = InputSpec(ndim=3)

    def build(self, input_shape=None):
        shape = (self.frame_length, 1, self._fft_length // 2 + 1)
        if self.mode != "imag":
            self.real_kernel = self._stft_kernel(shape, "real")
        if self.mode != "real":
            self.imag_kernel = self._stft_kernel(shape, "imag")
        self.built = True

    def _stft_kernel(self, shape, side):
        return self.add_weight(shape, initializers.STFT(side, self.window, self.scaling,
                                                        self.periodic), name=f"{side}_kernel")

    def call(self, inputs):
        x = unwrap(inputs)
        if str(x.dtype) not in _FLOAT_INPUTS:
            raise TypeError(f"STFTSpectrogram {self.name!r}: the input must be float16, "
                            f"float32 or float64, got {x.dtype}; cast the signal first.")
        real = self._transform(x, self.real_kernel) if self.mode != "imag" else None
        imag = self._transform(x, self.imag_kernel) if self.mode != "real" else None
        if self.mode == "real":
            return self._arrange(real)
        if self.mode == "imag":
            return self._arrange(imag)
        if self.mode == "angle":
            return self._arrange(jnp.arctan2(imag, real))
        if self.mode == "stft":
            return self._arrange(jnp.concatenate([real, imag], axis=2))
        power = real * real + imag * imag
        if self.mode == "psd":
            inner = jnp.pad(power[:, :, 1:-1, :], [(0, 0), (0, 0), (1, 1), (0, 0)])
            return self._arrange(power + inner)
        magnitude = self._arrange(jnp.sqrt(jnp.maximum(power, epsilon())))
        if self.mode == "magnitude":
            return magnitude
        return jnp.log(jnp.maximum(magnitude, epsilon()))

    def _transform(self, x, kernel):
        """One side of the STFT of every channel: `(batch, channels, bins, frames)`."""
        if self.data_format == "channels_last":
            x = jnp.swapaxes(x, 1, 2)
        batch, channels, time = x.shape
        signals = x.reshape(batch * channels, time, 1)
        out = conv(signals, kernel.value.astype(x.dtype), strides=self._frame_step,
                   padding=self.padding)
        out = unwrap(out)
        return jnp.swapaxes(out, 1, 2).reshape(batch, channels, out.shape[2], out.shape[1])

    def _arrange(self, out):
        """`(batch, channels, bins, frames)` to the documented output layout."""
        batch, channels, bins, frames = out.shape
        if self.expand_dims:
            order = (0, 3, 2, 1) if self.data_format == "channels_last" else (0, 1, 3, 2)
            return jnp.transpose(out, order)
        out = out.reshape(batch, channels * bins, frames)
        return jnp.swapaxes(out, 1, 2) if self.data_format == "channels_last" else out

    def get_config(self):
        window = self.window if self.window is None or isinstance(self.window, str) \
            else np.asarray(self.window).tolist()
        return {**super().get_config(), "mode": self.mode, "frame_length": self.frame_length,
                "frame_step": self.frame_step, "fft_length": self.fft_length, "window": window,
                "periodic": self.periodic, "scaling": self.scaling, "padding": self.padding,
                "data_format": self.data_format, "expand_dims": self.expand_dims}


_MEL_BREAK_FREQUENCY_HERTZ = 700.0
_MEL_HIGH_FREQUENCY_Q = 1127.0


def hertz_to_mel(frequencies):
    """The HTK mel scale: `1127 ln(1 + f / 700)`."""
    return _MEL_HIGH_FREQUENCY_Q * np.log(1.0 + frequencies / _MEL_BREAK_FREQUENCY_HERTZ)


def linear_to_mel_weight_matrix(num_mel_bins, num_spectrogram_bins, sampling_rate,
                                lower_edge_hertz, upper_edge_hertz, dtype="float32"):
    """`(num_spectrogram_bins, num_mel_bins)` triangular filters (peak 1) mapping
    linear-frequency bins over `[0, sampling_rate / 2]` to mel bands over
    `[lower_edge_hertz, upper_edge_hertz]`; the DC bin maps to nothing.
    Computed in `dtype`, step by step as TensorFlow's and Keras's."""
    dtype = np.dtype(dtype)
    linear = np.linspace(dtype.type(0.0), dtype.type(sampling_rate) / dtype.type(2.0),
                         num_spectrogram_bins, dtype=dtype)[1:]
    bins_mel = hertz_to_mel(linear).astype(dtype)[:, None]
    edges = np.linspace(hertz_to_mel(dtype.type(lower_edge_hertz)),
                        hertz_to_mel(dtype.type(upper_edge_hertz)), num_mel_bins + 2,
                        dtype=dtype)
    lower, center, upper = edges[None, :-2], edges[None, 1:-1], edges[None, 2:]
    lower_slopes = (bins_mel - lower) / (center - lower)
    upper_slopes = (upper - bins_mel) / (upper - center)
    weights = np.maximum(dtype.type(0.0), np.minimum(lower_slopes, upper_slopes))
    return np.pad(weights, [(1, 0), (0, 0)]).astype(dtype)


@export("loopax.layers.MelSpectrogram")
class MelSpectrogram(Layer):
    """Mel-scale spectrogram of audio: `|STFT|^mag_exp` (centred frames,
    reflect-padded), mapped to `num_mel_bins` mel bands, then (with
    `power_to_db`) `10 log10(max(power, min_power) / max(|ref_power|, min_power))`
    clipped below at `top_db` under the maximum of the whole batch (as Keras).
    No weights; computed in float32 (float64 if that is the compute dtype).

    Input shape: `(samples,)` or `(batch, samples)`.
    Output shape: `(num_mel_bins, frames)` or `(batch, num_mel_bins, frames)`,
    with `frames = 1 + samples // sequence_stride`.

    Args:
        fft_length: FFT size, default 2048.
        sequence_stride: Samples between frames, default 512.
        sequence_length: Window length (<= fft_length), default fft_length.
        window: "hann" (default), "hamming" or None.
        sampling_rate: Samples per second, default 16000.
        num_mel_bins: Mel bands, default 128.
        min_freq: Lowest band edge in Hz, default 20.0.
        max_freq: Highest band edge in Hz, default `sampling_rate / 2`.
        power_to_db: Convert to decibels (default True).
        top_db: The dB range kept under the maximum, default 80.0.
        mag_exp: Exponent of the magnitude (2.0: power, the default).
        min_power: Floor of the power before the log, default 1e-10.
        ref_power: The power that maps to 0 dB, default 1.0.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).
    """

    def __init__(self, fft_length=2048, sequence_stride=512, sequence_length=None,
                 window="hann", sampling_rate=16000, num_mel_bins=128, min_freq=20.0,
                 max_freq=None, power_to_db=True, top_db=80.0, mag_exp=2.0, min_power=1e-10,
                 ref_power=1.0, **kwargs):
        sequence_length = sequence_length or fft_length
        if fft_length < sequence_length:
            raise ValueError(f"MelSpectrogram: `fft_length` ({fft_length}) must be >= "
                             f"`sequence_length` ({sequence_length}); raise fft_length or "
                             "shorten sequence_length.")
        if power_to_db and top_db is None:
            raise ValueError("MelSpectrogram: `top_db` is None with power_to_db=True; give "
                             "the dB range to keep (Keras's default is 80.0).")
        super().__init__(**kwargs)
        self.fft_length, self.sequence_stride = fft_length, sequence_stride
        self.sequence_length, self.window = sequence_length, window
        self.sampling_rate, self.num_mel_bins = sampling_rate, num_mel_bins
        self.min_freq, self.max_freq = min_freq, max_freq or int(sampling_rate / 2)
        self.power_to_db, self.top_db, self.mag_exp = power_to_db, top_db, mag_exp
        self.min_power, self.ref_power = min_power, ref_power
        self.built = True

    def call(self, inputs):
        dtype = "float64" if self.compute_dtype == "float64" else "float32"
        signal = jnp.asarray(unwrap(inputs)).astype(dtype)
        real, imag = stft(signal, self.sequence_length, self.sequence_stride,
                          self.fft_length, window=self.window, center=True)
        real, imag = unwrap(real), unwrap(imag)
        spectrum = jnp.power(jnp.sqrt(real * real + imag * imag), self.mag_exp)
        matrix = linear_to_mel_weight_matrix(self.num_mel_bins, spectrum.shape[-1],
                                             self.sampling_rate, self.min_freq, self.max_freq)
        mel = jnp.tensordot(spectrum, jnp.asarray(matrix, dtype), axes=1)
        if self.power_to_db:
            mel = self._decibels(mel)
        return jnp.swapaxes(mel, -1, -2).astype(self.compute_dtype)

    def _decibels(self, power):
        db = 10.0 * jnp.log10(jnp.maximum(power, self.min_power))
        db = db - 10.0 * jnp.log10(jnp.maximum(abs(self.ref_power), self.min_power))
        return jnp.maximum(db, jnp.max(db) - self.top_db)

    def get_config(self):
        return {**super().get_config(), "fft_length": self.fft_length,
                "sequence_stride": self.sequence_stride,
                "sequence_length": self.sequence_length, "window": self.window,
                "sampling_rate": self.sampling_rate, "num_mel_bins": self.num_mel_bins,
                "min_freq": self.min_freq, "max_freq": self.max_freq,
                "power_to_db": self.power_to_db, "top_db": self.top_db,
                "mag_exp": self.mag_exp, "min_power": self.min_power,
                "ref_power": self.ref_power}
