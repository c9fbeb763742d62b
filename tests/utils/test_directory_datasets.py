"""image_/text_/audio_dataset_from_directory on directory trees the tests write:
file order, labels, class_names, seeded shuffle and validation_split/subset
compared with Keras 3.15.1's own directory indexing (Keras's tf.data datasets
need TensorFlow; its indexing and its non-TF image loader do not)."""

import pathlib
import wave

import numpy as np
import pytest

import loopax


@pytest.fixture(scope="module")
def keras_dataset_utils():
    keras = pytest.importorskip("keras")
    if keras.backend.backend() != "jax":
        pytest.skip("Keras must use the JAX backend")
    from keras.src.utils import dataset_utils
    return dataset_utils


def keras_files(dataset_utils, directory, formats, labels="inferred", class_names=None,
                shuffle=True, seed=None, validation_split=None, subset=None):
    """Keras's file order and labels for these arguments."""
    paths, labels, names = dataset_utils.index_directory(
        str(directory), labels, formats=formats, class_names=class_names, shuffle=shuffle,
        seed=seed, verbose=False)
    paths, labels = dataset_utils.get_training_or_validation_split(paths, labels,
                                                                   validation_split, subset)
    return list(paths), labels, names


def make_text_tree(root):
    """classes b_neg (3 files, one nested), a_pos (4 files), plus files Keras ignores."""
    texts = {}
    for cls, names in {"b_neg": ["x.txt", "sub/y.txt", "a.TXT"],
                       "a_pos": ["3.txt", "1.txt", "2.txt", "10.txt"]}.items():
        for name in names:
            path = root / cls / name
            path.parent.mkdir(parents=True, exist_ok=True)
            texts[str(path)] = f"{cls} {name} ünïcode"
            path.write_text(texts[str(path)], encoding="utf-8")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "h.txt").write_text("hidden")
    (root / "a_pos" / "skip.csv").write_text("not text")
    (root / "top.txt").write_text("top level")
    return texts


@pytest.mark.parametrize("shuffle,seed", [(False, None), (True, 7), (True, 123)],
                         ids=["sorted", "seed-7", "seed-123"])
def test_text_files_order_labels_and_class_names_match_keras(tmp_path, keras_dataset_utils,
                                                             shuffle, seed):
    texts = make_text_tree(tmp_path)
    ds = loopax.utils.text_dataset_from_directory(tmp_path, batch_size=3, shuffle=shuffle,
                                                  seed=seed, verbose=False)
    want_paths, want_labels, want_names = keras_files(keras_dataset_utils, tmp_path, (".txt",),
                                                      shuffle=shuffle, seed=seed)
    assert ds.class_names == want_names == ["a_pos", "b_neg"]
    assert ds.file_paths == want_paths
    xs, ys = zip(*ds)
    assert [len(x) for x in xs] == [3, 3, 1]
    np.testing.assert_array_equal(np.concatenate(ys), want_labels)
    assert list(np.concatenate(xs)) == [texts[p].encode() for p in want_paths]   # bytes, as Keras


@pytest.mark.parametrize("subset", ["training", "validation"])
def test_validation_split_subsets_match_keras_and_do_not_overlap(tmp_path, keras_dataset_utils,
                                                                 subset):
    make_text_tree(tmp_path)
    ds = loopax.utils.text_dataset_from_directory(tmp_path, validation_split=0.3, subset=subset,
                                                  seed=5, verbose=False)
    want_paths, want_labels, _ = keras_files(keras_dataset_utils, tmp_path, (".txt",), seed=5,
                                             validation_split=0.3, subset=subset)
    assert ds.file_paths == want_paths
    np.testing.assert_array_equal(ds[0][1], want_labels)
    train, val = loopax.utils.text_dataset_from_directory(
        tmp_path, validation_split=0.3, subset="both", seed=5, verbose=False)
    assert len(train.file_paths) == 5 and len(val.file_paths) == 2   # int(0.3 * 7) = 2
    assert not set(train.file_paths) & set(val.file_paths)


