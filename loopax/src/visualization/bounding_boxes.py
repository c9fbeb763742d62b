"""Bounding boxes and their labels drawn onto images with OpenCV (the `vision` extra)."""

from __future__ import annotations

import numbers

import numpy as np

from loopax.src.api_export import export
from loopax.src.config import image_data_format
from loopax.src.tensor import unwrap
from loopax.src.utils.bounding_boxes import _format, convert_format

_DATA_FORMATS = ("channels_last", "channels_first")


def _opencv():
    try:
        import cv2
    except ImportError as error:
        raise ImportError("draw_bounding_boxes needs OpenCV: pip install 'loopax[vision]' "
                          "(or opencv-python-headless).") from error
    return cv2


def _check_drawing_arguments(color, line_thickness, text_thickness, font_scale, data_format):
    if data_format not in _DATA_FORMATS:
        raise ValueError(f"draw_bounding_boxes: `data_format` must be one of {_DATA_FORMATS}; "
                         f"got {data_format!r}.")
    if (isinstance(color, (str, bytes)) or np.ndim(color) != 1 or len(color) not in (3, 4)
            or not all(isinstance(c, numbers.Real) for c in np.asarray(color).tolist())):
        raise ValueError("draw_bounding_boxes: `color` must be 3 (or 4) numbers in 0..255, "
                         f"e.g. (255, 0, 0); got {color!r}.")
    for name, value in (("line_thickness", line_thickness), ("text_thickness", text_thickness)):
        if value is not None and (isinstance(value, bool)
                                  or not isinstance(value, numbers.Integral)):
            raise TypeError(f"draw_bounding_boxes: `{name}` must be an integer number of "
                            f"pixels; got {value!r}.")
    if isinstance(font_scale, bool) or not isinstance(font_scale, numbers.Real):
        raise TypeError(f"draw_bounding_boxes: `font_scale` must be a number; got "
                        f"{font_scale!r}.")


def _boxes_to_draw(bounding_boxes, bounding_box_format, batch, height, width):
    """(xyxy pixel boxes `(batch, n, 4)` int32, labels `(batch, n)` int32, confidences or None)."""
    if not isinstance(bounding_boxes, dict):
        raise TypeError("draw_bounding_boxes: `bounding_boxes` must be a dict with 'boxes' "
                        f"and 'labels'; got {type(bounding_boxes).__name__}.")
    if "boxes" not in bounding_boxes or "labels" not in bounding_boxes:
        raise ValueError("draw_bounding_boxes: `bounding_boxes` must have the keys 'boxes' "
                         f"and 'labels'; got keys {sorted(bounding_boxes)}.")
    boxes = np.asarray(unwrap(bounding_boxes["boxes"]))
    if boxes.ndim != 3 or boxes.shape[0] != batch or boxes.shape[-1] != 4:
        raise ValueError("draw_bounding_boxes: `bounding_boxes['boxes']` must be "
                         f"(batch={batch}, num_boxes, 4); got shape {boxes.shape}.")
    columns = {"labels": np.asarray(unwrap(bounding_boxes["labels"]))}
    if "confidences" in bounding_boxes:
        columns["confidences"] = np.asarray(unwrap(bounding_boxes["confidences"]))
    for key, values in columns.items():
        if values.shape != boxes.shape[:2]:
            raise ValueError(f"draw_bounding_boxes: `bounding_boxes['{key}']` must be "
                             f"(batch, num_boxes) = {boxes.shape[:2]}; got shape {values.shape}.")
    xyxy = convert_format(boxes, _format(bounding_box_format), "xyxy", height, width)
    return (np.asarray(xyxy).astype("int32"), columns["labels"].astype("int32"),
            columns.get("confidences"))


def _as_uint8(images):
    """Images as uint8: floats all <= 1 are taken as 0..1 and scaled, others clipped to 0..255."""
    if images.dtype.kind == "f" and images.size:
        images = np.clip(images, 0, 1) * 255 if images.max() <= 1.0 else np.clip(images, 0, 255)
    return images.astype("uint8")


