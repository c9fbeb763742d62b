"""`loopax.utils.bounding_boxes` against `keras.utils.bounding_boxes` (Keras 3.15.1):
every function on the same boxes, every format pair, batched and unbatched.

Tolerance: rtol 1e-5 / atol 1e-4 on pixel coordinates (float32).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import itertools

import numpy as np
import pytest

import loopax
from loopax.utils import bounding_boxes as lb

keras = pytest.importorskip("keras")
kb = keras.utils.bounding_boxes

FORMATS = ("xyxy", "yxyx", "xywh", "center_xywh", "center_yxhw", "rel_xyxy", "rel_yxyx",
           "rel_xywh", "rel_center_xywh")
HEIGHT, WIDTH = 40, 60


def _random_xyxy(shape, seed=0):
    """xyxy boxes `shape + (4,)` with x1 < x2 and y1 < y2 inside a 60×40 image (and some
    beyond its edges)."""
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-10, WIDTH + 10, shape + (2,)), axis=-1)
    y = np.sort(rng.uniform(-10, HEIGHT + 10, shape + (2,)), axis=-1)
    return np.stack([x[..., 0], y[..., 0], x[..., 1], y[..., 1]], -1).astype("float32")


BOXES = _random_xyxy((2, 5))


def _close(actual, expected, atol=1e-4):
    np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-5, atol=atol)


def _in_format(fmt, boxes=BOXES):
    return np.array(kb.convert_format(boxes, "xyxy", fmt, height=HEIGHT, width=WIDTH))


@pytest.mark.parametrize("source,target", list(itertools.product(FORMATS, FORMATS)),
                         ids=lambda f: f)
def test_convert_format_matches_keras(source, target):
    boxes = _in_format(source)
    _close(lb.convert_format(boxes, source, target, height=HEIGHT, width=WIDTH),
           kb.convert_format(boxes, source, target, height=HEIGHT, width=WIDTH))


def test_convert_format_round_trips_and_converts_dicts():
    boxes = {"boxes": BOXES[0], "labels": np.arange(5)}
    out = lb.convert_format(boxes, "xyxy", "center_yxhw")
    np.testing.assert_array_equal(out["labels"], np.arange(5))
    _close(lb.convert_format(out["boxes"], "center_yxhw", "xyxy"), BOXES[0])
    _close(out["boxes"][:, 2], BOXES[0][:, 3] - BOXES[0][:, 1])  # the height


@pytest.mark.parametrize("call,match", [
    pytest.param(lambda: lb.convert_format(BOXES, "xyxy", "rel_xyxy"), "height",
                 id="relative-without-size"),
    pytest.param(lambda: lb.convert_format(BOXES, "xyxy", "corners"), "target",
                 id="unknown-format"),
    pytest.param(lambda: lb.convert_format(BOXES[..., :3], "xyxy", "xywh"), "last dimension",
                 id="not-4-coordinates"),
])
def test_convert_format_errors_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize("fmt", ["xyxy", "rel_xyxy"])
def test_clip_to_image_size_matches_keras(fmt):
    boxes = _in_format(fmt)
    labels = np.array([[1, 2, 3, 4, 5], [6, 7, 8, 9, 0]])
    boxes[0, 0] = _in_format(fmt, np.array([[-9.0, -5.0, -1.0, 3.0]], "float32"))[0]
    ours = lb.clip_to_image_size({"boxes": boxes, "labels": labels}, HEIGHT, WIDTH, fmt)
    theirs = kb.clip_to_image_size({"boxes": boxes, "labels": labels}, HEIGHT, WIDTH, fmt)
    _close(ours["boxes"], theirs["boxes"])
    np.testing.assert_array_equal(ours["labels"], theirs["labels"])
    assert ours["labels"][0, 0] == -1  # the box left of the image has no area left


def test_clip_to_image_size_other_formats_clip_in_xyxy():
    # Keras 3.15.1 handles only xyxy/rel_xyxy; loopax converts, clips and converts back.
    boxes = _in_format("center_xywh")
    ours = lb.clip_to_image_size({"boxes": boxes}, HEIGHT, WIDTH, "center_xywh")
    expected = kb.clip_to_image_size({"boxes": BOXES}, HEIGHT, WIDTH, "xyxy")["boxes"]
    _close(lb.convert_format(ours["boxes"], "center_xywh", "xyxy"), expected)


@pytest.mark.parametrize("boxes", [BOXES, BOXES[0]], ids=["batched", "unbatched"])
def test_crop_and_pad_match_keras(boxes):
    _close(lb.crop(boxes, top=5, left=8, height=20, width=30),
           kb.crop(boxes, top=5, left=8, height=20, width=30))
    _close(lb.pad(boxes, top=5, left=8), kb.pad(boxes, top=5, left=8))


def test_crop_in_another_format_equals_crop_in_xyxy():
    ours = lb.crop(_in_format("xywh"), 5, 8, 20, 30, bounding_box_format="xywh")
    _close(lb.convert_format(ours, "xywh", "xyxy"), kb.crop(BOXES, 5, 8, 20, 30))
    with pytest.raises(ValueError, match="convert_format"):
        lb.crop(_in_format("rel_xyxy"), 5, 8, 20, 30, bounding_box_format="rel_xyxy")


AFFINE_CASES = {
    "rotation": dict(angle=[30.0, -45.0], translate_x=[0.0, 0.0], translate_y=[0.0, 0.0],
                     scale=[1.0, 1.0], shear_x=[0.0, 0.0], shear_y=[0.0, 0.0]),
    "everything": dict(angle=[12.0, -70.0], translate_x=[0.1, -0.2], translate_y=[-0.05, 0.3],
                       scale=[1.2, 0.7], shear_x=[10.0, -5.0], shear_y=[-8.0, 20.0]),
}


@pytest.mark.parametrize("case", AFFINE_CASES, ids=str)
@pytest.mark.parametrize("center", [None, (0.3, 0.8)], ids=["middle", "off-centre"])
def test_affine_transform_matches_keras(case, center):
    params = {k: np.asarray(v, "float32") for k, v in AFFINE_CASES[case].items()}
    centre = {} if center is None else {"center_x": center[0], "center_y": center[1]}
    _close(lb.affine_transform(BOXES, height=HEIGHT, width=WIDTH, **params, **centre),
           kb.affine_transform(BOXES, height=HEIGHT, width=WIDTH, **params, **centre),
           atol=1e-3)


def test_affine_transform_unbatched_and_scalar_parameters():
    # Keras 3.15.1 needs (batch, N, 4) boxes and (batch,) parameters; loopax also takes
    # (N, 4) and numbers. A quarter turn of a centred box swaps its width and height.
    box = np.array([[20.5, 14.5, 38.5, 24.5]], "float32")  # centred: (29.5, 19.5)
    out = np.asarray(lb.affine_transform(box, 90.0, 0.0, 0.0, 1.0, 0.0, 0.0, HEIGHT, WIDTH))
    _close(out, [[24.5, 10.5, 34.5, 28.5]])


BATCH_SHAPES = {"MxN": ((5,), (4,)), "BMxN": ((2, 5), (4,)), "MxBN": ((5,), (2, 4)),
                "BMxBN": ((2, 5), (2, 4))}


@pytest.mark.parametrize("shapes", BATCH_SHAPES, ids=str)
@pytest.mark.parametrize("fmt", ["xyxy", "center_yxhw", "rel_xywh"])
def test_compute_iou_matches_keras(shapes, fmt):
    shape1, shape2 = BATCH_SHAPES[shapes]
    boxes1, boxes2 = _in_format(fmt, _random_xyxy(shape1, 1)), _in_format(fmt,
                                                                           _random_xyxy(shape2, 2))
    image_shape = (HEIGHT, WIDTH, 3)
    ours = lb.compute_iou(boxes1, boxes2, fmt, image_shape=image_shape)
    _close(ours, kb.compute_iou(boxes1, boxes2, fmt, image_shape=image_shape))
    assert 0 < np.asarray(ours).max() <= 1


def test_compute_iou_masks_padding_boxes_like_keras():
    boxes1, boxes2 = _random_xyxy((2, 5), 1), _random_xyxy((2, 4), 2)
    boxes1[0, 1] = -1.0
    boxes2[1, 3] = -1.0
    ours = lb.compute_iou(boxes1, boxes2, "xyxy", use_masking=True, mask_val=-7)
    _close(ours, kb.compute_iou(boxes1, boxes2, "xyxy", use_masking=True, mask_val=-7))
    assert (np.asarray(ours)[0, 1] == -7).all() and (np.asarray(ours)[1, :, 3] == -7).all()


@pytest.mark.parametrize("fmt", ["xyxy", "xywh", "center_yxhw"])
def test_compute_ciou_matches_keras(fmt):
    boxes1, boxes2 = _in_format(fmt, _random_xyxy((3, 6), 3)), _in_format(
        fmt, _random_xyxy((3, 6), 4))
    boxes2[0, 0] = boxes1[0, 0]  # identical boxes: CIoU 1
    ours = np.asarray(lb.compute_ciou(boxes1, boxes2, fmt))
    _close(ours, kb.compute_ciou(boxes1, boxes2, fmt))
    _close(ours[0, 0], 1.0, atol=1e-5)


@pytest.mark.parametrize("encoding", ["center_yxhw", "center_xywh"])
@pytest.mark.parametrize("variance", [None, [0.1, 0.1, 0.2, 0.2]], ids=["plain", "variance"])
def test_encode_and_decode_deltas_match_keras(encoding, variance):
    anchors = _random_xyxy((5,), 5)
    boxes = _in_format("xywh", _random_xyxy((2, 5), 6))
    args = dict(anchor_format="xyxy", box_format="xywh", variance=variance)
    ours = lb.encode_box_to_deltas(anchors, boxes, encoding_format=encoding, **args)
    _close(ours, kb.encode_box_to_deltas(anchors, boxes, encoding_format=encoding, **args))
    decoded = lb.decode_deltas_to_boxes(anchors, ours, encoded_format=encoding, **args)
    _close(decoded, kb.decode_deltas_to_boxes(anchors, np.asarray(ours),
                                              encoded_format=encoding, **args))
    _close(decoded, boxes, atol=1e-3)  # decoding undoes encoding


def test_decode_deltas_per_pyramid_level():
    anchors = {"P3": _random_xyxy((4,), 7), "P4": _random_xyxy((2,), 8)}
    deltas = {k: np.full(v.shape, 0.1, "float32") for k, v in anchors.items()}
    ours = lb.decode_deltas_to_boxes(anchors, deltas, "xyxy", "rel_xyxy",
                                     image_shape=(HEIGHT, WIDTH, 3))
    theirs = kb.decode_deltas_to_boxes(anchors, deltas, "xyxy", "rel_xyxy",
                                       image_shape=(HEIGHT, WIDTH, 3))
    assert set(ours) == {"P3", "P4"}
    for level in anchors:
        _close(ours[level], theirs[level])


@pytest.mark.parametrize("call,match", [
    pytest.param(lambda: lb.encode_box_to_deltas(BOXES[0], BOXES[0], "xyxy", "xyxy",
                                                 variance=[1.0, 1.0]), "variance",
                 id="variance-not-4"),
    pytest.param(lambda: lb.decode_deltas_to_boxes(BOXES[0], BOXES[0], "xyxy", "xyxy",
                                                   encoded_format="xyxy"), "encoded_format",
                 id="encoded-format"),
    pytest.param(lambda: lb.compute_iou(BOXES, BOXES, "rel_xyxy"), "image_shape",
                 id="iou-relative-without-image-shape"),
    pytest.param(lambda: lb.clip_to_image_size({"boxes": BOXES}, bounding_box_format="xyxy"),
                 "height", id="clip-without-size"),
])
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_public_module_is_reachable_as_in_keras():
    assert loopax.utils.bounding_boxes.compute_iou is lb.compute_iou