def test_labels_modes_explicit_labels_and_class_names(tmp_path, keras_dataset_utils):
    make_text_tree(tmp_path)
    ds = loopax.utils.text_dataset_from_directory(tmp_path, label_mode="categorical",
                                                  shuffle=False, verbose=False)
    _, want, _ = keras_files(keras_dataset_utils, tmp_path, (".txt",), shuffle=False)
    np.testing.assert_array_equal(ds[0][1], np.eye(2, dtype="float32")[want])
    ds = loopax.utils.text_dataset_from_directory(tmp_path, label_mode="binary", shuffle=False,
                                                  verbose=False)
    assert ds[0][1].shape == (7, 1) and ds[0][1].dtype == np.float32
    ds = loopax.utils.text_dataset_from_directory(tmp_path, class_names=["b_neg"],
                                                  shuffle=False, verbose=False)
    assert ds.class_names == ["b_neg"] and len(ds.file_paths) == 3
    ds = loopax.utils.text_dataset_from_directory(tmp_path, labels=None, shuffle=False,
                                                  verbose=False)
    assert ds.class_names is None and isinstance(ds[0], np.ndarray)
    want_paths, _, _ = keras_files(keras_dataset_utils, tmp_path, (".txt",), labels=None,
                                   shuffle=False)
    assert ds.file_paths == want_paths   # the whole tree: top.txt and .hidden/ too
    assert len(want_paths) == 9
    explicit = [0, 1, 1, 0, 1, 0, 1, 1, 0]
    ds = loopax.utils.text_dataset_from_directory(tmp_path, labels=explicit, shuffle=False,
                                                  verbose=False)
    want_paths, _, names = keras_files(keras_dataset_utils, tmp_path, (".txt",),
                                       labels=explicit, shuffle=False)
    assert ds.file_paths == want_paths and ds.class_names == names == ["0", "1"]
    np.testing.assert_array_equal(ds[0][1], explicit)


def test_max_length_cuts_the_text(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.txt").write_text("abcdefghij")
    ds = loopax.utils.text_dataset_from_directory(tmp_path, max_length=4, verbose=False)
    assert ds[0][0][0] == "abcd"


@pytest.mark.parametrize("kwargs,match", [
    (dict(label_mode="sparse"), "label_mode"),
    (dict(labels="infer"), "labels"),
    (dict(labels=[0, 1], class_names=["a"]), "class_names"),
    (dict(class_names=["nope"]), "class_names"),
    (dict(validation_split=0.2), "subset"),
    (dict(validation_split=0.2, subset="training"), "seed"),
    (dict(validation_split=1.5, subset="training", seed=1), "validation_split"),
    (dict(subset="train", validation_split=0.2, seed=1), "subset"),
    (dict(labels=[0, 1]), "one label per file"),
    (dict(label_mode="binary", class_names=None), None),
], ids=["label_mode", "labels-string", "labels-and-class_names", "unknown-class",
        "split-without-subset", "split-without-seed", "split-out-of-range", "bad-subset",
        "labels-count", "binary-needs-2-classes"])
def test_bad_arguments_name_the_argument_and_the_fix(tmp_path, kwargs, match):
    make_text_tree(tmp_path)
    (tmp_path / "c_third").mkdir()
    (tmp_path / "c_third" / "z.txt").write_text("z")
    with pytest.raises(ValueError, match=match or "exactly 2 classes"):
        loopax.utils.text_dataset_from_directory(tmp_path, verbose=False, **kwargs)


# ---------------------------------------------------------------- images

@pytest.fixture
def pil():
    return pytest.importorskip("PIL.Image", reason="Pillow is not installed (loopax[images])")


def make_image_tree(root, pil):
    rng = np.random.default_rng(0)
    for cls, names in {"dogs": ["d1.png", "d2.JPG", "deep/d3.bmp"],
                       "cats": ["c1.png", "c2.gif"]}.items():
        for i, name in enumerate(names):
            path = root / cls / name
            path.parent.mkdir(parents=True, exist_ok=True)
            size = (10 + 3 * i, 8 + i)
            pil.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path)
    (root / "cats" / "readme.txt").write_text("not an image")


