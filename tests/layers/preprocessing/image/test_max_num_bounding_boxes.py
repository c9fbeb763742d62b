"""`MaxNumBoundingBoxes` against Keras 3.15.1's: the same dict in, the same boxes
and labels out (cut and padded), batched and one image, at training and inference;
config round trip; errors."""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

rng = np.random.default_rng(3)
IMAGES = rng.random((2, 8, 9, 3)).astype("float32")
BOXES = rng.uniform(0, 8, (2, 3, 4)).astype("float32")
LABELS = np.array([[1, 2, 3], [4, 5, 6]], "int32")


def _data(batched=True):
    if batched:
        return {"images": IMAGES, "bounding_boxes": {"boxes": BOXES, "labels": LABELS}}
    return {"images": IMAGES[0], "bounding_boxes": {"boxes": BOXES[0], "labels": LABELS[0]}}


@pytest.mark.parametrize("max_number", [2, 3, 5], ids=["cut", "same", "pad"])
@pytest.mark.parametrize("batched", [True, False], ids=["batch", "one-image"])
@pytest.mark.parametrize("training", [True, False], ids=["training", "inference"])
def test_boxes_and_labels_match_keras(max_number, batched, training):
    kwargs = dict(max_number=max_number, fill_value=-7, bounding_box_format="xyxy")
    ours = loopax.layers.MaxNumBoundingBoxes(**kwargs)(_data(batched), training=training)
    theirs = keras.layers.MaxNumBoundingBoxes(**kwargs)(_data(batched), training=training)
    for key in ("boxes", "labels"):
        np.testing.assert_array_equal(np.asarray(ours["bounding_boxes"][key]),
                                      np.asarray(theirs["bounding_boxes"][key]))
        assert np.asarray(ours["bounding_boxes"][key]).shape[-1 if key == "labels" else -2] \
            == max_number
    np.testing.assert_array_equal(np.asarray(ours["images"]), IMAGES if batched else IMAGES[0])


def test_labels_and_plain_images_pass_through():
    layer = loopax.layers.MaxNumBoundingBoxes(4)
    out = layer({**_data(), "labels": np.array([0, 1])})
    np.testing.assert_array_equal(np.asarray(out["labels"]), [0, 1])
    np.testing.assert_array_equal(np.asarray(out["bounding_boxes"]["labels"])[:, 3], [-1, -1])
    np.testing.assert_array_equal(np.asarray(layer(IMAGES)), IMAGES)


def test_config_round_trip_keeps_fill_value():
    layer = loopax.layers.MaxNumBoundingBoxes(4, fill_value=-3, bounding_box_format="yxyx")
    config = layer.get_config()
    restored = loopax.layers.MaxNumBoundingBoxes.from_config(config)
    assert (restored.max_number, restored.fill_value, restored.bounding_box_format) == \
        (4, -3, "yxyx")
    keras_config = keras.layers.MaxNumBoundingBoxes(4, bounding_box_format="yxyx").get_config()
    assert {k: config[k] for k in ("max_number", "bounding_box_format", "data_format")} == \
        {k: keras_config[k] for k in ("max_number", "bounding_box_format", "data_format")}
    deserialized = loopax.layers.deserialize(loopax.layers.serialize(layer))
    assert isinstance(deserialized, loopax.layers.MaxNumBoundingBoxes)


def test_output_shape():
    layer = loopax.layers.MaxNumBoundingBoxes(6)
    shape = layer.compute_output_shape({"images": (2, 8, 9, 3), "bounding_boxes": {
        "boxes": (2, 3, 4), "labels": (2, 3)}})
    assert shape["bounding_boxes"] == {"boxes": (2, 6, 4), "labels": (2, 6)}


@pytest.mark.parametrize("make,call,match", [
    pytest.param(lambda: loopax.layers.MaxNumBoundingBoxes(0), None, "max_number",
                 id="max-number-zero"),
    pytest.param(lambda: loopax.layers.MaxNumBoundingBoxes(2, bounding_box_format="corners"),
                 None, "bounding_box_format", id="unknown-format"),
    pytest.param(lambda: loopax.layers.MaxNumBoundingBoxes(2),
                 {"images": IMAGES, "bounding_boxes": {"boxes": BOXES}}, "'labels'",
                 id="boxes-without-labels"),
    pytest.param(lambda: loopax.layers.MaxNumBoundingBoxes(2),
                 {"images": IMAGES, "masks": IMAGES}, "masks", id="unknown-key"),
])
def test_bad_input_is_named(make, call, match):
    with pytest.raises(ValueError, match=match):
        layer = make()
        layer(call)
