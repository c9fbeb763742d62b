"""Bounding-box helpers, as `keras.utils.bounding_boxes`: format conversion,
clipping, cropping/padding, affine warps, IoU/CIoU and anchor deltas.

Boxes are arrays `(..., 4)` (usually `(N, 4)` or `(batch, N, 4)`) in one of
`SUPPORTED_FORMATS`:

* `"xyxy"`: `[left, top, right, bottom]`; `"yxyx"`: `[top, left, bottom, right]`
* `"xywh"`: `[left, top, width, height]`
* `"center_xywh"` / `"center_yxhw"`: the centre, then the size
* `"rel_*"` (`rel_xyxy`, `rel_yxyx`, `rel_xywh`, `rel_center_xywh`): the same, as
  fractions of the image's width and height.

Every function works in `xyxy` and converts at the edges; all return `jax.Array`s.
"""

from __future__ import annotations

import math

import jax.numpy as jnp

from loopax.src import dtypes
from loopax.src.tensor import unwrap

SUPPORTED_FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw",
                     "rel_xyxy", "rel_yxyx", "rel_xywh", "rel_center_xywh")
_DELTA_FORMATS = ("center_xywh", "center_yxhw")


def _format(name, argument="bounding_box_format"):
    fmt = str(name).lower()
    if fmt not in SUPPORTED_FORMATS:
        raise ValueError(f"`{argument}` must be one of {SUPPORTED_FORMATS}; got {name!r}.")
    return fmt


def _boxes(boxes, dtype=None, owner="boxes"):
    array = jnp.asarray(unwrap(boxes), dtype=dtype)
    if array.ndim < 1 or array.shape[-1] != 4:
        raise ValueError(f"{owner}: `boxes` must have a last dimension of 4; got shape "
                         f"{tuple(array.shape)}.")
    return array


def _corners_from(boxes, fmt):
    """(x1, y1, x2, y2), each `(..., 1)`, from boxes in an absolute `fmt`."""
    a, b, c, d = jnp.split(boxes, 4, axis=-1)
    if fmt == "xyxy":
        return a, b, c, d
    if fmt == "yxyx":
        return b, a, d, c
    if fmt == "xywh":
        return a, b, a + c, b + d
    if fmt == "center_xywh":
        return a - c / 2.0, b - d / 2.0, a + c / 2.0, b + d / 2.0
    return b - d / 2.0, a - c / 2.0, b + d / 2.0, a + c / 2.0  # center_yxhw


def _corners_to(x1, y1, x2, y2, fmt):
    """Boxes in an absolute `fmt` from xyxy corners."""
    w, h = x2 - x1, y2 - y1
    parts = {"xyxy": (x1, y1, x2, y2), "yxyx": (y1, x1, y2, x2), "xywh": (x1, y1, w, h),
             "center_xywh": (x1 + w / 2.0, y1 + h / 2.0, w, h),
             "center_yxhw": (y1 + h / 2.0, x1 + w / 2.0, h, w)}[fmt]
    return jnp.concatenate(parts, axis=-1)


def convert_format(boxes, source, target, height=None, width=None, dtype="float32"):
    """Converts boxes from one format to another.

    Args:
        boxes: Boxes `(..., 4)`, or a dict whose `"boxes"` are converted (other keys kept).
        source: The boxes' format, one of `SUPPORTED_FORMATS` (any case).
        target: The format wanted.
        height: The image's height; needed when either format is relative (`rel_*`).
        width: The image's width; likewise.
        dtype: The result's dtype (default float32).

    Returns:
        The boxes in `target` format, same shape (a new dict for a dict).

    Raises:
        ValueError: an unknown format, boxes whose last dimension is not 4, or a
            relative format without `height`/`width`.
    """
    if isinstance(boxes, dict):
        return dict(boxes, boxes=convert_format(boxes["boxes"], source, target, height,
                                                width, dtype))
    boxes = _boxes(boxes, dtype, "convert_format")
    source, target = _format(source, "source"), _format(target, "target")
    relative = source.startswith("rel_") or target.startswith("rel_")
    if relative and (height is None or width is None):
        raise ValueError(f"convert_format: converting from {source!r} to {target!r} needs the "
                         f"image's `height` and `width`; got height={height}, width={width}.")
    if source == target:
        return boxes
    if source.startswith("rel_") and target.startswith("rel_"):
        source, target, height, width = source[4:], target[4:], None, None
    x1, y1, x2, y2 = _corners_from(boxes, source.removeprefix("rel_"))
    if source.startswith("rel_"):
        x1, y1, x2, y2 = x1 * width, y1 * height, x2 * width, y2 * height
    if target.startswith("rel_"):
        x1, y1, x2, y2 = x1 / width, y1 / height, x2 / width, y2 / height
    return _corners_to(x1, y1, x2, y2, target.removeprefix("rel_")).astype(dtype)


