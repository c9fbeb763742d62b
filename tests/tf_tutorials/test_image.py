"""tf.image against TensorFlow 2.21's numbers on fixed inputs.

fixtures/image_fixture.npz holds the inputs and TF's outputs; it was written by
fixtures/make_image_fixture.py run with TensorFlow 2.21 (CPU):
    /work/tfvenv/bin/python tests/tf_tutorials/fixtures/make_image_fixture.py
"""

from pathlib import Path

import jax
import numpy as np
import pytest

import loopax.tf as tf

F = np.load(Path(__file__).with_name("fixtures") / "image_fixture.npz")
image, batch, image_u8 = F["image"], F["batch"], F["image_u8"]
big, big2 = F["big"], F["big2"]
im = tf.image

CASES = {
    "flip_left_right": lambda: im.flip_left_right(batch),
    "flip_up_down": lambda: im.flip_up_down(image),
    "transpose": lambda: im.transpose(batch),
    "rot90_1": lambda: im.rot90(batch, k=1),
    "rot90_2": lambda: im.rot90(batch, k=2),
    "rot90_3": lambda: im.rot90(batch, k=3),
    "rgb_to_grayscale": lambda: im.rgb_to_grayscale(batch),
    "rgb_to_grayscale_u8": lambda: im.rgb_to_grayscale(image_u8),
    "grayscale_to_rgb": lambda: im.grayscale_to_rgb(im.rgb_to_grayscale(image)),
    "rgb_to_hsv": lambda: im.rgb_to_hsv(batch),
    "hsv_to_rgb": lambda: im.hsv_to_rgb(batch),
    "rgb_to_yuv": lambda: im.rgb_to_yuv(image),
    "yuv_to_rgb": lambda: im.yuv_to_rgb(image),
    "rgb_to_yiq": lambda: im.rgb_to_yiq(image),
    "yiq_to_rgb": lambda: im.yiq_to_rgb(image),
    "adjust_brightness": lambda: im.adjust_brightness(image, 0.4),
    "adjust_brightness_u8": lambda: im.adjust_brightness(image_u8, 0.1),
    "adjust_contrast": lambda: im.adjust_contrast(batch, 2.0),
    "adjust_contrast_u8": lambda: im.adjust_contrast(image_u8, 0.5),
    "adjust_saturation": lambda: im.adjust_saturation(image, 3.0),
    "adjust_saturation_low": lambda: im.adjust_saturation(batch, 0.3),
    "adjust_saturation_u8": lambda: im.adjust_saturation(image_u8, 1.7),
    "adjust_hue": lambda: im.adjust_hue(image, 0.2),
    "adjust_hue_neg": lambda: im.adjust_hue(batch, -0.45),
    "adjust_gamma": lambda: im.adjust_gamma(image, 2.0, 0.8),
    "adjust_gamma_u8": lambda: im.adjust_gamma(image_u8, 0.5),
    "central_crop": lambda: im.central_crop(image, 0.5),
    "central_crop_batch": lambda: im.central_crop(batch, 0.7),
    "crop_to_bounding_box": lambda: im.crop_to_bounding_box(batch, 2, 3, 4, 5),
    "pad_to_bounding_box": lambda: im.pad_to_bounding_box(image, 1, 2, 12, 16),
    "resize_with_crop_or_pad_small": lambda: im.resize_with_crop_or_pad(image, 5, 7),
    "resize_with_crop_or_pad_big": lambda: im.resize_with_crop_or_pad(batch, 14, 15),
    "resize_with_crop_or_pad_mixed": lambda: im.resize_with_crop_or_pad(image, 13, 6),
    **{f"resize_{way}_{method}": (lambda way=way, method=method: im.resize(
        batch, (14, 17) if way == "up" else (5, 7), method=method))
       for way in ("up", "down")
       for method in ("bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5")},
    "resize_down_bilinear_aa": lambda: im.resize(batch, (4, 5), antialias=True),
    "resize_u8": lambda: im.resize(image_u8, (6, 6)),
    "resize_nearest_u8": lambda: im.resize(image_u8, (6, 6), method="nearest"),
    "resize_preserve": lambda: im.resize(image, (20, 20), preserve_aspect_ratio=True),
    "resize_with_pad": lambda: im.resize_with_pad(image, 16, 16),
    "resize_with_pad_wide": lambda: im.resize_with_pad(batch, 6, 20),
    "convert_u8_to_f32": lambda: im.convert_image_dtype(image_u8, tf.float32),
    "convert_f32_to_u8": lambda: im.convert_image_dtype(image, tf.uint8),
    "convert_f32_to_u8_sat": lambda: im.convert_image_dtype(image * 1.5 - 0.2, tf.uint8,
                                                            saturate=True),
    "convert_u8_to_i32": lambda: im.convert_image_dtype(image_u8, tf.int32),
    "convert_u8_to_u16": lambda: im.convert_image_dtype(image_u8, tf.uint16),
    "per_image_standardization": lambda: im.per_image_standardization(batch),
    "per_image_standardization_u8": lambda: im.per_image_standardization(image_u8),
    "per_image_standardization_flat": lambda: im.per_image_standardization(np.ones((3, 3, 1))),
    "ssim": lambda: im.ssim(big, big2, max_val=1.0),
    "ssim_u8": lambda: im.ssim((big * 255).astype("uint8"), (big2 * 255).astype("uint8"),
                               max_val=255),
    "psnr": lambda: im.psnr(big, big2, max_val=1.0),
    "psnr_u8": lambda: im.psnr((big * 255).astype("uint8"), (big2 * 255).astype("uint8"),
                               max_val=255),
    "extract_patches": lambda: im.extract_patches(batch, [1, 3, 3, 1], [1, 2, 3, 1],
                                                  [1, 1, 1, 1], "VALID"),
    "extract_patches_same": lambda: im.extract_patches(batch, [1, 2, 4, 1], [1, 3, 2, 1],
                                                       [1, 2, 1, 1], "SAME"),
    "image_gradients_dy": lambda: im.image_gradients(batch)[0],
    "image_gradients_dx": lambda: im.image_gradients(batch)[1],
    "total_variation": lambda: im.total_variation(batch),
    "sobel_edges": lambda: im.sobel_edges(batch),
    "png_decoded": lambda: im.decode_png(im.encode_png(image_u8)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_matches_tensorflow(name):
    got = CASES[name]()
    assert isinstance(got, tf.Tensor), type(got)
    want = F[name]
    got = got.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if want.dtype.kind in "iu":
        # float -> int conversions truncate: a value within float32 rounding of an
        # integer may land on either side (TF and XLA round differently in the last bit)
        np.testing.assert_allclose(got.astype("int64"), want.astype("int64"), atol=1)
        assert np.mean(got == want) > 0.97
    else:
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=2e-5)


def test_jpeg_round_trip_is_close_to_tensorflows_decoder():
    # TF decodes its own JPEG; Pillow's decoder (and encoder) may differ by a few levels
    ours = im.decode_jpeg(im.encode_jpeg(image_u8, quality=90)).numpy()
    assert ours.shape == F["jpeg_decoded_by_tf"].shape and ours.dtype == np.uint8
    assert np.abs(ours.astype(int) - F["jpeg_decoded_by_tf"].astype(int)).mean() < 3
    # and Pillow reads TensorFlow's files: PNG exactly, JPEG within a few levels
    np.testing.assert_array_equal(im.decode_png(F["png_bytes"].tobytes()).numpy(), image_u8)
    tf_jpeg = im.decode_image(F["jpeg_bytes"].tobytes(), channels=3).numpy()
    diff = np.abs(tf_jpeg.astype(int) - F["jpeg_decoded_by_tf"].astype(int))
    assert diff.max() <= 6 and diff.mean() < 2


def test_decode_channels_and_dtype():
    png = im.encode_png(image_u8)
    assert im.decode_png(png, channels=1).shape == (9, 12, 1)
    assert im.decode_png(png, channels=4).numpy()[..., 3].min() == 255
    as_float = im.decode_image(png, dtype=tf.float32).numpy()
    np.testing.assert_allclose(as_float, image_u8 / 255.0, rtol=1e-6)
    with pytest.raises(TypeError, match="bytes"):
        im.decode_png(image_u8)
    with pytest.raises(ValueError, match="uint8"):
        im.encode_png(image)


def _flipped_or_not(out, original, axis):
    return [np.array_equal(o, a) or np.array_equal(o, np.flip(a, axis))
            for o, a in zip(out, original)]


def test_stateless_random_ops_repeat_for_a_seed_and_keep_tfs_ranges():
    seeds = [(i, 7) for i in range(12)]
    flips = [im.stateless_random_flip_left_right(batch, seed=s).numpy() for s in seeds]
    assert all(all(_flipped_or_not(f, batch, 1)) for f in flips)
    changed = [not np.array_equal(f[0], batch[0]) for f in flips]
    assert 0 < sum(changed) < len(changed)              # each image flipped with p = 1/2
    np.testing.assert_array_equal(flips[3], im.stateless_random_flip_left_right(
        batch, seed=tf.constant([3, 7])).numpy())       # the seed fixes the result
    ud = im.stateless_random_flip_up_down(batch, seed=(1, 2)).numpy()
    assert all(_flipped_or_not(ud, batch, 0))

    deltas = [float((im.stateless_random_brightness(image, 0.2, seed=s).numpy() - image).mean())
              for s in seeds]
    assert all(-0.2 <= d < 0.2 for d in deltas) and len(set(deltas)) > 6
    mean = image.mean(axis=(0, 1))
    for s in seeds[:4]:
        out = im.stateless_random_contrast(image, 0.2, 0.5, seed=s).numpy()
        factor = (out - mean) / (image - mean)
        assert np.allclose(factor, factor.flat[0], atol=1e-3) and 0.2 <= factor.flat[0] < 0.5
    np.testing.assert_array_equal(im.stateless_random_contrast(image, 0.2, 0.5, seed=(4, 4)),
                                  im.stateless_random_contrast(image, 0.2, 0.5, seed=(4, 4)))

    crop = im.stateless_random_crop(batch, size=(2, 5, 6, 3), seed=(0, 1)).numpy()
    windows = [batch[:, i:i + 5, j:j + 6] for i in range(5) for j in range(7)]
    assert any(np.array_equal(crop, w) for w in windows)
    offsets = {np.flatnonzero([np.array_equal(im.stateless_random_crop(
        batch, (2, 5, 6, 3), seed=s).numpy(), w) for w in windows])[0] for s in seeds}
    assert len(offsets) > 3

    hue = im.stateless_random_hue(image, 0.3, seed=(5, 5)).numpy()
    hsv_in, hsv_out = im.rgb_to_hsv(image).numpy(), im.rgb_to_hsv(hue).numpy()
    shift = (hsv_out[..., 0] - hsv_in[..., 0]) % 1.0
    shift = np.where(shift > 0.5, shift - 1, shift)
    assert np.ptp(shift[hsv_in[..., 1] > 0.2]) < 1e-3 and abs(shift.flat[0]) <= 0.3
    sat = im.stateless_random_saturation(image, 0.5, 0.9, seed=(5, 5)).numpy()
    ratio = im.rgb_to_hsv(sat).numpy()[..., 1] / hsv_in[..., 1]
    assert np.ptp(ratio) < 1e-3 and 0.5 <= ratio.flat[0] < 0.9


def test_stateful_random_ops_follow_tf_random_seeding():
    tf.random.set_seed(3)
    first = [im.random_brightness(image, 0.3, seed=1).numpy() for _ in range(2)]
    tf.random.set_seed(3)
    again = im.random_brightness(image, 0.3, seed=1).numpy()
    np.testing.assert_array_equal(first[0], again)          # repeats after set_seed
    assert not np.array_equal(first[0], first[1])           # the next call differs
    assert abs(float((first[0] - image).mean())) <= 0.3
    out = im.random_flip_left_right(batch).numpy()
    assert all(_flipped_or_not(out, batch, 1))
    assert im.random_crop(image, (4, 4, 3)).shape == (4, 4, 3)
    contrast = im.random_contrast(image, 0.6, 1.4).numpy()
    assert contrast.shape == image.shape
    for fn in (lambda: im.random_saturation(image, 0.5, 1.5),
               lambda: im.random_hue(image, 0.2), lambda: im.random_flip_up_down(image)):
        assert fn().shape == image.shape


def test_random_ops_run_inside_tf_function():
    @tf.function
    def augment(x, seed):
        x = im.stateless_random_flip_left_right(x, seed=seed)
        x = im.stateless_random_brightness(x, 0.1, seed=seed)
        return im.resize(x, (6, 6))

    eager = im.resize(im.stateless_random_brightness(
        im.stateless_random_flip_left_right(batch, seed=(2, 3)), 0.1, seed=(2, 3)), (6, 6))
    np.testing.assert_allclose(augment(batch, tf.constant([2, 3])).numpy(), eager.numpy(),
                               rtol=1e-6)


def test_bad_arguments_name_the_fix():
    with pytest.raises(ValueError, match="central_fraction"):
        im.central_crop(image, 1.5)
    with pytest.raises(ValueError, match="does not fit"):
        im.crop_to_bounding_box(image, 5, 0, 8, 4)
    with pytest.raises(ValueError, match="method='gaussian'.*ResizeMethod"):
        im.resize(image, (4, 4), method="gaussian")
    with pytest.raises(ValueError, match="pair of ints"):
        im.stateless_random_flip_left_right(image, seed=3)
    with pytest.raises(ValueError, match="height, width, channels"):
        im.flip_left_right(image[0])
    with pytest.raises(ValueError, match="floats in"):
        im.rgb_to_hsv(image_u8)
    with pytest.raises(ValueError, match="same shape"):
        im.ssim(big, big2[:1], 1.0)


def test_resize_method_names_and_jit():
    assert im.ResizeMethod.NEAREST_NEIGHBOR == "nearest"
    np.testing.assert_array_equal(
        im.resize(batch, (5, 7), method=im.ResizeMethod.NEAREST_NEIGHBOR).numpy(),
        F["resize_down_nearest"])
    jitted = jax.jit(lambda x: im.adjust_saturation(im.flip_up_down(x), 3.0))(image)
    np.testing.assert_allclose(np.asarray(jitted), np.flip(F["adjust_saturation"], 0),
                               rtol=2e-5, atol=2e-5)
