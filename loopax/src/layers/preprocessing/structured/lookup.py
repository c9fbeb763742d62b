"""Vocabulary lookups: StringLookup and IntegerLookup (token <-> index).

Indices are laid out as Keras does: the mask token (if any) at 0, then
`num_oov_indices` out-of-vocabulary buckets, then the vocabulary. The
vocabulary comes from `vocabulary=` or from `adapt(data)` (tokens by
decreasing frequency, ties by decreasing token). Lookups run on the host
with NumPy (`np.searchsorted` over the sorted vocabulary): these layers
belong in the data pipeline, as in Keras. The vocabulary is part of
`get_config()`, so a saved model reloads with it.
"""

from __future__ import annotations

import collections
import io

import jax.numpy as jnp
import numpy as np

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.preprocessing.structured.categorical import (
    OUTPUT_MODES,
    check_output_mode,
    encode_categorical,
)
from loopax.src.layers.preprocessing.structured.hashing import hash_to_bins
from loopax.src.serialization import quoted
from loopax.src.tensor import unwrap
from loopax.src.utils import safe_open


def _as_list(values):
    return np.asarray(values).tolist() if values is not None else None


def check_vocabulary_path(layer, path):
    """Refuses to read the vocabulary file `path` while a file is being loaded in
    safe mode (`load_model`, `deserialize`): a model file carries its vocabulary
    itself, and a path in it would make loading read any file (as Keras 3.12+)."""
    if serialization.in_safe_mode():
        raise ValueError(
            f"{type(layer).__name__} {layer.name!r}: the config being loaded names the "
            f"vocabulary file {quoted(path)}. Loading reads nothing but the model file, so "
            "a vocabulary path in it is refused (a saved model holds its vocabulary "
            "itself). If you trust this file, load it with safe_mode=False.")


# The largest vocabulary file read (a million tokens of 200 bytes fit).
MAX_VOCABULARY_BYTES = 256 * 2**20


def read_vocabulary_file(layer, path):
    """The tokens of a text file, one a line (Keras's vocabulary file format)."""
    check_vocabulary_path(layer, path)
    text = safe_open.read_text(path, MAX_VOCABULARY_BYTES, "a vocabulary file")
    # the lines as `open(path)` iterates them (universal newlines)
    return [line.rstrip("\n") for line in io.StringIO(text, newline=None)]


