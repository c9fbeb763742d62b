"""Categorical preprocessing: CategoryEncoding (indices -> one-hot,
multi-hot, counts) and Discretization (numbers -> bin indices, with
`adapt` from approximate quantiles), plus the encoding the lookup layers
share (`encode_categorical`).

Both run on NumPy or JAX arrays, inside a model or in the data pipeline.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.tensor import unwrap

OUTPUT_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


def check_output_mode(mode, allowed, owner):
    if mode not in allowed:
        raise ValueError(f"{owner}: `output_mode` must be one of {allowed}, got {mode!r}.")
    return mode


def is_concrete(x):
    return not isinstance(x, jax.core.Tracer)


def encode_categorical(indices, output_mode, depth, dtype="float32", count_weights=None,
                       idf_weights=None):
    """Integer `indices` in `[0, depth)` as Keras encodes them.

    "one_hot": a new last axis of size `depth` (a trailing axis of size 1 is
    replaced); "multi_hot"/"count"/"tf_idf": axis 1 is reduced (a rank-1
    input is one sample), `(batch, n, *rest)` -> `(batch, *rest, depth)`,
    as Keras; "int": unchanged.
    """
    if output_mode == "int":
        return indices
    indices = jnp.asarray(indices)
    if output_mode == "one_hot":
        if indices.ndim > 1 and indices.shape[-1] == 1:
            indices = indices[..., 0]
        return jax.nn.one_hot(indices, depth, dtype=dtype)
    squeeze = indices.ndim == 1
    if squeeze:
        indices = indices[None]
    if count_weights is not None:
        count_weights = jnp.moveaxis(jnp.asarray(count_weights, dtype).reshape(indices.shape),
                                     1, -1)
    indices = jnp.moveaxis(indices, 1, -1)
    one_hot = jax.nn.one_hot(indices, depth, dtype=dtype)  # (..., n, depth)
    if output_mode == "multi_hot":
        out = jnp.max(one_hot, axis=-2)
    else:
        if count_weights is not None:
            one_hot = one_hot * count_weights[..., None]
        out = jnp.sum(one_hot, axis=-2)
        if output_mode == "tf_idf":
            out = out * jnp.asarray(idf_weights, dtype)
    return out[0] if squeeze else out


@export("loopax.layers.CategoryEncoding")
class CategoryEncoding(Layer):
    """Encodes integer indices in `[0, num_tokens)`: `output_mode` "one_hot",
    "multi_hot" (default) or "count" (optionally weighted by
    `count_weights` in `call`). An index out of range is an error on
    concrete inputs (Keras drops it silently).

    Shapes: "one_hot" adds a last axis of size `num_tokens` (a trailing axis of size 1 is
    replaced); "multi_hot"/"count" reduce axis 1, `(batch, n)` -> `(batch, num_tokens)` (a
    rank-1 input is one sample). Encoded outputs are in the layer's dtype
    (float32 by default).

    Args:
        num_tokens: The number of categories, a positive int (required).
        output_mode: `"one_hot"`, `"multi_hot"` (the default) or `"count"`.
        sparse: Must be False (JAX has no sparse tensors here).
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `num_tokens` is not a positive int, an unknown `output_mode`,
            `sparse=True`, or (when called) an index out of range or `count_weights`
            without `output_mode="count"`.
    """

    def __init__(self, num_tokens=None, output_mode="multi_hot", sparse=False, **kwargs):
        super().__init__(**kwargs)
        if not isinstance(num_tokens, (int, np.integer)) or num_tokens < 1:
            raise ValueError(f"CategoryEncoding: `num_tokens` must be a positive int, "
                             f"got {num_tokens!r}.")
        self.output_mode = check_output_mode(output_mode, ("one_hot", "multi_hot", "count"),
                                             "CategoryEncoding")
        if sparse:
            raise ValueError("CategoryEncoding: `sparse=True` is not supported (JAX has no "
                             "sparse tensors here); use sparse=False.")
        self.num_tokens, self.sparse = int(num_tokens), sparse
        self.built = True

    def call(self, inputs, count_weights=None):
        indices = unwrap(inputs)
        if count_weights is not None and self.output_mode != "count":
            raise ValueError("CategoryEncoding: `count_weights` is only used with "
                             f"output_mode='count', not {self.output_mode!r}.")
        if is_concrete(indices):
            values = np.asarray(indices)
            if values.size and (values.min() < 0 or values.max() >= self.num_tokens):
                raise ValueError(
                    f"CategoryEncoding {self.name!r}: indices must be in [0, num_tokens="
                    f"{self.num_tokens}); got values from {values.min()} to {values.max()}.")
        return encode_categorical(jnp.asarray(indices).astype("int32"), self.output_mode,
                                  self.num_tokens, self.dtype, count_weights=count_weights)

    def get_config(self):
        return {**super().get_config(), "num_tokens": self.num_tokens,
                "output_mode": self.output_mode}


def _summarize(values, epsilon):
    """A 2-row summary (points, weights) of `values`: about `1/epsilon`
    evenly spaced order statistics, each standing for the values before it."""
    values = np.sort(np.reshape(values, [-1]))
    step = max(values.size * epsilon, 1)
    points = values[int(step - 1)::int(step)]
    return np.stack([points, np.full_like(points, step)])


def _compress(summary, epsilon):
    """Re-samples a summary at cumulative-weight fractions `epsilon, 2·epsilon, ... 1`."""
    if summary.shape[1] * epsilon < 1:
        return summary
    fractions = epsilon + np.arange(0.0, 1.0, epsilon)
    cumulative = summary[1].cumsum()
    position = cumulative / cumulative[-1]
    points = np.interp(fractions, position, summary[0])
    cumulative = np.interp(fractions, position, cumulative)
    weights = np.diff(cumulative, prepend=0.0)
    return np.stack([points, weights]).astype("float32")


@export("loopax.layers.Discretization")
class Discretization(Layer):
    """Buckets numbers: output `i` for `bin_boundaries[i-1] <= x <
    bin_boundaries[i]` (0 below the first boundary, `len(bin_boundaries)`
    above the last), or encoded with `output_mode` "one_hot", "multi_hot",
    "count". Give `bin_boundaries`, or `num_bins` and call `adapt(data)`
    (approximate quantiles with relative error about `epsilon`, as Keras).

    With `output_mode="int"` the output has the input's shape, dtype int32.
    Otherwise, with `depth = len(bin_boundaries) + 1`: "one_hot" adds a last axis of
    size `depth` (a trailing axis of size 1 is replaced); "multi_hot"/"count" reduce
    axis 1, `(batch, n)` -> `(batch, depth)` (a rank-1 input is one sample), in the
    layer's dtype (float32 by default).

    Args:
        bin_boundaries: The sorted boundaries, or None to `adapt` with `num_bins`.
        num_bins: The number of bins `adapt` learns (give this or `bin_boundaries`).
        epsilon: The quantile approximation's error (default 0.01).
        output_mode: `"int"` (the default), `"one_hot"`, `"multi_hot"` or `"count"`.
        sparse: Must be False.
        dtype: The layer's dtype (of encoded outputs and cast integer inputs).
        name: The layer's name.

    Raises:
        ValueError: not exactly one of `bin_boundaries`/`num_bins`, a bad `num_bins`
            or `output_mode`, `sparse=True`, or (when called) no boundaries yet.
    """

    def __init__(self, bin_boundaries=None, num_bins=None, epsilon=0.01, output_mode="int",
                 sparse=False, dtype=None, name=None):
        self.output_mode = check_output_mode(
            output_mode, ("int", "one_hot", "multi_hot", "count"), "Discretization")
        super().__init__(dtype=dtype, name=name)
        if sparse:
            raise ValueError("Discretization: `sparse=True` is not supported; use "
                             "sparse=False.")
        if (bin_boundaries is None) == (num_bins is None):
            raise ValueError("Discretization: pass exactly one of `bin_boundaries` and "
                             f"`num_bins`; got bin_boundaries={bin_boundaries!r}, "
                             f"num_bins={num_bins!r}.")
        if num_bins is not None and (not isinstance(num_bins, int) or num_bins < 1):
            raise ValueError(f"Discretization: `num_bins` must be a positive int, "
                             f"got {num_bins!r}.")
        self.bin_boundaries = None if bin_boundaries is None else list(bin_boundaries)
        self.num_bins, self.epsilon, self.sparse = num_bins, epsilon, sparse
        self.built = True

    def adapt(self, data, steps=None):
        """Sets `bin_boundaries` to `num_bins` quantiles of `data` (an array or an
        iterable of batches)."""
        if self.num_bins is None:
            raise ValueError("Discretization: adapt() needs `num_bins`; this layer was "
                             "given `bin_boundaries`.")
        batches = [data] if isinstance(data, (np.ndarray, jax.Array)) or np.isscalar(data) \
            else data
        summary = np.zeros((2, 0), "float32")
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            new = _summarize(np.asarray(unwrap(batch), "float32"), self.epsilon)
            merged = np.concatenate([summary, new], axis=1)
            summary = _compress(merged[:, np.argsort(merged[0])], self.epsilon)
        self.bin_boundaries = _compress(summary, 1.0 / self.num_bins)[0, :-1].tolist()

    def call(self, inputs):
        if self.bin_boundaries is None:
            raise ValueError(f"Discretization {self.name!r}: call adapt(data) or pass "
                             "`bin_boundaries` before using the layer.")
        x = jnp.asarray(unwrap(inputs))
        if not jnp.issubdtype(x.dtype, jnp.floating):
            x = x.astype(self.dtype)
        indices = jnp.digitize(x, jnp.asarray(self.bin_boundaries, x.dtype))
        if self.output_mode == "int":
            return indices.astype("int32")
        return encode_categorical(indices, self.output_mode, len(self.bin_boundaries) + 1,
                                  self.dtype)

    @classmethod
    def from_config(cls, config):
        """An adapted layer's config holds both `num_bins` and the learned
        `bin_boundaries`."""
        config = dict(config)
        boundaries = config.pop("bin_boundaries", None)
        if config.get("num_bins") is None:
            return cls(bin_boundaries=boundaries, **config)
        layer = cls(**config)
        layer.bin_boundaries = boundaries
        return layer

    def get_config(self):
        config = super().get_config()
        return {"name": config["name"], "dtype": config["dtype"],
                "bin_boundaries": self.bin_boundaries, "num_bins": self.num_bins,
                "epsilon": self.epsilon, "output_mode": self.output_mode,
                "sparse": self.sparse}
