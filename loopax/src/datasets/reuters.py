"""Reuters newswires: 11,228 word-index sequences labelled with 46 topics;
`get_word_index()` maps words to indices, `get_label_names()` names the topics."""

from __future__ import annotations

import numpy as np

from loopax.src.datasets import dataset_files, sequences

ORIGIN_FOLDER = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
SHA256 = "d6586e694ee56d7a4e65172e12b3e987c03096cb01eab99753921ef915959916"
WORD_INDEX_MD5 = "4d44cc38712099c9e383dc6e5f11a921"
LABEL_NAMES = (
    "cocoa", "grain", "veg-oil", "earn", "acq", "wheat", "copper", "housing", "money-supply",
    "coffee", "sugar", "trade", "reserves", "ship", "cotton", "carcass", "crude", "nat-gas",
    "cpi", "money-fx", "interest", "gnp", "meal-feed", "alum", "oilseed", "gold", "tin",
    "strategic-metal", "livestock", "retail", "ipi", "iron-steel", "rubber", "heat", "jobs",
    "lei", "bop", "zinc", "orange", "pet-chem", "dlr", "gas", "silver", "wpi", "hog", "lead")

# The real file's pickled x is about 5 MB (11,228 newswires of 145 words on average).
MAX_ENTRY_BYTES = 32 * 2**20


def load_data(path="reuters.npz", num_words=None, skip_top=0, maxlen=None, test_split=0.2,
              seed=113, start_char=1, oov_char=2, index_from=3):
    """Loads Reuters, processed as `keras.datasets.reuters.load_data` does.

    Args:
        path: a local `.npz` (arrays `x`, `y`) named with a directory part
            (`"./reuters.npz"`), or a bare file name in the cache (downloaded
            if missing).
        num_words, skip_top, maxlen, start_char, oov_char, index_from: as
            `loopax.datasets.imdb.load_data`.
        test_split: the fraction of the (shuffled, filtered) samples kept for testing.
        seed: the shuffle's seed.

    Returns:
        `(x_train, y_train), (x_test, y_test)`: object arrays of lists of ints,
        and int topic labels.
    """
    file = dataset_files.dataset_path(path, "reuters.npz", ORIGIN_FOLDER + "reuters.npz",
                                      SHA256)
    arrays = dataset_files.load_npz(file, ("x", "y"), MAX_ENTRY_BYTES)
    dataset_files.check_samples(file, arrays["x"], arrays["y"], "x", "y")
    xs, labels = dataset_files.shuffled(seed, arrays["x"], arrays["y"])
    xs = sequences.shift_and_start(xs, start_char, index_from)
    labels = list(labels)
    if maxlen:
        xs, labels = sequences.drop_long(maxlen, xs, labels)
    xs = sequences.limit_vocabulary(xs, num_words, skip_top, oov_char)
    cut = int(len(xs) * (1 - test_split))
    return ((sequences.object_array(xs[:cut]), np.array(labels[:cut])),
            (sequences.object_array(xs[cut:]), np.array(labels[cut:])))


def get_word_index(path="reuters_word_index.json"):
    """The `{word: index}` dict of the Reuters sequences (before `index_from`'s shift).

    Args:
        path: a local JSON file named with a directory part, or a bare file
            name in the cache.

    Returns:
        A dict from words to their frequency rank.
    """
    file = dataset_files.dataset_path(path, "reuters_word_index.json",
                                      ORIGIN_FOLDER + "reuters_word_index.json", WORD_INDEX_MD5)
    return dataset_files.read_word_index(file)


def get_label_names():
    """The topic names.

    Returns:
        A tuple of the 46 topic names; label `i` is `get_label_names()[i]`.
    """
    return LABEL_NAMES
