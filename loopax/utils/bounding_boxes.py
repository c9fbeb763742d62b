"""`keras.utils.bounding_boxes`: bounding-box format conversion, clipping,
cropping/padding, affine warps, IoU/CIoU and anchor deltas."""

from loopax.src.utils.bounding_boxes import (
    affine_transform,
    clip_to_image_size,
    compute_ciou,
    compute_iou,
    convert_format,
    crop,
    decode_deltas_to_boxes,
    encode_box_to_deltas,
    pad,
)

__all__ = ["affine_transform", "clip_to_image_size", "compute_ciou", "compute_iou",
           "convert_format", "crop", "decode_deltas_to_boxes", "encode_box_to_deltas", "pad"]