def _in_xyxy(owner, function, boxes, bounding_box_format, *args):
    """Applies `function(xyxy_boxes, *args)` to boxes of an absolute format."""
    fmt = _format(bounding_box_format)
    if fmt.startswith("rel_"):
        raise ValueError(f"{owner}: relative formats are not supported here (got {fmt!r}); "
                         f"convert the boxes to {fmt[4:]!r} first with `convert_format`.")
    boxes = _boxes(boxes, owner=owner)
    if not jnp.issubdtype(boxes.dtype, jnp.floating):
        boxes = boxes.astype("float32")
    xyxy = convert_format(boxes, fmt, "xyxy", dtype=boxes.dtype)
    return convert_format(function(xyxy, *args), "xyxy", fmt, dtype=boxes.dtype)


def clip_to_image_size(bounding_boxes, height=None, width=None, bounding_box_format="xyxy"):
    """Clips boxes to the image; boxes left with no area get label -1.

    Args:
        bounding_boxes: A dict with `"boxes"` `(N, 4)` or `(batch, N, 4)` and optionally
            `"labels"` `(N,)` or `(batch, N)`.
        height: The image's height (needed for absolute formats).
        width: The image's width (likewise).
        bounding_box_format: The boxes' format (default `"xyxy"`); relative formats
            are clipped to `[0, 1]`.

    Returns:
        A new dict: the clipped `"boxes"` (same format) and, if given, the `"labels"`
        with -1 for empty boxes; other keys kept.

    Raises:
        ValueError: an absolute format without `height`/`width`, or an unknown format.
    """
    fmt = _format(bounding_box_format)
    relative = fmt.startswith("rel_")
    if not relative and (height is None or width is None):
        raise ValueError(f"clip_to_image_size: `height` and `width` are needed for the "
                         f"absolute format {fmt!r}; got height={height}, width={width}.")
    boxes = _boxes(bounding_boxes["boxes"], owner="clip_to_image_size")
    if not jnp.issubdtype(boxes.dtype, jnp.floating):
        boxes = boxes.astype("float32")
    # A relative format is its absolute one in an image of size 1 x 1.
    base = fmt.removeprefix("rel_")
    high_x, high_y = (1.0, 1.0) if relative else (width, height)
    x1, y1, x2, y2 = _corners_from(boxes, base)
    x1, x2 = jnp.clip(x1, 0, high_x), jnp.clip(x2, 0, high_x)
    y1, y2 = jnp.clip(y1, 0, high_y), jnp.clip(y2, 0, high_y)
    result = dict(bounding_boxes, boxes=_corners_to(x1, y1, x2, y2, base).astype(boxes.dtype))
    if bounding_boxes.get("labels") is not None:
        area = ((x2 - x1) * (y2 - y1))[..., 0]
        result["labels"] = jnp.where(area > 0, jnp.asarray(unwrap(bounding_boxes["labels"])),
                                     -1)
    return result


def _shift_and_clip(boxes, top, left, height, width):
    x1, y1, x2, y2 = _corners_from(boxes, "xyxy")
    x1, x2 = x1 - left, x2 - left
    y1, y2 = y1 - top, y2 - top
    if width is not None:
        x1, x2 = jnp.clip(x1, 0, width), jnp.clip(x2, 0, width)
    if height is not None:
        y1, y2 = jnp.clip(y1, 0, height), jnp.clip(y2, 0, height)
    return _corners_to(x1, y1, x2, y2, "xyxy")


def crop(boxes, top, left, height, width, bounding_box_format="xyxy"):
    """Boxes seen from a crop of the image.

    Args:
        boxes: Boxes `(N, 4)` or `(batch, N, 4)`.
        top: The crop's first row.
        left: The crop's first column.
        height: The crop's height: boxes are clipped to it (None: not clipped).
        width: The crop's width (likewise).
        bounding_box_format: The boxes' format, any absolute one (default `"xyxy"`).

    Returns:
        The boxes in the crop's coordinates, same format and shape.

    Raises:
        ValueError: a relative or unknown format.
    """
    return _in_xyxy("crop", _shift_and_clip, boxes, bounding_box_format, top, left, height,
                    width)


