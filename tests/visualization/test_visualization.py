"""`loopax.visualization` against `keras.visualization` (Keras 3.15.1): masks drawn
on the same arrays compared pixel for pixel; galleries saved to PNG by both compared
pixel for pixel, and the figure's content (axes, titles, the images shown) checked.
Bounding boxes: test_bounding_boxes_drawing.py.
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")
image_io = pytest.importorskip("matplotlib.image")

rng = np.random.default_rng(5)
IMAGES = (rng.random((4, 10, 12, 3)) * 255).astype("float32")
MASKS = rng.integers(-1, 4, (4, 10, 12, 1)).astype("int32")
lv, kv = loopax.visualization, keras.visualization


@pytest.mark.parametrize("kwargs", [
    pytest.param({"num_classes": 4}, id="palette"),
    pytest.param({"num_classes": 4, "blend": False}, id="unblended"),
    pytest.param({"num_classes": 3, "alpha": 0.3,
                  "color_mapping": {0: (255, 0, 0), 1: (0, 255, 0), 2: (0, 0, 255)}},
                 id="colour_mapping-alpha"),
    pytest.param({"num_classes": 5, "ignore_index": 0}, id="ignore_zero"),
])
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_draw_segmentation_masks_matches_keras(kwargs, data_format):
    images, masks = IMAGES, MASKS
    if data_format == "channels_first":
        images, masks = images.transpose(0, 3, 1, 2), masks.transpose(0, 3, 1, 2)
    ours = lv.draw_segmentation_masks(images, masks, data_format=data_format, **kwargs)
    theirs = np.asarray(kv.draw_segmentation_masks(images, masks, data_format=data_format,
                                                   **kwargs))
    assert ours.dtype == theirs.dtype and ours.shape == (4, 10, 12, 3)
    np.testing.assert_array_equal(ours, theirs)


def test_draw_segmentation_masks_default_num_classes_draws_the_largest_class():
    # Keras 3.15.1 infers num_classes = max id, so class 3 stays undrawn; loopax max id + 1.
    ours = lv.draw_segmentation_masks(IMAGES, MASKS, blend=False)
    np.testing.assert_array_equal(ours, lv.draw_segmentation_masks(IMAGES, MASKS,
                                                                   num_classes=4, blend=False))
    palette_3 = np.array([(3 * p) % 255 for p in (2**25 - 1, 2**15 - 1, 2**21 - 1)])
    np.testing.assert_array_equal(ours[MASKS[..., 0] == 3], np.broadcast_to(
        palette_3, ours[MASKS[..., 0] == 3].shape))
    with pytest.raises(TypeError, match="integer"):
        lv.draw_segmentation_masks(IMAGES, MASKS.astype("float32"))
    with pytest.raises(ValueError, match="batch"):
        lv.draw_segmentation_masks(IMAGES[0], MASKS[0])


def _saved(module, tmp_path, name, function, *args, **kwargs):
    path = str(tmp_path / f"{module.__name__}_{name}.png")
    getattr(module.visualization, function)(*args, path=path, **kwargs)
    return image_io.imread(path)


@pytest.mark.parametrize("function,args,kwargs", [
    pytest.param("plot_image_gallery", (IMAGES,), {}, id="image_gallery"),
    pytest.param("plot_image_gallery", (IMAGES / 255,),
                 {"y_true": np.array([0, 1, 1, 0]), "y_pred": np.array([1, 1, 0, 0]),
                  "label_map": {0: "cat", 1: "dog"}, "value_range": (0, 1), "rows": 1,
                  "cols": 4}, id="image_gallery-labels"),
    pytest.param("plot_segmentation_mask_gallery", (IMAGES[:2],),
                 {"num_classes": 4, "y_true": MASKS[:2], "y_pred": MASKS[2:]},
                 id="mask_gallery"),
])
def test_saved_galleries_equal_keras(tmp_path, function, args, kwargs):
    ours = _saved(loopax, tmp_path, "ours", function, *args, **kwargs)
    theirs = _saved(keras, tmp_path, "theirs", function, *args, **kwargs)
    assert ours.shape == theirs.shape and ours.shape[0] > 20
    np.testing.assert_allclose(ours, theirs, atol=2 / 255)


def test_gallery_figure_content(tmp_path):
    fig = lv.plot_image_gallery(IMAGES, y_true=np.array([0, 1, 2, 0]),
                                label_map={0: "a", 1: "b"}, path=str(tmp_path / "g.png"))
    axes = fig.get_axes()
    assert len(axes) == 4  # 2 x 2
    assert [a.get_title() for a in axes] == ["Label: a", "Label: b", "Label: Unknown",
                                             "Label: a"]
    np.testing.assert_array_equal(axes[1].images[0].get_array(), IMAGES[1].astype("uint8"))
    fig = lv.plot_segmentation_mask_gallery(IMAGES[:3], 4, y_true=MASKS[:3],
                                            path=str(tmp_path / "m.png"))
    assert len(fig.get_axes()) == 6  # one row per image: the image, its true mask
    drawn = lv.draw_segmentation_masks(IMAGES[:3], MASKS[:3], num_classes=4)
    np.testing.assert_array_equal(fig.get_axes()[3].images[0].get_array(), drawn[1])
    with pytest.raises(ValueError, match="label_map"):
        lv.plot_image_gallery(IMAGES, y_true=np.zeros(4))
    with pytest.raises(ValueError, match="not both"):
        lv.plot_image_gallery(IMAGES, path=str(tmp_path / "x.png"), show=True)
