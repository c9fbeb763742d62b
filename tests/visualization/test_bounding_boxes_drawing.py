"""`loopax.visualization.draw_bounding_boxes`/`plot_bounding_box_gallery` against Keras 3.15.1:
both draw with OpenCV, so the same images and boxes give the same pixels; the gallery's
figure shows the same images as Keras's."""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest

import loopax

pytest.importorskip("cv2")
keras = pytest.importorskip("keras")
plt = pytest.importorskip("matplotlib.pyplot")

rng = np.random.default_rng(7)
HEIGHT, WIDTH = 60, 80
IMAGES = (rng.random((3, HEIGHT, WIDTH, 3)) * 255).astype("float32")
XYXY = np.array([[[5, 30, 40, 55], [20, 5, 70, 25.7], [0, 0, 10, 10]],
                 [[10.4, 35, 78, 58], [3, 3, 30, 20], [50, 40, 79, 59]],
                 [[1, 1, 79, 59], [30, 30, 31, 31], [60, 2, 75, 50]]], "float32")
LABELS = np.array([[0, 1, -1], [2, 0, 1], [1, -1, 2]], "int32")
CONFIDENCES = rng.random((3, 3)).astype("float32")
MAPPING = {0: "cat", 1: "dog", 2: "bird"}
lv, kv = loopax.visualization, keras.visualization


def _in_format(fmt):
    """XYXY in `fmt`, converted by Keras (an independent converter)."""
    return np.asarray(keras.utils.bounding_boxes.convert_format(
        XYXY.copy(), "xyxy", fmt, height=HEIGHT, width=WIDTH))


@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "rel_xyxy", "center_xywh", "yxyx"])
@pytest.mark.parametrize("kwargs", [
    pytest.param({}, id="no_labels"),
    pytest.param({"class_mapping": MAPPING}, id="class_mapping"),
    pytest.param({"class_mapping": {1: "dog"}, "color": (255, 0, 0), "line_thickness": 1,
                  "text_thickness": 2, "font_scale": 0.5}, id="styled"),
])
def test_draw_bounding_boxes_matches_keras(fmt, kwargs):
    boxes = {"boxes": _in_format(fmt), "labels": LABELS}
    ours = lv.draw_bounding_boxes(IMAGES, boxes, fmt, **kwargs)
    theirs = kv.draw_bounding_boxes(IMAGES, boxes, fmt, **kwargs)
    assert ours.dtype == np.uint8 and ours.shape == IMAGES.shape
    np.testing.assert_array_equal(ours, theirs)
    assert (ours != IMAGES.astype("uint8")).any()  # boxes were drawn


def test_confidences_and_unit_range_images_match_keras():
    boxes = {"boxes": XYXY, "labels": LABELS, "confidences": CONFIDENCES}
    for images in (IMAGES / 255.0, IMAGES.astype("uint8")):
        np.testing.assert_array_equal(
            lv.draw_bounding_boxes(images, boxes, "xyxy", class_mapping=MAPPING),
            kv.draw_bounding_boxes(images, boxes, "xyxy", class_mapping=MAPPING))


def test_channels_first_draws_as_channels_last():
    # Keras 3.15.1 hands the (channels, height, width) image to OpenCV as is and fails;
    # loopax draws the same pixels as Keras does channels last, returned channels first.
    boxes = {"boxes": _in_format("rel_xyxy"), "labels": LABELS}
    ours = lv.draw_bounding_boxes(IMAGES.transpose(0, 3, 1, 2), boxes, "rel_xyxy",
                                  class_mapping=MAPPING, data_format="channels_first")
    theirs = kv.draw_bounding_boxes(IMAGES, boxes, "rel_xyxy", class_mapping=MAPPING)
    np.testing.assert_array_equal(ours, np.asarray(theirs).transpose(0, 3, 1, 2))


def test_input_is_left_unchanged():
    images = IMAGES.astype("uint8")
    before = images.copy()
    lv.draw_bounding_boxes(images, {"boxes": XYXY, "labels": LABELS}, "xyxy")
    np.testing.assert_array_equal(images, before)


GALLERY_CASES = [
    pytest.param({"y_true": {"boxes": XYXY, "labels": LABELS}}, id="y_true"),
    pytest.param({"y_true": {"boxes": XYXY, "labels": LABELS},
                  "y_pred": {"boxes": XYXY + 3, "labels": LABELS[::-1],
                             "confidences": CONFIDENCES},
                  "class_mapping": MAPPING, "legend": True, "rows": 1, "cols": 3},
                 id="y_true-y_pred-labels-legend"),
    pytest.param({"y_pred": {"boxes": XYXY, "labels": LABELS}, "prediction_mapping": MAPPING,
                  "line_thickness": 1, "font_scale": 0.4}, id="y_pred-prediction_mapping"),
]