def pad(boxes, top, left, height=None, width=None, bounding_box_format="xyxy"):
    """Boxes seen in an image padded at the top and the left.

    Args:
        boxes: Boxes `(N, 4)` or `(batch, N, 4)`.
        top: Rows of padding added above.
        left: Columns of padding added on the left.
        height: Accepted as Keras does, and not used.
        width: Likewise.
        bounding_box_format: The boxes' format, any absolute one (default `"xyxy"`).

    Returns:
        The moved boxes, same format and shape.

    Raises:
        ValueError: a relative or unknown format.
    """
    return _in_xyxy("pad", _shift_and_clip, boxes, bounding_box_format, -top, -left, None,
                    None)


def _per_box_batch(value, batch, dtype):
    """`value` (a number or `(batch,)`) as `(batch, 1, 1)`."""
    value = jnp.broadcast_to(jnp.asarray(unwrap(value), dtype).reshape(-1), (batch,))
    return value[:, None, None]


def _affine(boxes, angle, translate_x, translate_y, scale, shear_x, shear_y, height, width,
            center_x, center_y):
    """The bounding boxes of the four warped corners of xyxy `boxes` `(batch, N, 4)`.

    A corner `p` moves to `c + M (p - c - t)`, with `c` the centre
    (`center_x · (width - 1)`, ...), `t` the translation (`-translate_x · (width - 1)`, ...)
    and `M` = scale · the inverse of the rotation-with-shear, as Keras's layers warp images.
    """
    batch, dtype = boxes.shape[0], boxes.dtype
    angle, translate_x, translate_y, scale, shear_x, shear_y = (
        _per_box_batch(v, batch, dtype)
        for v in (angle, translate_x, translate_y, scale, shear_x, shear_y))
    degrees = math.pi / 180.0
    rot, sx, sy = -angle * degrees, -shear_x * degrees, -shear_y * degrees
    a = jnp.cos(rot - sy) / jnp.cos(sy)
    c = -jnp.sin(rot - sy) / jnp.cos(sy)
    b = a * jnp.tan(sx) + jnp.sin(rot)
    d = jnp.cos(rot) - c * jnp.tan(sx)
    cx = (0.5 if center_x is None else center_x) * (width - 1)
    cy = (0.5 if center_y is None else center_y) * (height - 1)
    xs = jnp.stack([boxes[..., 0], boxes[..., 2], boxes[..., 2], boxes[..., 0]], -1)
    ys = jnp.stack([boxes[..., 1], boxes[..., 1], boxes[..., 3], boxes[..., 3]], -1)
    u = xs - cx + translate_x * (width - 1)
    v = ys - cy + translate_y * (height - 1)
    new_x = cx + scale * (d * u - b * v)
    new_y = cy + scale * (-c * u + a * v)
    return jnp.stack([new_x.min(-1), new_y.min(-1), new_x.max(-1), new_y.max(-1)], axis=-1)


def affine_transform(boxes, angle, translate_x, translate_y, scale, shear_x, shear_y, height,
                     width, center_x=None, center_y=None, bounding_box_format="xyxy"):
    """Warps boxes as Keras's affine image layers warp their images.

    Each parameter is a number or one value per image `(batch,)`.

    Args:
        boxes: Boxes `(batch, N, 4)` or `(N, 4)`.
        angle: Rotation in degrees.
        translate_x: Horizontal shift, a fraction of the width.
        translate_y: Vertical shift, a fraction of the height.
        scale: Scale factor.
        shear_x: Horizontal shear in degrees.
        shear_y: Vertical shear in degrees.
        height: The image's height.
        width: The image's width.
        center_x: The centre of the warp, a fraction of the width (default 0.5).
        center_y: Likewise, of the height (default 0.5).
        bounding_box_format: The boxes' format, any absolute one (default `"xyxy"`).

    Returns:
        The axis-aligned boxes around the warped corners, same format and shape.

    Raises:
        ValueError: a relative or unknown format.
    """
    def warp(xyxy):
        batched = xyxy if xyxy.ndim == 3 else xyxy[None]
        out = _affine(batched, angle, translate_x, translate_y, scale, shear_x, shear_y,
                      height, width, center_x, center_y)
        return out if xyxy.ndim == 3 else out[0]
    return _in_xyxy("affine_transform", warp, boxes, bounding_box_format)


def _image_size(image_shape):
    return (None, None) if image_shape is None else tuple(image_shape)[:2]


