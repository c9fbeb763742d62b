"""IMDB: 25,000 training and 25,000 test movie reviews, sentiment-labelled, as
word-index sequences; `get_word_index()` maps words to indices."""

from __future__ import annotations

import warnings

import numpy as np

from loopax.src.datasets import dataset_files, sequences

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
SHA256 = "69664113be75683a8fe16e3ed0ab59fda8886cb3cd7ada244f7d9544e4676b9f"
WORD_INDEX_MD5 = "bfafd718b763782e994055a2d397834f"

# The real file's pickled x_train is about 20 MB (25,000 reviews, 238 words on
# average, 2-3 bytes a word); Python lists of its ints take about 14 times that.
MAX_ENTRY_BYTES = 64 * 2**20


def load_data(path="imdb.npz", num_words=None, skip_top=0, maxlen=None, seed=113,
              start_char=1, oov_char=2, index_from=3, **kwargs):
    """Loads IMDB, processed as `keras.datasets.imdb.load_data` does.

    Args:
        path: a local `.npz` (arrays `x_train, y_train, x_test, y_test`) named
            with a directory part (`"./imdb.npz"`), or a bare file name in the
            cache (downloaded if missing).
        num_words: keep the `num_words` most frequent words; rarer ones become
            `oov_char` (None: keep all).
        skip_top: the most frequent words to replace by `oov_char`.
        maxlen: drop the sequences of `maxlen` indices or more (after `start_char`).
        seed: the seed shuffling the training and the test samples.
        start_char: the index each sequence starts with (None: none).
        oov_char: the index of words cut by `num_words`/`skip_top` (None: removed).
        index_from: added to every word index (0, 1, 2 stay free for padding,
            start and out-of-vocabulary).
        **kwargs: ignored with a warning (Keras ignores them).

    Returns:
        `(x_train, y_train), (x_test, y_test)`: object arrays of lists of ints,
        and int labels (0 negative, 1 positive).
    """
    if kwargs:   # Keras accepts and ignores them
        warnings.warn(f"imdb.load_data ignores the arguments {sorted(kwargs)} (as Keras does); "
                      "remove them.", stacklevel=2)
    file = dataset_files.dataset_path(path, "imdb.npz", ORIGIN_FOLDER + "imdb.npz", SHA256)
    arrays = dataset_files.load_npz(file, ("x_train", "y_train", "x_test", "y_test"),
                                    MAX_ENTRY_BYTES)
    for x_key, y_key in (("x_train", "y_train"), ("x_test", "y_test")):
        dataset_files.check_samples(file, arrays[x_key], arrays[y_key], x_key, y_key)
    rng_seed = np.random.RandomState(seed)
    parts = []
    for x_key, y_key in (("x_train", "y_train"), ("x_test", "y_test")):
        indices = np.arange(len(arrays[x_key]))
        rng_seed.shuffle(indices)   # one generator for both splits, as Keras
        parts.append((arrays[x_key][indices], arrays[y_key][indices]))
    (x_train, y_train), (x_test, y_test) = parts
    x_train = sequences.shift_and_start(x_train, start_char, index_from)
    x_test = sequences.shift_and_start(x_test, start_char, index_from)
    if maxlen:
        x_train, y_train = sequences.drop_long(maxlen, x_train, y_train)
        x_test, y_test = sequences.drop_long(maxlen, x_test, y_test)
        if not x_train or not x_test:
            raise ValueError(f"No sequence is shorter than maxlen={maxlen}: increase maxlen.")
    xs = sequences.limit_vocabulary(x_train + x_test, num_words, skip_top, oov_char)
    labels = np.concatenate([y_train, y_test])
    n = len(x_train)
    return ((sequences.object_array(xs[:n]), labels[:n]),
            (sequences.object_array(xs[n:]), labels[n:]))


def get_word_index(path="imdb_word_index.json"):
    """The `{word: index}` dict of the IMDB sequences (before `index_from`'s shift).

    Args:
        path: a local JSON file named with a directory part, or a bare file
            name in the cache.

    Returns:
        A dict from words to their frequency rank (1 is the most frequent).
    """
    file = dataset_files.dataset_path(path, "imdb_word_index.json",
                                      ORIGIN_FOLDER + "imdb_word_index.json", WORD_INDEX_MD5)
    return dataset_files.read_word_index(file)