def _figure_images(figure):
    return [axis.images[0].get_array() for axis in figure.get_axes() if axis.images]


@pytest.mark.parametrize("kwargs", GALLERY_CASES)
@pytest.mark.parametrize("data_format", ["channels_last", "channels_first"])
def test_gallery_shows_the_images_keras_shows(kwargs, data_format):
    images = IMAGES.transpose(0, 3, 1, 2) if data_format == "channels_first" else IMAGES
    plt.close("all")
    kv.plot_bounding_box_gallery(images, "xyxy", data_format=data_format, show=False,
                                 **kwargs)
    theirs = plt.gcf()
    ours = lv.plot_bounding_box_gallery(images, "xyxy", data_format=data_format, show=False,
                                        **kwargs)
    assert ours is not theirs and len(ours.get_axes()) == len(theirs.get_axes())
    ours_shown, theirs_shown = _figure_images(ours), _figure_images(theirs)
    assert len(ours_shown) == len(theirs_shown) >= 2  # 3 images: 2 x 1 unless rows/cols
    for mine, keras_image in zip(ours_shown, theirs_shown):
        np.testing.assert_array_equal(mine, keras_image)
    assert [len(f.legends) for f in (ours, theirs)] == [int(bool(kwargs.get("legend")))] * 2
    for figure in (ours, theirs):
        for legend in figure.legends:
            assert [t.get_text() for t in legend.get_texts()] == ["Ground Truth", "Prediction"]
    plt.close("all")


def test_gallery_value_range_is_applied_before_drawing():
    # Images in 0..1: the boxes are drawn on the images mapped to 0..255, as with 0..255 input.
    boxes = {"boxes": XYXY, "labels": LABELS}
    plt.close("all")
    unit = lv.plot_bounding_box_gallery(IMAGES / 255.0, "xyxy", y_true=boxes,
                                        value_range=(0, 1), show=False)
    expected = lv.draw_bounding_boxes(np.clip(IMAGES / 255.0 * 255.0, 0, 255).astype("uint8"),
                                      boxes, "xyxy", color=(0, 188, 212))
    for shown, drawn in zip(_figure_images(unit), expected):
        np.testing.assert_array_equal(shown, drawn)
    plt.close("all")


BOXES = {"boxes": XYXY, "labels": LABELS}


@pytest.mark.parametrize("call,error,match", [
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES[0], BOXES, "xyxy"), ValueError,
                 "`images`", id="unbatched_images"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, XYXY, "xyxy"), TypeError,
                 "`bounding_boxes` must be a dict", id="boxes_not_dict"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, {"boxes": XYXY}, "xyxy"), ValueError,
                 "'labels'", id="missing_labels"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, {"boxes": XYXY[0], "labels": LABELS},
                                                "xyxy"), ValueError,
                 r"bounding_boxes\['boxes'\]", id="unbatched_boxes"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, {"boxes": XYXY, "labels": LABELS[:, :2]},
                                                "xyxy"), ValueError,
                 r"bounding_boxes\['labels'\]", id="labels_shape"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, BOXES, "xyzz"), ValueError,
                 "`bounding_box_format`", id="unknown_format"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, BOXES, "xyxy", color="red"),
                 ValueError, "`color`", id="color_name"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, BOXES, "xyxy", line_thickness=1.5),
                 TypeError, "`line_thickness`", id="float_thickness"),
    pytest.param(lambda: lv.draw_bounding_boxes(IMAGES, BOXES, "xyxy", data_format="NHWC"),
                 ValueError, "`data_format`", id="data_format"),
    pytest.param(lambda: lv.plot_bounding_box_gallery(
        IMAGES, "xyxy", y_true=BOXES, legend=True, legend_handles=["x"]), ValueError,
        "not both", id="legend_and_handles"),
])
def test_bad_arguments_name_the_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_without_opencv_the_error_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "cv2", None)
    with pytest.raises(ImportError, match=r"pip install 'loopax\[vision\]'.*opencv-python"):
        lv.draw_bounding_boxes(IMAGES, BOXES, "xyxy")
    with pytest.raises(ImportError, match="opencv-python-headless"):
        lv.plot_bounding_box_gallery(IMAGES, "xyxy", y_true=BOXES, show=False)