def _needs_image_shape(fmt, image_shape, owner):
    if str(fmt).lower().startswith("rel_") and image_shape is None:
        raise ValueError(f"{owner}: the relative format {fmt!r} needs `image_shape` "
                         "(height, width, channels); got None.")


def _area(x1, y1, x2, y2):
    return (x2 - x1) * (y2 - y1)


def compute_iou(boxes1, boxes2, bounding_box_format, use_masking=False, mask_val=-1,
                image_shape=None):
    """Pairwise intersection over union of two sets of boxes.

    Args:
        boxes1: Boxes `(M, 4)` or `(batch, M, 4)`.
        boxes2: Boxes `(N, 4)` or `(batch, N, 4)`.
        bounding_box_format: Both sets' format.
        use_masking: If True, pairs where either box has all coordinates negative
            (padding) get `mask_val`.
        mask_val: The value of masked pairs (default -1).
        image_shape: `(height, width, channels)`, needed for relative formats.

    Returns:
        IoUs `(M, N)`, or `(batch, M, N)` when either set is batched.

    Raises:
        ValueError: boxes not of rank 2 or 3, or a relative format without `image_shape`.
    """
    _needs_image_shape(bounding_box_format, image_shape, "compute_iou")
    height, width = _image_size(image_shape)
    boxes1, boxes2 = (_boxes(b, owner="compute_iou") for b in (boxes1, boxes2))
    for name, b in (("boxes1", boxes1), ("boxes2", boxes2)):
        if b.ndim not in (2, 3):
            raise ValueError(f"compute_iou: `{name}` must be (N, 4) or (batch, N, 4); got "
                             f"shape {tuple(b.shape)}.")
    boxes1, boxes2 = (convert_format(b, bounding_box_format, "xyxy", height, width)
                      for b in (boxes1, boxes2))
    x1a, y1a, x2a, y2a = _corners_from(boxes1, "xyxy")            # (..., M, 1)
    x1b, y1b, x2b, y2b = (jnp.swapaxes(c, -1, -2) for c in _corners_from(boxes2, "xyxy"))
    overlap_w = jnp.maximum(jnp.minimum(x2a, x2b) - jnp.maximum(x1a, x1b), 0)
    overlap_h = jnp.maximum(jnp.minimum(y2a, y2b) - jnp.maximum(y1a, y1b), 0)
    intersection = overlap_w * overlap_h
    union = _area(x1a, y1a, x2a, y2a) + _area(x1b, y1b, x2b, y2b) - intersection
    iou = intersection / (union + dtypes.EPSILON)
    if not use_masking:
        return iou
    padding1 = jnp.max(boxes1, axis=-1, keepdims=True) < 0
    padding2 = jnp.swapaxes(jnp.max(boxes2, axis=-1, keepdims=True) < 0, -1, -2)
    return jnp.where(padding1 | padding2, jnp.asarray(mask_val, iou.dtype), iou)


def compute_ciou(boxes1, boxes2, bounding_box_format, image_shape=None):
    """Complete IoU (Zheng et al., 2020) of matching boxes: IoU minus the squared
    centre distance over the squared diagonal of the enclosing box, minus the
    aspect-ratio term `α·v`.

    Args:
        boxes1: Boxes `(..., 4)`.
        boxes2: Boxes of the same shape.
        bounding_box_format: Both sets' format.
        image_shape: `(height, width, channels)`, needed for relative formats.

    Returns:
        CIoUs `(...)`, at most 1 (identical boxes).

    Raises:
        ValueError: a relative format without `image_shape`.
    """
    _needs_image_shape(bounding_box_format, image_shape, "compute_ciou")
    height, width = _image_size(image_shape)
    eps = dtypes.EPSILON
    x1a, y1a, x2a, y2a = _corners_from(
        convert_format(boxes1, bounding_box_format, "xyxy", height, width), "xyxy")
    x1b, y1b, x2b, y2b = _corners_from(
        convert_format(boxes2, bounding_box_format, "xyxy", height, width), "xyxy")
    wa, ha = x2a - x1a, y2a - y1a + eps
    wb, hb = x2b - x1b, y2b - y1b + eps
    intersection = (jnp.maximum(jnp.minimum(x2a, x2b) - jnp.maximum(x1a, x1b), 0)
                    * jnp.maximum(jnp.minimum(y2a, y2b) - jnp.maximum(y1a, y1b), 0))
    union = wa * ha + wb * hb - intersection + eps
    iou = intersection / (union + eps)
    diagonal = ((jnp.maximum(x2a, x2b) - jnp.minimum(x1a, x1b)) ** 2
                + (jnp.maximum(y2a, y2b) - jnp.minimum(y1a, y1b)) ** 2 + eps)
    centres = ((x1a + x2a) / 2 - (x1b + x2b) / 2) ** 2 + ((y1a + y2a) / 2 - (y1b + y2b) / 2) ** 2
    v = (4 / math.pi ** 2) * (jnp.arctan(wb / hb) - jnp.arctan(wa / ha)) ** 2
    alpha = v / (v - iou + (1 + eps))
    return (iou - (centres / diagonal + v * alpha))[..., 0]


