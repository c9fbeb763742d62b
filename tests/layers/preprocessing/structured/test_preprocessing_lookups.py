"""Lookup/hash/text layers: the hashes against published references, errors
that name the fix, and vocabularies that survive a model file."""

import numpy as np
import pytest

import loopax as keras
from loopax.src.layers.preprocessing.structured.hashing import fingerprint64, siphash


def test_siphash_matches_the_reference_vector():
    # SipHash-2-4 paper, appendix A: key 00..0f, message 00..0e.
    key = (int.from_bytes(bytes(range(8)), "little"), int.from_bytes(bytes(range(8, 16)), "little"))
    assert siphash(key, bytes(range(15))) == 0xA129CA6149BE45E5


def test_fingerprint64_matches_pyfarmhash():
    farmhash = pytest.importorskip("farmhash")
    rng = np.random.default_rng(0)
    for n in list(range(0, 70)) + [127, 128, 129, 500]:
        text = "".join(chr(c) for c in rng.integers(32, 127, n))
        assert fingerprint64(text.encode()) == farmhash.fingerprint64(text)


def test_lookup_errors_name_the_fix():
    with pytest.raises(ValueError, match="num_oov_indices=0"):
        keras.layers.StringLookup(vocabulary=["a"], num_oov_indices=0)(np.array(["b"]))
    with pytest.raises(ValueError, match="adapt"):
        keras.layers.StringLookup()(np.array(["b"]))
    with pytest.raises(ValueError, match="repeated"):
        keras.layers.IntegerLookup(vocabulary=[1, 2, 1])
    with pytest.raises(ValueError, match="output_sequence_length"):
        keras.layers.TextVectorization(output_mode="count", output_sequence_length=3)
    with pytest.raises(ValueError, match=r"\(batch,\) or \(batch, 1\)"):
        keras.layers.TextVectorization(vocabulary=["a"])(np.array([["a b", "c"]]))


def test_text_vectorization_callable_steps_and_string_invert():
    layer = keras.layers.TextVectorization(
        standardize=lambda t: np.char.upper(t.astype(str)),
        split=lambda t: [s.split("-") for s in t],
    )
    layer.adapt(["a-b-b", "b-c"])
    assert layer.get_vocabulary() == ["", "[UNK]", "B", "C", "A"]
    np.testing.assert_array_equal(layer(["c-a-z", "b"]), [[3, 4, 1], [2, 0, 0]])
    inverse = keras.layers.StringLookup(vocabulary=layer.get_vocabulary(), mask_token="",
                                        invert=True)
    assert inverse(np.array([[3, 4, 1]])).tolist() == [["C", "A", "[UNK]"]]


def test_adapted_vocabulary_travels_in_the_config():
    lookup = keras.layers.IntegerLookup()
    lookup.adapt(np.array([7, 7, 9, 3, 9, 7]))
    ids = np.asarray(lookup(np.array([[7, 3, 5, 9]])))
    assert ids.tolist() == [[1, 3, 0, 2]]   # by frequency: 7, 9, 3; OOV -> 0
    config = lookup.get_config()
    assert config["vocabulary"] == [7, 9, 3]
    rebuilt = keras.layers.IntegerLookup.from_config(config)
    np.testing.assert_array_equal(rebuilt(np.array([[7, 3, 5, 9]])), ids)
