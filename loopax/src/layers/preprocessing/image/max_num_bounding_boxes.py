"""`MaxNumBoundingBoxes`: gives every image of a detection batch the same
number of boxes, so `{"images", "bounding_boxes"}` batches stack into arrays."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.layers.argument_checks import standardize_data_format
from loopax.src.layers.layer import Layer
from loopax.src.tensor import unwrap
from loopax.src.utils.bounding_boxes import SUPPORTED_FORMATS

_DICT_KEYS = ("images", "labels", "bounding_boxes", "segmentation_masks")


@export("loopax.layers.MaxNumBoundingBoxes")
class MaxNumBoundingBoxes(Layer):
    """Cuts or pads each image's boxes to exactly `max_number`.

    Called on a dict `{"images", "bounding_boxes": {"boxes", "labels"}, ...}`:
    `boxes` `(batch, N, 4)` become `(batch, max_number, 4)` (float32) and their
    `labels` `(batch, N)` become `(batch, max_number)`; boxes past `max_number`
    are dropped, missing ones are filled with `fill_value` (boxes and labels).
    One image (`boxes` `(N, 4)`, `labels` `(N,)`) works alike. Images, labels
    and segmentation masks pass through; so do plain image arrays. Applied at
    inference too (as Keras).

    Args:
        max_number: The number of boxes every image gets.
        fill_value: The coordinates and label of padding boxes (default -1).
        bounding_box_format: The boxes' format, kept for the config (the layer
            does not read coordinates); None is accepted (Keras refuses boxes
            without a format).
        data_format: `"channels_last"` or `"channels_first"`, kept for the config.
        **kwargs: Base layer arguments (`name`, `dtype`, ...).

    Raises:
        ValueError: `max_number` not a positive integer, an unknown
            `bounding_box_format`, or (when called) a dict without `"images"`, with
            other keys, or whose `bounding_boxes` lacks `"boxes"`/`"labels"`.
    """

    def __init__(self, max_number, fill_value=-1, bounding_box_format=None, data_format=None,
                 **kwargs):
        super().__init__(**kwargs)
        if isinstance(max_number, bool) or int(max_number) != max_number or max_number < 1:
            raise ValueError("MaxNumBoundingBoxes: `max_number` must be a positive integer; "
                             f"got {max_number!r}.")
        if bounding_box_format is not None and bounding_box_format not in SUPPORTED_FORMATS:
            raise ValueError(f"MaxNumBoundingBoxes: `bounding_box_format` must be one of "
                             f"{SUPPORTED_FORMATS} or None; got {bounding_box_format!r}.")
        self.max_number, self.fill_value = int(max_number), int(fill_value)
        self.bounding_box_format = bounding_box_format
        self.data_format = standardize_data_format(data_format)
        self.built = True

    def call(self, data, training=True):
        if not isinstance(data, dict):
            return jnp.asarray(unwrap(data))
        unknown = sorted(set(data) - set(_DICT_KEYS))
        if unknown or "images" not in data:
            raise ValueError(f"MaxNumBoundingBoxes {self.name!r}: a dict input needs the key "
                             f"'images' and may have {_DICT_KEYS[1:]}; got keys {sorted(data)}.")
        out = {key: jnp.asarray(unwrap(value)) for key, value in data.items()
               if key != "bounding_boxes"}
        if "bounding_boxes" in data:
            out["bounding_boxes"] = self.transform_bounding_boxes(data["bounding_boxes"])
        return out

    def transform_bounding_boxes(self, bounding_boxes, transformation=None, training=True):
        """`{"boxes", "labels"}` with exactly `max_number` boxes per image."""
        if not isinstance(bounding_boxes, dict) or not {"boxes", "labels"} <= set(bounding_boxes):
            got = sorted(bounding_boxes) if isinstance(bounding_boxes, dict) \
                else type(bounding_boxes).__name__
            raise ValueError(f"MaxNumBoundingBoxes {self.name!r}: `bounding_boxes` must be a "
                             f"dict with keys 'boxes' and 'labels'; got {got}.")
        boxes = jnp.asarray(unwrap(bounding_boxes["boxes"]), "float32")
        labels = jnp.asarray(unwrap(bounding_boxes["labels"]))
        if boxes.ndim not in (2, 3) or boxes.shape[-1] != 4:
            raise ValueError(f"MaxNumBoundingBoxes {self.name!r}: `boxes` must be (N, 4) or "
                             f"(batch, N, 4); got shape {tuple(boxes.shape)}.")
        box_axis = boxes.ndim - 2
        return dict(bounding_boxes, boxes=self._fit(boxes, box_axis),
                    labels=self._fit(labels, box_axis))

    def _fit(self, values, axis):
        """`values` cut or padded with `fill_value` to `max_number` along `axis`."""
        kept = jnp.take(values, np.arange(min(values.shape[axis], self.max_number)), axis=axis)
        missing = self.max_number - kept.shape[axis]
        widths = [(0, 0)] * values.ndim
        widths[axis] = (0, missing)
        return jnp.pad(kept, widths, constant_values=self.fill_value)

    def compute_output_shape(self, input_shape):
        if not (isinstance(input_shape, dict) and "bounding_boxes" in input_shape):
            return input_shape
        boxes = dict(input_shape["bounding_boxes"])
        for key in ("boxes", "labels"):
            shape = list(boxes[key])
            shape[len(shape) - 2 if key == "boxes" else len(shape) - 1] = self.max_number
            boxes[key] = tuple(shape)
        return dict(input_shape, bounding_boxes=boxes)

    def get_config(self):
        return {**super().get_config(), "max_number": self.max_number,
                "fill_value": self.fill_value, "bounding_box_format": self.bounding_box_format,
                "data_format": self.data_format}