def _variance(variance):
    if variance is None:
        return None
    variance = jnp.asarray(unwrap(variance), "float32")
    if variance.shape[-1:] != (4,):
        raise ValueError(f"`variance` must have 4 values (one per box coordinate); got "
                         f"shape {tuple(variance.shape)}.")
    return variance


def _delta_format(fmt, argument):
    if fmt not in _DELTA_FORMATS:
        raise ValueError(f"`{argument}` must be one of {_DELTA_FORMATS}; got {fmt!r}.")
    return fmt


def encode_box_to_deltas(anchors, boxes, anchor_format, box_format,
                         encoding_format="center_yxhw", variance=None, image_shape=None):
    """Encodes boxes as offsets from anchors: centre offsets over the anchor's
    size, then log size ratios, in `encoding_format`'s order.

    Args:
        anchors: Anchor boxes `(N, 4)`.
        boxes: Boxes `(N, 4)` or `(batch, N, 4)`.
        anchor_format: The anchors' format.
        box_format: The boxes' format.
        encoding_format: `"center_yxhw"` (the default) or `"center_xywh"`.
        variance: 4 numbers the deltas are divided by, or None.
        image_shape: `(height, width, channels)`, needed for relative formats.

    Returns:
        Deltas of the boxes' shape.

    Raises:
        ValueError: a `variance` without 4 values, or another `encoding_format`.
    """
    variance = _variance(variance)
    _delta_format(encoding_format, "encoding_format")
    height, width = _image_size(image_shape)
    anchors = convert_format(anchors, anchor_format, encoding_format, height, width)
    boxes = convert_format(boxes, box_format, encoding_format, height, width)
    anchor_size = jnp.maximum(anchors[..., 2:], dtypes.EPSILON)
    box_size = jnp.maximum(boxes[..., 2:], dtypes.EPSILON)
    deltas = jnp.concatenate([(boxes[..., :2] - anchors[..., :2]) / anchor_size,
                              jnp.log(box_size / anchor_size)], axis=-1)
    return deltas if variance is None else deltas / variance


def decode_deltas_to_boxes(anchors, boxes_delta, anchor_format, box_format,
                           encoded_format="center_yxhw", variance=None, image_shape=None):
    """Decodes deltas made by `encode_box_to_deltas` back into boxes.

    Args:
        anchors: Anchor boxes `(N, 4)`, or a dict of them keyed by pyramid level.
        boxes_delta: Deltas `(N, 4)` or `(batch, N, 4)`, or a dict with the anchors' keys.
        anchor_format: The anchors' format.
        box_format: The format of the boxes returned.
        encoded_format: `"center_yxhw"` (the default) or `"center_xywh"`.
        variance: 4 numbers the deltas are multiplied by, or None.
        image_shape: `(height, width, channels)`, needed for relative formats.

    Returns:
        Boxes in `box_format` (a dict by level for dict inputs).

    Raises:
        ValueError: a `variance` without 4 values, or another `encoded_format`.
    """
    variance = _variance(variance)
    _delta_format(encoded_format, "encoded_format")
    height, width = _image_size(image_shape)

    def decode(anchor, delta):
        anchor = convert_format(anchor, anchor_format, encoded_format, height, width)
        delta = jnp.asarray(unwrap(delta))
        if variance is not None:
            delta = delta * variance
        box = jnp.concatenate([delta[..., :2] * anchor[..., 2:] + anchor[..., :2],
                               jnp.exp(delta[..., 2:]) * anchor[..., 2:]], axis=-1)
        return convert_format(box, encoded_format, box_format, height, width)

    if isinstance(anchors, dict) and isinstance(boxes_delta, dict):
        return {level: decode(anchor, boxes_delta[level]) for level, anchor in anchors.items()}
    return decode(anchors, boxes_delta)
