"""`keras.visualization`: segmentation masks and bounding boxes drawn on images, and
image galleries (matplotlib, the `plot` extra; boxes need OpenCV, the `vision` extra)."""

from loopax.src.visualization.bounding_boxes import draw_bounding_boxes
from loopax.src.visualization.drawing import draw_segmentation_masks
from loopax.src.visualization.galleries import (
    plot_bounding_box_gallery,
    plot_image_gallery,
    plot_segmentation_mask_gallery,
)

__all__ = ["draw_bounding_boxes", "draw_segmentation_masks", "plot_bounding_box_gallery",
           "plot_image_gallery", "plot_segmentation_mask_gallery"]