IMAGE_CASES = [
    ("rgb", False, False, "bilinear", (6, 5)), ("grayscale", True, False, "bilinear", (6, 5)),
    ("rgba", False, True, "bilinear", (6, 5)), ("rgb", False, False, "bilinear", (20, 23)),
    ("rgb", True, False, "nearest", (7, 19)), ("rgb", False, True, "nearest", (12, 4)),
    ("rgb", False, False, "bicubic", (9, 9))]


@pytest.mark.parametrize("color_mode,crop,pad,interpolation,size", IMAGE_CASES,
                         ids=["rgb-down", "grayscale-crop", "rgba-pad", "rgb-up",
                              "nearest-crop", "nearest-pad", "bicubic"])
def test_images_match_keras_loader_and_order(tmp_path, pil, keras_dataset_utils, color_mode,
                                             crop, pad, interpolation, size):
    from keras.src.utils.image_dataset_utils import _load_image_grain

    make_image_tree(tmp_path, pil)
    ds = loopax.utils.image_dataset_from_directory(
        tmp_path, color_mode=color_mode, image_size=size, batch_size=2, seed=11,
        crop_to_aspect_ratio=crop, pad_to_aspect_ratio=pad, interpolation=interpolation,
        verbose=False)
    want_paths, want_labels, names = keras_files(
        keras_dataset_utils, tmp_path, (".bmp", ".gif", ".jpeg", ".jpg", ".png"), seed=11)
    assert ds.class_names == names == ["cats", "dogs"] and ds.file_paths == want_paths
    channels = {"rgb": 3, "grayscale": 1, "rgba": 4}[color_mode]
    xs, ys = zip(*ds)
    x = np.concatenate(xs)
    assert x.shape == (5, *size, channels) and x.dtype == np.float32
    np.testing.assert_array_equal(np.concatenate(ys), want_labels)
    for got, path in zip(x, want_paths):
        want = np.asarray(_load_image_grain(path, size, channels, interpolation,
                                            "channels_last", crop, pad))
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-3)


def test_image_dataset_trains_with_fit_and_reshuffles_each_epoch(tmp_path, pil):
    make_image_tree(tmp_path, pil)
    ds = loopax.utils.image_dataset_from_directory(tmp_path, image_size=8, batch_size=2,
                                                   seed=1, label_mode="categorical",
                                                   verbose=False)
    first = [ds[i][1] for i in range(len(ds))]
    model = loopax.Sequential([loopax.Input((8, 8, 3)), loopax.layers.Rescaling(1 / 255),
                               loopax.layers.Flatten(), loopax.layers.Dense(2, "softmax")])
    model.compile("adam", "categorical_crossentropy")
    history = model.fit(ds, epochs=2, verbose=0)
    assert np.isfinite(history.history["loss"]).all()
    orders = []
    for epoch in range(3):
        ds.on_epoch_end()
        orders.append(tuple(np.concatenate([ds[i][1].argmax(-1) for i in range(len(ds))])))
    assert sorted(orders[0]) == sorted(np.concatenate(first).argmax(-1))
    assert len(set(orders)) > 1
    (batch,) = list(ds.take(1))
    assert batch[0].shape == (2, 8, 8, 3)
    last, first = (loopax.utils.image_dataset_from_directory(
        tmp_path, image_size=8, seed=1, data_format=f, verbose=False)[0][0]
        for f in ("channels_last", "channels_first"))
    np.testing.assert_array_equal(first, last.transpose(0, 3, 1, 2))


