"""`keras.preprocessing.image.ImageDataGenerator`: Keras's legacy augmenting image
iterator, kept because TensorFlow 2 code (the tf.data guide) still uses it.

Batches are NumPy float32 arrays built on the host: images are loaded with Pillow
(`load_img`), randomly rotated/shifted/flipped as asked (SciPy's `ndimage` with
nearest fill), then scaled by `rescale`. The random draws are NumPy's, so the same
seed does not give Keras's augmented pixels. New code should prefer
`image_dataset_from_directory` and the augmentation layers (`RandomRotation`, ...).
"""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np

from loopax.src.utils.image_utils import img_to_array, load_img

_IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".tif", ".tiff", ".gif")


class ImageDataGenerator:
    """Random augmentation of image batches (Keras's legacy API).

    Args:
        rotation_range: Degrees; each image is rotated by a uniform draw in +-range.
        width_shift_range: Fraction of the width (< 1) or pixels for a random shift.
        height_shift_range: Fraction of the height (< 1) or pixels for a random shift.
        horizontal_flip: Flip half the images left-right.
        vertical_flip: Flip half the images up-down.
        rescale: A factor every pixel is multiplied by (after the other transforms).
        preprocessing_function: Called on each image (a 3-D array) last.
        dtype: The batches' dtype (default float32).
        **kwargs: Other Keras options (zoom_range, shear_range, brightness_range,
            featurewise_*, zca_whitening, ...) are not implemented: a ValueError names
            the option when one is set.
    """

    def __init__(self, rotation_range: float = 0, width_shift_range: float = 0.0,
                 height_shift_range: float = 0.0, horizontal_flip: bool = False,
                 vertical_flip: bool = False, rescale: float | None = None,
                 preprocessing_function: Any = None, dtype: Any = None,
                 fill_mode: str = "nearest", cval: float = 0.0, **kwargs: Any) -> None:
        unsupported = {k: v for k, v in kwargs.items()
                       if v not in (None, False, 0, 0.0, "channels_last", (1.0, 1.0))}
        if unsupported:
            raise ValueError(f"ImageDataGenerator: {sorted(unsupported)} are not implemented "
                             "in loopax; use the augmentation layers (layers.RandomZoom, "
                             "RandomContrast, ...) on image_dataset_from_directory instead.")
        self.rotation_range = float(rotation_range)
        self.width_shift_range = float(width_shift_range)
        self.height_shift_range = float(height_shift_range)
        self.horizontal_flip, self.vertical_flip = bool(horizontal_flip), bool(vertical_flip)
        self.rescale = rescale
        self.preprocessing_function = preprocessing_function
        self.dtype = np.dtype(dtype or "float32")
        self.fill_mode, self.cval = fill_mode, float(cval)

    def random_transform(self, x: np.ndarray, seed: int | None = None) -> np.ndarray:
        """One randomly transformed copy of image `x` (height, width, channels)."""
        return self._transform(np.asarray(x, self.dtype), np.random.default_rng(seed))

    def _transform(self, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        from scipy import ndimage  # a JAX dependency; imported when augmenting

        mode = {"nearest": "nearest", "constant": "constant", "reflect": "reflect",
                "wrap": "grid-wrap"}.get(self.fill_mode, "nearest")
        if self.rotation_range:
            angle = rng.uniform(-self.rotation_range, self.rotation_range)
            x = ndimage.rotate(x, angle, axes=(1, 0), reshape=False, order=1, mode=mode,
                               cval=self.cval)
        if self.width_shift_range or self.height_shift_range:
            def shift(r, size):
                r = r * size if 0 < r < 1 else r
                return rng.uniform(-r, r) if r else 0.0
            x = ndimage.shift(x, (shift(self.height_shift_range, x.shape[0]),
                                  shift(self.width_shift_range, x.shape[1]), 0),
                              order=1, mode=mode, cval=self.cval)
        if self.horizontal_flip and rng.random() < 0.5:
            x = x[:, ::-1]
        if self.vertical_flip and rng.random() < 0.5:
            x = x[::-1]
        return x

    def standardize(self, x: np.ndarray) -> np.ndarray:
        """`x` scaled by `rescale`, then through `preprocessing_function`."""
        if self.rescale:
            x = x * self.rescale
        if self.preprocessing_function is not None:
            x = self.preprocessing_function(x)
        return np.asarray(x, self.dtype)

    def flow(self, x: Any, y: Any = None, batch_size: int = 32, shuffle: bool = True,
             seed: int | None = None, **kwargs: Any) -> _Iterator:
        """Batches of augmented `x` (and `y`), forever."""
        x = np.asarray(x)
        if x.ndim != 4:
            raise ValueError(f"ImageDataGenerator.flow: `x` must be (n, height, width, "
                             f"channels); got shape {x.shape}.")
        return _Iterator(self, len(x), lambda i: np.asarray(x[i], self.dtype),
                         None if y is None else np.asarray(y), batch_size, shuffle, seed)

    def flow_from_directory(self, directory: str, target_size: tuple = (256, 256),
                            color_mode: str = "rgb", classes: list | None = None,
                            class_mode: str | None = "categorical", batch_size: int = 32,
                            shuffle: bool = True, seed: int | None = None,
                            interpolation: str = "nearest", **kwargs: Any) -> _Iterator:
        """Batches of augmented images from one subdirectory per class, forever: labels
        one-hot (`class_mode="categorical"`), integer (`"sparse"`), 0/1 (`"binary"`) or
        none (`None`/`"input"`)."""
        directory = os.fspath(directory)
        if not os.path.isdir(directory):
            raise ValueError(f"ImageDataGenerator.flow_from_directory: {directory!r} is not "
                             "a directory.")
        classes = list(classes) if classes else sorted(
            d for d in os.listdir(directory) if os.path.isdir(os.path.join(directory, d)))
        paths, labels = [], []
        for index, name in enumerate(classes):
            root = os.path.join(directory, name)
            for dirpath, _, names in sorted(os.walk(root)):
                for file in sorted(names):
                    if file.lower().endswith(_IMAGE_EXTENSIONS):
                        paths.append(os.path.join(dirpath, file))
                        labels.append(index)
        print(f"Found {len(paths)} images belonging to {len(classes)} classes.")
        size = tuple(int(s) for s in target_size)

        def load(i):
            image = load_img(paths[i], color_mode=color_mode, target_size=size,
                             interpolation=interpolation)
            return img_to_array(image, dtype=self.dtype.name)
        index = np.asarray(labels, np.int64)
        if class_mode == "categorical":
            y = np.eye(len(classes), dtype=self.dtype)[index]
        elif class_mode == "sparse":
            y = index.astype(self.dtype)
        elif class_mode == "binary":
            y = index.astype(self.dtype)
        elif class_mode in (None, "input"):
            y = None
        else:
            raise ValueError(f"ImageDataGenerator.flow_from_directory: class_mode must be "
                             f"'categorical', 'sparse', 'binary', 'input' or None; got "
                             f"{class_mode!r}.")
        iterator = _Iterator(self, len(paths), load, y, batch_size, shuffle, seed,
                             images_as_labels=class_mode == "input")
        iterator.filenames = [os.path.relpath(p, directory) for p in paths]
        iterator.classes = index
        iterator.class_indices = {name: i for i, name in enumerate(classes)}
        iterator.num_classes = len(classes)
        return iterator


class _Iterator:
    """An endless iterator of batches (also indexable: `it[i]` is batch i of an epoch)."""

    def __init__(self, generator, n, load, y, batch_size, shuffle, seed,
                 images_as_labels=False):
        self._generator, self.n, self._load, self._y = generator, n, load, y
        self.samples = n
        self.batch_size, self.shuffle = int(batch_size), bool(shuffle)
        self._rng = np.random.default_rng(seed)
        self._images_as_labels = images_as_labels
        self._order = np.arange(n)
        self._position = 0

    def __len__(self):
        return math.ceil(self.n / self.batch_size)

    def __iter__(self):
        return self

    def _batch(self, indices):
        gen = self._generator
        x = np.stack([gen.standardize(gen._transform(self._load(i), self._rng))
                      for i in indices]) if len(indices) else np.empty((0,), gen.dtype)
        if self._images_as_labels:
            return x, x
        return x if self._y is None else (x, self._y[indices])

    def __getitem__(self, index):
        return self._batch(self._order[index * self.batch_size:(index + 1) * self.batch_size])

    def __next__(self):
        if self.n == 0:
            raise StopIteration
        if self._position == 0 and self.shuffle:
            self._order = self._rng.permutation(self.n)
        batch = self[self._position]
        self._position = (self._position + 1) % len(self)
        return batch

    def reset(self):
        """Starts the next epoch from its first batch."""
        self._position = 0