class IndexLookup(Layer):
    """Shared implementation of StringLookup and IntegerLookup."""

    _is_string = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=None,
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, **kwargs):
        owner = type(self).__name__
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(**kwargs)
        self.output_mode = check_output_mode(output_mode, OUTPUT_MODES, owner)
        if max_tokens is not None and max_tokens <= 1:
            raise ValueError(f"{owner}: `max_tokens` must be > 1 (or None), got {max_tokens!r}.")
        if not isinstance(num_oov_indices, int) or num_oov_indices < 0:
            raise ValueError(f"{owner}: `num_oov_indices` must be an int >= 0, "
                             f"got {num_oov_indices!r}.")
        if invert and output_mode != "int":
            raise ValueError(f"{owner}: `invert=True` needs output_mode='int', "
                             f"got {output_mode!r}.")
        if sparse:
            raise ValueError(f"{owner}: `sparse=True` is not supported; use sparse=False.")
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"{owner}: `pad_to_max_tokens=True` needs `max_tokens`.")
        self.max_tokens, self.num_oov_indices = max_tokens, num_oov_indices
        self.mask_token, self.oov_token = mask_token, oov_token
        self.invert, self.pad_to_max_tokens, self.sparse = invert, pad_to_max_tokens, sparse
        self._vocab = None       # the learned/given tokens, without special tokens
        self._idf = None         # tf_idf weights for the whole index range
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)
        elif idf_weights is not None:
            raise ValueError(f"{owner}: `idf_weights` needs a `vocabulary`.")
        self.built = True

    # -- vocabulary -----------------------------------------------------------------

    def _token_start(self):
        return (self.mask_token is not None) + self.num_oov_indices

    def _normalize_tokens(self, tokens):
        tokens = np.asarray(tokens)
        if self._is_string:
            if tokens.dtype.kind in "SO":
                tokens = np.asarray([t.decode("utf-8") if isinstance(t, bytes) else t
                                     for t in tokens.ravel().tolist()]).reshape(tokens.shape)
            return tokens.astype(str)
        return tokens.astype(np.int64)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Sets the vocabulary (a list or array, or a text file path: one token a
        line), optionally with tf_idf weights for its tokens."""
        owner = type(self).__name__
        if isinstance(vocabulary, str):
            vocabulary = read_vocabulary_file(self, vocabulary)
        tokens = [t for t in self._normalize_tokens(vocabulary).ravel().tolist()]
        specials = ([self.mask_token] if self.mask_token is not None else []) + \
            [self.oov_token] * self.num_oov_indices
        if specials and tokens[:len(specials)] == specials:
            tokens = tokens[len(specials):]
        if len(set(tokens)) != len(tokens):
            repeated = sorted({t for t in tokens if tokens.count(t) > 1})
            raise ValueError(f"{owner}: the vocabulary has repeated tokens {repeated[:5]}.")
        for special, what in ((self.mask_token, "mask_token"), (self.oov_token, "oov_token")):
            if special is not None and special in tokens:
                raise ValueError(f"{owner}: the {what} {special!r} is in the vocabulary at a "
                                 "place other than its reserved index; remove it.")
        if self.max_tokens is not None and len(tokens) + self._token_start() > self.max_tokens:
            raise ValueError(f"{owner}: the vocabulary ({len(tokens)} tokens plus "
                             f"{self._token_start()} special) is larger than max_tokens="
                             f"{self.max_tokens}.")
        if self.output_mode == "tf_idf":
            if idf_weights is None:
                raise ValueError(f"{owner}: output_mode='tf_idf' with a given vocabulary needs "
                                 "`idf_weights`.")
            weights = np.asarray(idf_weights, "float32").ravel()
            if len(weights) == len(tokens) + self._token_start():
                weights = weights[self._token_start():]
            if len(weights) != len(tokens):
                raise ValueError(f"{owner}: `idf_weights` must have one weight per vocabulary "
                                 f"token ({len(tokens)}); got {len(weights)}.")
            self._idf = np.concatenate([np.full(self._token_start(), weights.mean(), "float32"),
                                        weights])
        self._vocab = tokens
        self._build_index()

    def _build_index(self):
        keys = np.asarray(self._vocab, dtype=str if self._is_string else np.int64)
        self._order = np.argsort(keys, kind="stable")
        self._sorted_keys = keys[self._order]

    def get_vocabulary(self, include_special_tokens=True):
        """The tokens by index (with the mask and OOV tokens first unless
        `include_special_tokens=False`)."""
        self._check_vocabulary()
        specials = ([self.mask_token] if self.mask_token is not None else []) + \
            [self.oov_token] * self.num_oov_indices
        return (specials if include_special_tokens else []) + list(self._vocab)

    def vocabulary_size(self):
        return len(self._vocab) + self._token_start() if self._vocab is not None else None

    def _check_vocabulary(self):
        if self._vocab is None:
            raise ValueError(f"{type(self).__name__} {self.name!r}: no vocabulary yet; pass "
                             "`vocabulary=` or call adapt(data).")

    def adapt(self, data, steps=None):
        """Learns the vocabulary from `data` (an array or an iterable of
        batches): the most frequent tokens first, at most `max_tokens` in all."""
        batches = [data] if isinstance(data, (np.ndarray, list, tuple)) and not (
            isinstance(data, (list, tuple)) and data and isinstance(data[0], np.ndarray)) \
            else data
        documents = []
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            documents.extend(self._adapt_rows(batch))
        self.adapt_documents(documents)

    def adapt_documents(self, documents):
        """Learns the vocabulary from a list of documents (lists of tokens)."""
        counts, doc_counts = collections.Counter(), collections.Counter()
        for row in documents:
            counts.update(row)
            doc_counts.update(set(row))
        for special in (self.mask_token, self.oov_token):
            counts.pop(special, None)
        ranked = sorted(counts.items(), key=lambda kv: (kv[1], kv[0]), reverse=True)
        if self.max_tokens is not None:
            ranked = ranked[:self.max_tokens - self._token_start()]
        self._vocab = [token for token, _ in ranked]
        if self.output_mode == "tf_idf":
            df = np.asarray([doc_counts[t] for t in self._vocab], "float64")
            idf = np.log(1 + len(documents) / (1 + df)).astype("float32")
            self._idf = np.concatenate([np.full(self._token_start(),
                                                idf.mean() if idf.size else 0, "float32"), idf])
        self._build_index()

    def _adapt_rows(self, batch):
        """The documents (lists of tokens) in one batch."""
        tokens = self._normalize_tokens(unwrap(batch))
        if tokens.ndim <= 1:
            tokens = tokens.reshape(-1, 1)
        return [row.ravel().tolist() for row in tokens.reshape(len(tokens), -1)]

    # -- lookup ---------------------------------------------------------------------

    def _oov_bucket(self, tokens):
        if self.num_oov_indices == 1:
            return np.zeros(tokens.shape, np.int64)
        if self._is_string:
            return hash_to_bins(tokens, self.num_oov_indices)
        return np.mod(tokens, self.num_oov_indices)

    def lookup(self, tokens):
        """Indices of `tokens` (a NumPy array), before output encoding."""
        tokens = self._normalize_tokens(tokens)
        n = len(self._sorted_keys)
        position = np.searchsorted(self._sorted_keys, tokens)
        clipped = np.minimum(position, max(n - 1, 0))
        found = (position < n) & (self._sorted_keys[clipped] == tokens) if n else \
            np.zeros(tokens.shape, bool)
        indices = np.where(found, self._order[clipped] + self._token_start(), -1)
        unknown = ~found
        if self.mask_token is not None:
            is_mask = tokens == self._normalize_tokens(self.mask_token)
            indices = np.where(is_mask, 0, indices)
            unknown &= ~is_mask
        if unknown.any():
            if self.num_oov_indices == 0:
                raise ValueError(f"{type(self).__name__} {self.name!r}: tokens outside the "
                                 f"vocabulary with num_oov_indices=0: "
                                 f"{np.unique(tokens[unknown])[:5].tolist()}.")
            oov = self._oov_bucket(tokens) + (self.mask_token is not None)
            indices = np.where(unknown, oov, indices)
        return indices

    def _depth(self):
        return self.max_tokens if self.pad_to_max_tokens else self.vocabulary_size()

    def _idf_table(self):
        idf = np.zeros(self._depth(), "float32")
        idf[:len(self._idf)] = self._idf
        return idf

    def encode_rows(self, rows):
        """`(len(rows), depth)` multi-hot / count / tf-idf vectors of token
        lists of any lengths."""
        self._check_vocabulary()
        out = np.zeros((len(rows), self._depth()), "float32")
        for i, row in enumerate(rows):
            indices = self.lookup(np.asarray(row, dtype=str if self._is_string else np.int64))
            np.add.at(out[i], indices, 1.0)
        if self.output_mode == "multi_hot":
            out = np.minimum(out, 1.0)
        elif self.output_mode == "tf_idf":
            out = out * self._idf_table()
        return jnp.asarray(np.asarray(out, self.dtype))

    def _invert(self, indices):
        indices = np.asarray(indices).astype(np.int64)
        table = np.asarray(self.get_vocabulary(), dtype=object)
        valid = (indices >= 0) & (indices < len(table))
        out = np.where(valid, table[np.clip(indices, 0, len(table) - 1)], self.oov_token)
        return out.astype(str) if self._is_string else out.astype(np.int64)

    def call(self, inputs):
        self._check_vocabulary()
        values = unwrap(inputs)
        if self.invert:
            return self._invert(values) if self._is_string else jnp.asarray(self._invert(values))
        indices = self.lookup(values)
        if self.output_mode == "int":
            return jnp.asarray(np.asarray(indices, self.dtype))
        idf = self._idf_table() if self.output_mode == "tf_idf" else None
        return encode_categorical(jnp.asarray(indices, "int32"), self.output_mode,
                                  self._depth(), self.dtype, idf_weights=idf)

    def get_config(self):
        vocabulary = _as_list(self._vocab) if self._vocab is not None else None
        idf = None
        if self._idf is not None:
            idf = self._idf[self._token_start():].tolist()
        return {**super().get_config(), "max_tokens": self.max_tokens,
                "num_oov_indices": self.num_oov_indices, "mask_token": self.mask_token,
                "oov_token": self.oov_token, "vocabulary": vocabulary, "idf_weights": idf,
                "invert": self.invert, "output_mode": self.output_mode,
                "pad_to_max_tokens": self.pad_to_max_tokens, "sparse": self.sparse}


@export("loopax.layers.StringLookup")
class StringLookup(IndexLookup):
    """Maps strings to integer indices (or back, with `invert=True`); the OOV
    token is "[UNK]", no mask token unless `mask_token` is given.
    `output_mode`: "int", "one_hot", "multi_hot", "count" or "tf_idf".

    Indices: the mask token (if any) is 0, then the OOV indices, then the vocabulary
    (most frequent first after `adapt`). Input: values of any shape; output: int64
    indices of the same shape with `output_mode="int"`, else one vector per sample
    of the vocabulary size (float32).

    Args:
        max_tokens: The largest vocabulary size, special tokens included (> 1), or
            None for no limit.
        num_oov_indices: How many indices out-of-vocabulary values hash into (default
            1; 0 makes them an error).
        mask_token: A token that maps to index 0 (and back), or None (the default).
        oov_token: The token `invert=True` returns for OOV indices (default `"[UNK]"`).
        vocabulary: The tokens (a list or array; or a text file path, one token a
            line), or None to `adapt`.
        idf_weights: With `output_mode="tf_idf"` and a given `vocabulary`, one weight
            per token.
        invert: Map indices back to tokens (needs `output_mode="int"`).
        output_mode: `"int"` (the default), `"one_hot"`, `"multi_hot"`, `"count"` or
            `"tf_idf"`.
        pad_to_max_tokens: Make encoded outputs `max_tokens` wide (default False).
        sparse: Must be False.
        encoding: Must be `"utf-8"`.
        name: The layer's name.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a bad `max_tokens`/`num_oov_indices`/`output_mode`, `invert` or
            `pad_to_max_tokens` without what they need, `sparse=True`, or a vocabulary
            with repeated or misplaced special tokens, or larger than `max_tokens`.
    """

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]",
                 vocabulary=None, idf_weights=None, invert=False, output_mode="int",
                 pad_to_max_tokens=False, sparse=False, encoding="utf-8", name=None, **kwargs):
        if encoding != "utf-8":
            raise ValueError(f"StringLookup: only encoding='utf-8' is supported, "
                             f"got {encoding!r}.")
        self.encoding = encoding
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, pad_to_max_tokens, sparse, name=name,
                         **kwargs)

    def get_config(self):
        return {**super().get_config(), "encoding": self.encoding}


@export("loopax.layers.IntegerLookup")
class IntegerLookup(IndexLookup):
    """Maps integers to indices (or back, with `invert=True`); the OOV token
    is -1, no mask token unless `mask_token` is given (e.g. 0).

    Indices: the mask token (if any) is 0, then the OOV indices, then the vocabulary
    (most frequent first after `adapt`). Input: values of any shape; output: int64
    indices of the same shape with `output_mode="int"`, else one vector per sample
    of the vocabulary size (float32).

    Args:
        max_tokens: The largest vocabulary size, special tokens included (> 1), or
            None for no limit.
        num_oov_indices: How many indices out-of-vocabulary values hash into (default
            1; 0 makes them an error).
        mask_token: A token that maps to index 0 (and back), or None (the default).
        oov_token: The token `invert=True` returns for OOV indices (default -1).
        vocabulary: The tokens (a list or array; or a text file path, one token a
            line), or None to `adapt`.
        vocabulary_dtype: `"int64"` (the default) or `"int32"`.
        idf_weights: With `output_mode="tf_idf"` and a given `vocabulary`, one weight
            per token.
        invert: Map indices back to tokens (needs `output_mode="int"`).
        output_mode: `"int"` (the default), `"one_hot"`, `"multi_hot"`, `"count"` or
            `"tf_idf"`.
        pad_to_max_tokens: Make encoded outputs `max_tokens` wide (default False).
        sparse: Must be False.
        name: The layer's name.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: a bad `max_tokens`/`num_oov_indices`/`output_mode`, `invert` or
            `pad_to_max_tokens` without what they need, `sparse=True`, or a vocabulary
            with repeated or misplaced special tokens, or larger than `max_tokens`.
    """

    _is_string = False

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1,
                 vocabulary=None, vocabulary_dtype="int64", idf_weights=None, invert=False,
                 output_mode="int", sparse=False, pad_to_max_tokens=False, name=None, **kwargs):
        if vocabulary_dtype not in ("int32", "int64"):
            raise ValueError(f"IntegerLookup: `vocabulary_dtype` must be 'int32' or 'int64', "
                             f"got {vocabulary_dtype!r}.")
        self.vocabulary_dtype = vocabulary_dtype
        super().__init__(max_tokens, num_oov_indices, mask_token, oov_token, vocabulary,
                         idf_weights, invert, output_mode, pad_to_max_tokens, sparse, name=name,
                         **kwargs)

    def get_config(self):
        return {**super().get_config(), "vocabulary_dtype": self.vocabulary_dtype}
