"""Segmentation masks drawn onto images as NumPy arrays (host-side)."""

from __future__ import annotations

import numpy as np

from loopax.src.api_export import export
from loopax.src.config import image_data_format
from loopax.src.tensor import unwrap


def color_palette(num_classes):
    """One RGB colour per class, as Keras's: `(i · (2²⁵-1, 2¹⁵-1, 2²¹-1)) mod 255`."""
    palette = np.array([2**25 - 1, 2**15 - 1, 2**21 - 1])
    return [((i * palette) % 255).tolist() for i in range(num_classes)]


def _channels_last(array, data_format):
    return np.transpose(array, (0, 2, 3, 1)) if data_format == "channels_first" else array


@export("loopax.visualization.draw_segmentation_masks")
def draw_segmentation_masks(images, segmentation_masks, num_classes=None, color_mapping=None,
                            alpha=0.8, blend=True, ignore_index=-1, data_format=None):
    """Paints each pixel in the colour of its class and blends it with the image.

    Args:
        images: Images `(batch, height, width, channels)` (channels first with
            `"channels_first"`), values in 0..255.
        segmentation_masks: Integer class ids `(batch, height, width, 1)` (or
            `(batch, 1, height, width)` channels first).
        num_classes: The number of classes; None: the largest id in the masks
            plus one (Keras 3.15.1 takes the largest id, leaving that class
            undrawn).
        color_mapping: `{class id: (r, g, b)}` for every class, or None for
            Keras's palette.
        alpha: The colours' opacity when blending, in [0, 1] (default 0.8).
        blend: True (the default): blend and return uint8; False: the painted
            images, float32, unblended.
        ignore_index: Mask value left unpainted (default -1).
        data_format: `"channels_last"` or `"channels_first"`; None: the configured one.

    Returns:
        A NumPy array `(batch, height, width, channels)`, channels last.

    Raises:
        ValueError: `images` not of rank 4.
        TypeError: masks that are not integers.
    """
    data_format = data_format or image_data_format()
    images = np.asarray(unwrap(images))
    if images.ndim != 4:
        raise ValueError("draw_segmentation_masks: `images` must be a batch (batch, height, "
                         f"width, channels); got shape {images.shape}.")
    masks = np.asarray(unwrap(segmentation_masks))
    if not np.issubdtype(masks.dtype, np.integer):
        raise TypeError("draw_segmentation_masks: `segmentation_masks` must hold integer "
                        f"class ids; got dtype {masks.dtype}. Cast them, e.g. "
                        "`masks.astype('int32')`.")
    images = _channels_last(images, data_format).astype("float32")
    masks = _channels_last(masks, data_format)[..., 0]
    if num_classes is None:
        num_classes = int(masks.max()) + 1
    colors = color_palette(num_classes) if color_mapping is None else \
        [color_mapping[i] for i in range(num_classes)]
    painted = images.copy()
    for class_id, color in enumerate(colors):
        painted[masks == class_id] = np.asarray(color, "float32")
    if not blend:
        return painted
    blended = images * (1 - alpha) + painted * alpha
    return np.where((masks != ignore_index)[..., None], blended, images).astype("uint8")