def _text_origin(x1, y1, font_scale, text_thickness):
    """Where a label's baseline starts: 8 px above the box, or inside it if that leaves no room."""
    font_height = int(font_scale * 12)
    if y1 - 8 - 2 * font_height > 0:
        return x1, y1 - 8
    return x1 + 3, y1 + 2 * font_height + text_thickness + 3


@export("loopax.visualization.draw_bounding_boxes")
def draw_bounding_boxes(images, bounding_boxes, bounding_box_format, class_mapping=None,
                        color=(128, 128, 128), line_thickness=2, text_thickness=1,
                        font_scale=1.0, data_format=None):
    """Draws each box's outline, and its class name when `class_mapping` has one, onto images.

    Args:
        images: Images `(batch, height, width, channels)` (channels first with
            `"channels_first"`); floats whose largest value is at most 1 are taken as
            0..1, other values are clipped to 0..255.
        bounding_boxes: A dict: `"boxes"` `(batch, num_boxes, 4)`, `"labels"`
            `(batch, num_boxes)` (boxes labelled -1 are skipped) and optionally
            `"confidences"` `(batch, num_boxes)`, shown after the name.
        bounding_box_format: The boxes' format, one of
            `loopax.utils.bounding_boxes` formats (`"xyxy"`, `"xywh"`, `"rel_xyxy"`, ...).
        class_mapping: `{class id: name}`; None (the default): no text.
        color: The RGB colour of lines and text (default `(128, 128, 128)`).
        line_thickness: The outline's thickness in pixels (default 2).
        text_thickness: The text's stroke thickness (default 1; 0 or None: `line_thickness`).
        font_scale: The text's size, 1.0 being OpenCV's Hershey simplex font (default 1.0).
        data_format: `"channels_last"` or `"channels_first"`; None: the configured one.

    Returns:
        A uint8 NumPy array laid out as `images` (the input is left unchanged).

    Raises:
        ValueError: `images` not of rank 4, boxes/labels of the wrong shape or keys,
            an unknown format or a bad `color`.
        TypeError: `bounding_boxes` not a dict, or non-integer thicknesses.
        ImportError: OpenCV is not installed.
    """
    cv2 = _opencv()
    data_format = data_format or image_data_format()
    _check_drawing_arguments(color, line_thickness, text_thickness, font_scale, data_format)
    images = np.asarray(unwrap(images))
    if images.ndim != 4:
        raise ValueError("draw_bounding_boxes: `images` must be a batch (batch, height, width, "
                         f"channels); got shape {images.shape}.")
    channels_first = data_format == "channels_first"
    if channels_first:
        images = images.transpose(0, 2, 3, 1)
    batch, height, width = images.shape[:3]
    boxes, labels, confidences = _boxes_to_draw(bounding_boxes, bounding_box_format, batch,
                                                height, width)
    class_mapping = class_mapping or {}
    text_thickness = text_thickness or line_thickness
    color = tuple(np.asarray(color).tolist())
    drawn = np.ascontiguousarray(_as_uint8(images))
    for i, image in enumerate(drawn):
        for box, (x1, y1, x2, y2) in enumerate(boxes[i].tolist()):
            label = int(labels[i, box])
            if label == -1:
                continue
            cv2.rectangle(image, (x1, y1), (x2, y2), color, line_thickness)
            if label not in class_mapping:
                continue
            text = str(class_mapping[label])
            if confidences is not None:
                text = f"{text} | {confidences[i, box]:.2f}"
            cv2.putText(image, text, _text_origin(x1, y1, font_scale, text_thickness),
                        cv2.FONT_HERSHEY_SIMPLEX, font_scale, color, text_thickness)
    return drawn.transpose(0, 3, 1, 2) if channels_first else drawn
