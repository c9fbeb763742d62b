"""load_img / img_to_array / array_to_img / save_img / smart_resize, each
compared with Keras 3.15.1's (which run without TensorFlow) on files the tests write."""

import io
import warnings

import numpy as np
import pytest

import loopax

Image = pytest.importorskip("PIL.Image", reason="Pillow is not installed (loopax[images])")


@pytest.fixture(scope="module")
def keras():
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("Keras must use the JAX backend")
    return keras


def write_image(path, size=(13, 9), mode="RGB", seed=0):
    """A random image of `size` (width, height) written to `path`."""
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], channels),
                                                  dtype=np.uint8)
    Image.fromarray(pixels[..., 0] if channels == 1 else pixels, mode).save(path)
    return pixels


@pytest.mark.parametrize("color_mode", ["rgb", "rgba", "grayscale"])
@pytest.mark.parametrize("target_size,interpolation,keep", [
    (None, "nearest", False), ((5, 7), "nearest", False), ((6, 6), "bilinear", False),
    ((6, 4), "bicubic", True)], ids=["original", "nearest-5x7", "bilinear-6x6", "bicubic-crop"])
def test_load_img_and_img_to_array_match_keras(tmp_path, keras, color_mode, target_size,
                                               interpolation, keep):
    path = str(tmp_path / "a.png")
    write_image(path, mode="RGBA")
    args = dict(color_mode=color_mode, target_size=target_size, interpolation=interpolation,
                keep_aspect_ratio=keep)
    ours = loopax.utils.img_to_array(loopax.utils.load_img(path, **args))
    theirs = keras.utils.img_to_array(keras.utils.load_img(path, **args))
    assert ours.dtype == theirs.dtype == np.float32
    np.testing.assert_array_equal(ours, theirs)
    first = loopax.utils.img_to_array(loopax.utils.load_img(path, **args),
                                      data_format="channels_first")
    np.testing.assert_array_equal(
        first, keras.utils.img_to_array(keras.utils.load_img(path, **args),
                                        data_format="channels_first"))


def test_load_img_reads_bytesio_and_pathlib(tmp_path, keras):
    write_image(tmp_path / "a.jpg")
    data = io.BytesIO((tmp_path / "a.jpg").read_bytes())
    np.testing.assert_array_equal(np.asarray(loopax.utils.load_img(tmp_path / "a.jpg")),
                                  np.asarray(keras.utils.load_img(tmp_path / "a.jpg")))
    assert loopax.utils.load_img(data).size == (13, 9)
    with pytest.raises(ValueError, match="color_mode"):
        loopax.utils.load_img(tmp_path / "a.jpg", color_mode="bgr")
    with pytest.raises(ValueError, match="interpolation"):
        loopax.utils.load_img(tmp_path / "a.jpg", target_size=(3, 3), interpolation="cubic")


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("scale", [True, False])
def test_array_to_img_matches_keras(keras, channels, scale):
    x = np.random.default_rng(channels).uniform(-3, 200, (6, 5, channels))
    ours, theirs = (m.utils.array_to_img(x, scale=scale) for m in (loopax, keras))
    assert ours.mode == theirs.mode
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))
    first = np.moveaxis(x, -1, 0)
    np.testing.assert_array_equal(
        np.asarray(loopax.utils.array_to_img(first, data_format="channels_first")),
        np.asarray(keras.utils.array_to_img(first, data_format="channels_first")))


def test_array_to_img_rejects_wrong_ranks_and_channels():
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        loopax.utils.array_to_img(np.zeros((4, 4)))
    with pytest.raises(ValueError, match="channels 2"):
        loopax.utils.array_to_img(np.zeros((4, 4, 2)))


@pytest.mark.parametrize("suffix", ["png", "jpg", "bmp"])
def test_save_img_writes_what_keras_writes(tmp_path, keras, suffix):
    x = np.random.default_rng(1).uniform(0, 255, (8, 6, 3))
    loopax.utils.save_img(str(tmp_path / f"ours.{suffix}"), x)
    keras.utils.save_img(str(tmp_path / f"theirs.{suffix}"), x)
    ours = np.asarray(Image.open(tmp_path / f"ours.{suffix}"))
    np.testing.assert_array_equal(ours, np.asarray(Image.open(tmp_path / f"theirs.{suffix}")))


def test_save_img_rgba_as_jpeg_warns_and_drops_alpha(tmp_path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loopax.utils.save_img(str(tmp_path / "a.jpg"), np.full((4, 4, 4), 100.0), scale=False)
    assert any("alpha" in str(w.message) for w in caught)
    assert Image.open(tmp_path / "a.jpg").mode == "RGB"


@pytest.mark.parametrize("shape,size", [((9, 13, 3), (4, 4)), ((2, 10, 6, 1), (5, 8))],
                         ids=["image-wide", "batch-tall"])
def test_smart_resize_matches_keras(keras, shape, size):
    x = np.random.default_rng(0).uniform(0, 255, shape).astype("float32")
    ours = loopax.preprocessing.image.smart_resize(x, size)
    theirs = keras.preprocessing.image.smart_resize(x, size)
    assert isinstance(ours, np.ndarray) and ours.shape == theirs.shape
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-3)
