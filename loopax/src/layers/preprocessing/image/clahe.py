"""ContrastLimitedAdaptiveHistogramEqualization (CLAHE): histogram equalization
per tile with a clipped histogram, blended between tiles, as Keras 3.15's layer."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.preprocessing.image.augmentation import _value_range
from loopax.src.layers.preprocessing.image.image_augmentation import _ImageAugmentation


def _tile_mappings(tiles, clip_limit):
    """Equalizing lookup tables `(..., 256)` of tiles `(..., area)` of 0..255 values."""
    area = tiles.shape[-1]
    levels = jnp.clip(tiles.astype(jnp.int32), 0, 255)
    flat = levels.reshape(-1, area)
    hist = jax.vmap(lambda t: jnp.bincount(t, length=256))(flat).astype(jnp.float32)
    hist = hist.reshape(tiles.shape[:-1] + (256,))
    if clip_limit > 0:
        clipped = jnp.minimum(hist, clip_limit * area / 256.0)
        hist = clipped + jnp.sum(hist - clipped, axis=-1, keepdims=True) / 256.0
    cdf = jnp.cumsum(hist, axis=-1)
    cdf_min = jnp.min(cdf, axis=-1, keepdims=True)
    denominator = area - cdf_min
    denominator = jnp.where(denominator == 0, 1.0, denominator)
    return jnp.clip((cdf - cdf_min) * 255.0 / denominator, 0, 255)


def _neighbours(size, tile, grid):
    """Per pixel row (or column): the two tile-grid indices around it (in the grid
    padded by one tile on each side) and the weight of the second."""
    centre = (jnp.arange(size, dtype=jnp.float32) - tile / 2.0) / tile + 1.0
    low = jnp.floor(centre)
    weight = centre - low
    return (jnp.clip(low, 0, grid + 1).astype(jnp.int32),
            jnp.clip(low + 1, 0, grid + 1).astype(jnp.int32), weight)


def clahe(images, clip_limit, tile_grid_size):
    """CLAHE of 0..255 images `(batch, height, width, channels)` (float32)."""
    batch, height, width, channels = images.shape
    grid_h, grid_w = tile_grid_size
    tile_h, tile_w = -(-height // grid_h), -(-width // grid_w)
    padded = jnp.pad(images, [(0, 0), (0, tile_h * grid_h - height),
                              (0, tile_w * grid_w - width), (0, 0)], mode="symmetric")
    tiles = padded.reshape(batch, grid_h, tile_h, grid_w, tile_w, channels)
    tiles = tiles.transpose(0, 1, 3, 5, 2, 4).reshape(batch, grid_h, grid_w, channels, -1)
    mappings = jnp.pad(_tile_mappings(tiles, clip_limit),
                       [(0, 0), (1, 1), (1, 1), (0, 0), (0, 0)], mode="edge")
    y0, y1, wy = _neighbours(tile_h * grid_h, tile_h, grid_h)
    x0, x1, wx = _neighbours(tile_w * grid_w, tile_w, grid_w)
    levels = jnp.clip(padded, 0, 255).astype(jnp.int32)
    b = jnp.arange(batch)[:, None, None, None]
    c = jnp.arange(channels)[None, None, None, :]

    def lookup(rows, columns):
        return mappings[b, rows[None, :, None, None], columns[None, None, :, None], c, levels]

    wy, wx = wy[None, :, None, None], wx[None, None, :, None]
    top = lookup(y0, x0) * (1 - wx) + lookup(y0, x1) * wx
    bottom = lookup(y1, x0) * (1 - wx) + lookup(y1, x1) * wx
    return (top * (1 - wy) + bottom * wy)[:, :height, :width]


@export("loopax.layers.ContrastLimitedAdaptiveHistogramEqualization")
class ContrastLimitedAdaptiveHistogramEqualization(_ImageAugmentation):
    """Equalizes each channel's histogram per tile of a `tile_grid_size` grid,
    each tile's histogram clipped at `clip_limit` times its mean (the excess is
    spread over all levels); every pixel blends the four nearest tiles' mappings
    bilinearly. Values are levels of 0..255 after mapping `value_range` there.
    Deterministic, and applied at inference too (as Keras).

    Input: images `(batch, height, width, channels)` or one image (channels first
    with `"channels_first"`); output of the same shape, in the layer's dtype.

    Args:
        value_range: `(low, high)`, the images' value range (default `(0, 255)`).
        clip_limit: The histogram clip as a multiple of the mean bin count
            (default 4.0); 0 or less: no clipping (plain adaptive equalization).
        tile_grid_size: `(rows, columns)` of tiles (default `(8, 8)`).
        data_format: `"channels_last"` or `"channels_first"`; None (the default) is
            `loopax.config.image_data_format()`.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `value_range` not a pair, or `tile_grid_size` not two positive ints.
    """

    _ACTS_AT_INFERENCE = True
    _SEEDED = False

    def __init__(self, value_range=(0, 255), clip_limit=4.0, tile_grid_size=(8, 8),
                 data_format=None, **kwargs):
        super().__init__(data_format=data_format, **kwargs)
        self.value_range = _value_range(value_range,
                                        "ContrastLimitedAdaptiveHistogramEqualization")
        if (not isinstance(tile_grid_size, (tuple, list)) or len(tile_grid_size) != 2
                or not all(isinstance(g, int) and g > 0 for g in tile_grid_size)):
            raise ValueError("ContrastLimitedAdaptiveHistogramEqualization: `tile_grid_size` "
                             f"must be two positive ints (rows, columns); got "
                             f"{tile_grid_size!r}.")
        self.clip_limit, self.tile_grid_size = clip_limit, tuple(tile_grid_size)

    def get_random_transformation(self, images, training=True):
        return None

    def transform_images(self, images, transformation=None, training=True):
        images = self._images(images)
        batch = images if images.ndim == 4 else images[None]
        if self.data_format == "channels_first":
            batch = batch.transpose(0, 2, 3, 1)
        out = self._from_255(clahe(self._to_255(batch.astype(jnp.float32)), self.clip_limit,
                                   self.tile_grid_size))
        if self.data_format == "channels_first":
            out = out.transpose(0, 3, 1, 2)
        return (out if images.ndim == 4 else out[0]).astype(images.dtype)

    def get_config(self):
        return {**super().get_config(), "value_range": self.value_range,
                "clip_limit": self.clip_limit, "tile_grid_size": self.tile_grid_size}
