"""Image galleries plotted with matplotlib (the optional `plot` extra)."""

from __future__ import annotations

import math

import numpy as np

from loopax.src.api_export import export
from loopax.src.config import image_data_format
from loopax.src.tensor import unwrap
from loopax.src.visualization.bounding_boxes import draw_bounding_boxes
from loopax.src.visualization.drawing import _channels_last, draw_segmentation_masks


def _pyplot(owner):
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(f"{owner} needs matplotlib: pip install 'loopax[plot]' "
                          "(or matplotlib).") from error
    return plt


def _batch(images, owner):
    images = np.asarray(unwrap(images))
    if images.ndim != 4:
        raise ValueError(f"{owner}: `images` must be a batch (batch, height, width, channels); "
                         f"got shape {images.shape}.")
    return images


@export("loopax.visualization.plot_image_gallery")
def plot_image_gallery(images, y_true=None, y_pred=None, label_map=None, rows=None, cols=None,
                       value_range=(0, 255), scale=2, path=None, show=None, transparent=True,
                       dpi=60, legend_handles=None, data_format=None):
    """Plots images in a `rows × cols` grid, titled with their labels.

    Args:
        images: Images `(batch, height, width, channels)` (channels first with
            `"channels_first"`).
        y_true: Class ids `(batch,)` shown as "Label: name", or None.
        y_pred: Predicted class ids `(batch,)` shown as "Pred: name", or None.
        label_map: `{class id: name}`; needed with `y_true`/`y_pred`.
        rows: Grid rows; None: `ceil(sqrt(batch))`.
        cols: Grid columns; None: `batch // rows` (as Keras).
        value_range: `(low, high)` of the images, mapped to 0..255 (default `(0, 255)`).
        scale: Inches per image (default 2).
        path: A file to save the figure to, or None.
        show: Whether to `plt.show()`; None: when there is no `path`.
        transparent: Saved with a transparent background (default True).
        dpi: Dots per inch when saved (default 60).
        legend_handles: matplotlib handles for a legend, or None.
        data_format: `"channels_last"` or `"channels_first"`; None: the configured one.

    Returns:
        The matplotlib Figure (closed once saved or shown).

    Raises:
        ValueError: both `path` and `show=True`, labels without `label_map`, or
            `images` not of rank 4.
        ImportError: matplotlib is not installed.
    """
    plt = _pyplot("plot_image_gallery")
    if path is not None and show:
        raise ValueError("plot_image_gallery: pass either `path` (save) or `show=True`, "
                         "not both.")
    if (y_true is not None or y_pred is not None) and label_map is None:
        raise ValueError("plot_image_gallery: `y_true`/`y_pred` need a `label_map` "
                         "{class id: name}.")
    show = path is None if show is None else show
    images = _channels_last(_batch(images, "plot_image_gallery"),
                            data_format or image_data_format())
    batch = images.shape[0]
    rows = rows or int(math.ceil(math.sqrt(batch)))
    cols = cols or int(math.ceil(batch // rows))
    low, high = value_range
    images = (images[: rows * cols].astype("float32") - low) * (255.0 / (high - low))
    fig, axes = plt.subplots(nrows=rows, ncols=cols, figsize=(cols * scale, rows * scale),
                             frameon=False, layout="tight", squeeze=False, sharex="row",
                             sharey="col")
    fig.subplots_adjust(wspace=0, hspace=0)
    if legend_handles is not None:
        fig.legend(handles=legend_handles, loc="lower center")
    for index, axis in enumerate(axes.ravel()):
        axis.axis("off")
        if index >= len(images):
            continue
        axis.imshow(images[index].astype("uint8"))
        axis.margins(x=0, y=0)
        title = [f"{kind}: {label_map.get(int(ids[index]), 'Unknown')}"
                 for kind, ids in (("Label", y_true), ("Pred", y_pred))
                 if ids is not None and index < len(ids)]
        if title:
            axis.set_title("  ".join(title), fontsize=8)
    if path is not None:
        fig.savefig(path, pad_inches=0, bbox_inches="tight", transparent=transparent, dpi=dpi)
        plt.close(fig)
    elif show:
        plt.show()
        plt.close(fig)
    return fig


@export("loopax.visualization.plot_segmentation_mask_gallery")
def plot_segmentation_mask_gallery(images, num_classes, value_range=(0, 255), y_true=None,
                                   y_pred=None, color_mapping=None, blend=True, alpha=0.8,
                                   ignore_index=-1, data_format=None, **kwargs):
    """Plots each image in a row beside its true and/or predicted masks drawn on it.

    Args:
        images: Images `(batch, height, width, channels)` (channels first with
            `"channels_first"`).
        num_classes: The number of classes.
        value_range: `(low, high)` of the images (default `(0, 255)`).
        y_true: True masks `(batch, height, width, 1)`, or None.
        y_pred: Predicted masks, likewise, or None.
        color_mapping: `{class id: (r, g, b)}`, or None for Keras's palette.
        blend: Blend the colours with the image (default True).
        alpha: The colours' opacity (default 0.8).
        ignore_index: Mask value left unpainted (default -1).
        data_format: `"channels_last"` or `"channels_first"`; None: the configured one.
        **kwargs: Passed on to `plot_image_gallery` (`path`, `show`, `scale`, ...).

    Returns:
        The matplotlib Figure, one row per image.

    Raises:
        ValueError: `images` not of rank 4.
    """
    data_format = data_format or image_data_format()
    images = _channels_last(_batch(images, "plot_segmentation_mask_gallery"), data_format)
    columns = [images]
    for masks in (y_true, y_pred):
        if masks is not None:
            masks = _channels_last(np.asarray(unwrap(masks)), data_format).astype("int32")
            columns.append(draw_segmentation_masks(
                images, masks, num_classes=num_classes, color_mapping=color_mapping,
                alpha=alpha, blend=blend, ignore_index=ignore_index,
                data_format="channels_last"))
    gallery = np.stack([column[i] for i in range(len(images)) for column in columns])
    return plot_image_gallery(gallery, value_range=value_range, rows=len(images),
                              cols=len(columns), data_format="channels_last", **kwargs)


def _legend_patches(true_color, pred_color):
    from matplotlib import patches

    return [patches.Patch(color=np.array(true_color) / 255.0, label="Ground Truth"),
            patches.Patch(color=np.array(pred_color) / 255.0, label="Prediction")]


@export("loopax.visualization.plot_bounding_box_gallery")
def plot_bounding_box_gallery(images, bounding_box_format, y_true=None, y_pred=None,
                              value_range=(0, 255), true_color=(0, 188, 212),
                              pred_color=(255, 235, 59), line_thickness=2, font_scale=1.0,
                              text_thickness=None, class_mapping=None, ground_truth_mapping=None,
                              prediction_mapping=None, legend=False, legend_handles=None,
                              rows=None, cols=None, data_format=None, **kwargs):
    """Plots images in a grid with their true and/or predicted boxes drawn on them.

    Args:
        images: Images `(batch, height, width, channels)` (channels first with
            `"channels_first"`), values in `value_range`.
        bounding_box_format: The boxes' format (`"xyxy"`, `"xywh"`, `"rel_xyxy"`, ...).
        y_true: True boxes, a dict as `draw_bounding_boxes` takes, or None.
        y_pred: Predicted boxes, likewise (drawn over the true ones), or None.
        value_range: `(low, high)` of the images, mapped to 0..255 before drawing
            (default `(0, 255)`).
        true_color: RGB of the true boxes (default `(0, 188, 212)`).
        pred_color: RGB of the predicted boxes (default `(255, 235, 59)`).
        line_thickness: The outlines' thickness in pixels (default 2).
        font_scale: The labels' size (default 1.0).
        text_thickness: The labels' stroke thickness; None: `line_thickness`.
        class_mapping: `{class id: name}` for both kinds of boxes, or None (no labels).
        ground_truth_mapping: `{class id: name}` for the true boxes; None: `class_mapping`.
        prediction_mapping: `{class id: name}` for the predictions; None: `class_mapping`.
        legend: Add a "Ground Truth"/"Prediction" legend in the two colours.
        legend_handles: matplotlib handles for a legend of your own (not with `legend`).
        rows: Grid rows; None: `ceil(sqrt(batch))`.
        cols: Grid columns; None: `batch // rows`.
        data_format: `"channels_last"` or `"channels_first"`; None: the configured one.
        **kwargs: Passed on to `plot_image_gallery` (`path`, `show`, `scale`, ...).

    Returns:
        The matplotlib Figure.

    Raises:
        ValueError: `images` not of rank 4, or both `legend` and `legend_handles`.
        ImportError: matplotlib or OpenCV is not installed.
    """
    _pyplot("plot_bounding_box_gallery")
    if legend and legend_handles:
        raise ValueError("plot_bounding_box_gallery: pass either `legend=True` (the default "
                         "two-colour legend) or your own `legend_handles`, not both.")
    images = _channels_last(_batch(images, "plot_bounding_box_gallery"),
                            data_format or image_data_format())
    low, high = value_range
    plotted = np.clip((images.astype("float32") - low) * (255.0 / (high - low)), 0, 255)
    plotted = plotted.astype("uint8")
    for boxes, color, mapping in ((y_true, true_color, ground_truth_mapping),
                                  (y_pred, pred_color, prediction_mapping)):
        if boxes is not None:
            plotted = draw_bounding_boxes(
                plotted, boxes, bounding_box_format, class_mapping=mapping or class_mapping,
                color=color, line_thickness=line_thickness, text_thickness=text_thickness,
                font_scale=font_scale, data_format="channels_last")
    if legend:
        legend_handles = _legend_patches(true_color, pred_color)
    return plot_image_gallery(plotted, value_range=(0, 255), legend_handles=legend_handles,
                              rows=rows, cols=cols, data_format="channels_last", **kwargs)