def test_image_arguments_are_checked(tmp_path, pil):
    make_image_tree(tmp_path, pil)
    for kwargs, match in [(dict(color_mode="bgr"), "color_mode"),
                          (dict(image_size=(3, 3, 3)), "image_size"),
                          (dict(interpolation="cubic"), "interpolation"),
                          (dict(crop_to_aspect_ratio=True, pad_to_aspect_ratio=True),
                           "at most one")]:
        with pytest.raises(ValueError, match=match):
            loopax.utils.image_dataset_from_directory(tmp_path, verbose=False, **kwargs)
    (tmp_path / "empty" / "x").mkdir(parents=True)
    with pytest.raises(ValueError, match="No image files"):
        loopax.utils.image_dataset_from_directory(tmp_path / "empty", verbose=False)


# ---------------------------------------------------------------- audio


def write_wav(path, samples, rate=8000, width=2):
    """Writes int samples `(n, channels)` as PCM."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as f:
        f.setnchannels(samples.shape[1])
        f.setsampwidth(width)
        f.setframerate(rate)
        f.writeframes(samples.astype({1: "u1", 2: "<i2", 4: "<i4"}[width]).tobytes())


def test_audio_is_decoded_padded_and_labelled_like_keras(tmp_path, keras_dataset_utils):
    rng = np.random.default_rng(0)
    clips = {}
    for cls, lengths in {"yes": [5, 9], "no": [7, 3, 4]}.items():
        for i, n in enumerate(lengths):
            clips[str(tmp_path / cls / f"{i}.wav")] = rng.integers(-32768, 32767, (n, 2))
    for path, samples in clips.items():
        write_wav(pathlib.Path(path), samples)
    ds = loopax.utils.audio_dataset_from_directory(tmp_path, batch_size=3, seed=2,
                                                   verbose=False)
    want_paths, want_labels, names = keras_files(keras_dataset_utils, tmp_path, (".wav",),
                                                 seed=2)
    assert ds.class_names == names == ["no", "yes"] and ds.file_paths == want_paths
    for b, (x, y) in enumerate(ds):
        paths = want_paths[3 * b:3 * b + 3]
        longest = max(len(clips[p]) for p in paths)
        assert x.shape == (len(paths), longest, 2)   # padded to the batch's longest
        for row, p in zip(x, paths):
            want = np.zeros((longest, 2), "float32")
            want[:len(clips[p])] = clips[p] / 32768   # tf.audio.decode_wav's scale
            np.testing.assert_array_equal(row, want)
        np.testing.assert_array_equal(y, want_labels[3 * b:3 * b + 3])
    fixed = loopax.utils.audio_dataset_from_directory(tmp_path, output_sequence_length=6,
                                                      shuffle=False, verbose=False)
    assert fixed[0][0].shape == (5, 6, 2)
    ragged = loopax.utils.audio_dataset_from_directory(tmp_path, ragged=True, shuffle=False,
                                                       verbose=False)
    assert [len(c) for c in ragged[0][0]] == [7, 3, 4, 5, 9]
    assert ragged.unbatch()[1][0].shape == (3, 2)
    with pytest.raises(ValueError, match="not sampling_rate=16000"):
        loopax.utils.audio_dataset_from_directory(tmp_path, sampling_rate=16000,
                                                  verbose=False)[0]
    with pytest.raises(ValueError, match="ragged"):
        loopax.utils.audio_dataset_from_directory(tmp_path, ragged=True,
                                                  output_sequence_length=3)


def test_8_bit_wav_is_centred(tmp_path):
    write_wav(tmp_path / "c" / "a.wav", np.array([[0], [128], [255]]), width=1)
    ds = loopax.utils.audio_dataset_from_directory(tmp_path, verbose=False)
    np.testing.assert_array_equal(ds[0][0][0, :, 0], [-1.0, 0.0, 127 / 128])
