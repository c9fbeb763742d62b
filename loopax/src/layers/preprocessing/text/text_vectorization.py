"""TextVectorization: strings -> token indices (or multi-hot / counts /
tf-idf vectors), on the host with Python strings, as a data-pipeline step.

The steps, as Keras: standardize (lower-case and/or strip ASCII
punctuation, or a callable on a NumPy array of strings), split (on
whitespace, into characters, or a callable), n-grams (joined by spaces),
then a StringLookup with OOV token "[UNK]" (and, for "int" output, the
mask token "" at index 0). Lower-casing changes ASCII letters only, as
Keras (TensorFlow's `strings.lower`). "int" output is padded with 0 (or cut) to
`output_sequence_length`, else to the longest row in the batch.
"""

from __future__ import annotations

import re

import jax.numpy as jnp
import numpy as np

from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.layers.preprocessing.structured.lookup import StringLookup, read_vocabulary_file
from loopax.src.tensor import unwrap

_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,\-\./:;<=>?@\[\\\]^_`{|}~\']')
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = ("whitespace", "character")


def _as_strings(values):
    values = np.asarray(unwrap(values))
    if values.dtype.kind in "SO":
        values = np.vectorize(lambda v: v.decode("utf-8") if isinstance(v, bytes) else str(v),
                              otypes=[object])(values)
    return values.astype(str)


@export("loopax.layers.TextVectorization")
class TextVectorization(Layer):
    """Turns a batch of strings `(batch,)` or `(batch, 1)` into
    `(batch, sequence)` indices (`output_mode="int"`) or `(batch,
    vocabulary_size)` vectors ("multi_hot", "count", "tf_idf"). Learn the
    vocabulary with `adapt(texts)` or pass `vocabulary=`.

    In "int" mode index 0 is padding and 1 the OOV token; rows shorter than the
    longest (or than `output_sequence_length`) are padded with 0, longer ones cut.
    Outputs are int64 ("int") or float32, by default. Runs on the host (NumPy).

    Args:
        max_tokens: The largest vocabulary size, special tokens included, or None.
        standardize: `"lower_and_strip_punctuation"` (the default), `"lower"`,
            `"strip_punctuation"`, None, or a callable on an array of strings.
        split: `"whitespace"` (the default), `"character"`, None (each string is one
            token), or a callable returning one token list per string.
        ngrams: None, an int n (all 1..n-grams) or a tuple of n-gram sizes.
        output_mode: `"int"` (the default), `"multi_hot"`, `"count"` or `"tf_idf"`.
        output_sequence_length: The fixed output length in "int" mode, or None.
        pad_to_max_tokens: Make encoded outputs `max_tokens` wide (default False).
        vocabulary: The tokens (a list, an array or a text file path), or None.
        idf_weights: With `"tf_idf"` and a given `vocabulary`, one weight per token.
        sparse: Must be False.
        ragged: Must be False (JAX has no ragged arrays).
        encoding: Must be `"utf-8"`.
        name: The layer's name.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: an unknown `standardize`, `split`, `ngrams` or `output_mode`,
            `output_sequence_length` outside "int" mode, `ragged=True`, or (when called)
            strings not of shape `(batch,)` or `(batch, 1)`.
    """

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation",
                 split="whitespace", ngrams=None, output_mode="int",
                 output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None,
                 **kwargs):
        kwargs.pop("vocabulary_size", None)  # written by get_config, as Keras
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = "int64" if output_mode == "int" else "float32"
        super().__init__(name=name, **kwargs)
        owner = "TextVectorization"
        if not (standardize is None or standardize in _STANDARDIZE or callable(standardize)):
            raise ValueError(f"{owner}: `standardize` must be one of {_STANDARDIZE}, None or a "
                             f"callable; got {standardize!r}.")
        if not (split is None or split in _SPLIT or callable(split)):
            raise ValueError(f"{owner}: `split` must be one of {_SPLIT}, None or a callable; "
                             f"got {split!r}.")
        if isinstance(ngrams, list):
            ngrams = tuple(ngrams)
        if not (ngrams is None or isinstance(ngrams, int) or (
                isinstance(ngrams, tuple) and all(isinstance(n, int) for n in ngrams))):
            raise ValueError(f"{owner}: `ngrams` must be None, an int or a tuple of ints; "
                             f"got {ngrams!r}.")
        if output_mode not in ("int", "multi_hot", "count", "tf_idf"):
            raise ValueError(f"{owner}: `output_mode` must be 'int', 'multi_hot', 'count' or "
                             f"'tf_idf'; got {output_mode!r}.")
        if output_mode != "int" and output_sequence_length is not None:
            raise ValueError(f"{owner}: `output_sequence_length` is only for output_mode="
                             f"'int'; got output_mode={output_mode!r}.")
        if ragged:
            raise ValueError(f"{owner}: `ragged=True` is not supported (JAX has no ragged "
                             "arrays); use output_sequence_length or the default padding.")
        self.standardize, self.split, self.ngrams = standardize, split, ngrams
        self._widths = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
        self.output_mode, self.output_sequence_length = output_mode, output_sequence_length
        self.ragged, self.encoding = ragged, encoding
        if isinstance(vocabulary, str):
            vocabulary = read_vocabulary_file(self, vocabulary)
        self._lookup = StringLookup(
            max_tokens=max_tokens,
            mask_token="" if output_mode == "int" else None,
            vocabulary=vocabulary,
            idf_weights=idf_weights,
            output_mode=output_mode,
            pad_to_max_tokens=pad_to_max_tokens,
            sparse=sparse,
            encoding=encoding,
            name=f"{self.name}_lookup",
        )
        self.built = True

    # -- text to tokens ---------------------------------------------------------------

    def _standardized(self, texts):
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            # ASCII letters only, as TensorFlow's strings.lower (Keras).
            texts = np.vectorize(lambda t: t.translate(_ASCII_LOWER), otypes=[str])(texts) \
                if texts.size else texts
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            texts = np.vectorize(lambda t: _PUNCTUATION.sub("", t), otypes=[str])(texts) \
                if texts.size else texts
        if callable(self.standardize):
            texts = _as_strings(self.standardize(texts))
        return texts

    def _tokens(self, inputs):
        """List (one per row) of token lists; or an array when `split=None`."""
        texts = self._standardized(_as_strings(inputs))
        if self.split is None:
            if self._widths is not None:
                raise ValueError("TextVectorization: `ngrams` needs a `split`.")
            return texts
        if texts.ndim == 2 and texts.shape[-1] == 1:
            texts = texts[:, 0]
        if texts.ndim != 1:
            raise ValueError(f"TextVectorization {self.name!r}: expects strings of shape "
                             f"(batch,) or (batch, 1); got {texts.shape}.")
        if self.split == "whitespace":
            rows = [t.split() for t in texts.tolist()]
        elif self.split == "character":
            rows = [list(t) for t in texts.tolist()]
        else:
            rows = [[_decoded(tok) for tok in np.asarray(row).ravel().tolist()]
                    for row in self.split(texts)]
        if self._widths is not None:
            rows = [[" ".join(row[i:i + n]) for n in self._widths
                     for i in range(len(row) - n + 1)] for row in rows]
        return rows

    # -- vocabulary -------------------------------------------------------------------

    def adapt(self, data, batch_size=None, steps=None):
        """Learns the vocabulary (and idf weights) from `data`, an array or list of
        strings or an iterable of such batches."""
        batches = [data] if isinstance(data, (np.ndarray, list, tuple)) and not (
            isinstance(data, (list, tuple)) and data and isinstance(data[0], np.ndarray)) \
            else data
        documents = []
        for i, batch in enumerate(batches):
            if steps is not None and i >= steps:
                break
            tokens = self._tokens(batch)
            documents.extend(tokens.reshape(len(tokens), -1).tolist()
                             if isinstance(tokens, np.ndarray) else tokens)
        self._lookup.adapt_documents(documents)

    def get_vocabulary(self, include_special_tokens=True):
        return self._lookup.get_vocabulary(include_special_tokens)

    def vocabulary_size(self):
        return self._lookup.vocabulary_size()

    def set_vocabulary(self, vocabulary, idf_weights=None):
        self._lookup.set_vocabulary(vocabulary, idf_weights)

    # -- call -------------------------------------------------------------------------

    def call(self, inputs):
        texts = _as_strings(inputs)
        if texts.ndim == 0:   # one string, as TensorFlow takes it: one row out, unbatched
            return self.call(texts[None])[0]
        tokens = self._tokens(texts)
        if isinstance(tokens, np.ndarray):  # split=None: one token per string
            return self._lookup(tokens)
        if self.output_mode != "int":
            return self._lookup.encode_rows(tokens)
        indices = [self._lookup.lookup(np.asarray(row, dtype=str)).tolist() for row in tokens]
        length = self.output_sequence_length
        if length is None:
            length = max((len(r) for r in indices), default=0)
        out = np.zeros((len(indices), length), np.int64)
        for i, row in enumerate(indices):
            row = row[:length]
            out[i, :len(row)] = row
        return jnp.asarray(np.asarray(out, self.dtype))

    def get_config(self):
        lookup = self._lookup.get_config()
        return {**super().get_config(), "max_tokens": lookup["max_tokens"],
                "standardize": self.standardize, "split": self.split, "ngrams": self.ngrams,
                "output_mode": self.output_mode,
                "output_sequence_length": self.output_sequence_length,
                "pad_to_max_tokens": lookup["pad_to_max_tokens"], "sparse": lookup["sparse"],
                "ragged": self.ragged, "vocabulary": lookup["vocabulary"],
                "idf_weights": lookup["idf_weights"], "encoding": self.encoding,
                "vocabulary_size": self.vocabulary_size()}


def _decoded(token):
    return token.decode("utf-8") if isinstance(token, bytes) else str(token)
