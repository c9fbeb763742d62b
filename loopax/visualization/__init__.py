"""`keras.visualization`: segmentation masks drawn on images and image galleries
(matplotlib, the `plot` extra)."""

from loopax.src.visualization.drawing import draw_segmentation_masks
from loopax.src.visualization.galleries import (
    plot_image_gallery,
    plot_segmentation_mask_gallery,
)

__all__ = ["draw_segmentation_masks", "plot_image_gallery", "plot_segmentation_mask_gallery"]
