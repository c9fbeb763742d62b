"""`tf.strings` and string tensors on the host, each compared with TensorFlow 2.21.

Every expected value below was printed by TensorFlow 2.21 (/work/tfvenv/bin/python)
running the statement shown beside it with `import tensorflow as tf`; e.g.
`tf.strings.substr(tf.constant("hello"), -3, 2).numpy()` printed `b'll'`.
"""

from __future__ import annotations

import inspect
import re
import string

import jax.numpy as jnp
import numpy as np
import pytest

import loopax.tf as tf

X = ["Hello World", "  A  b ", "ÀÉ mixed Case"]


def b(*texts):
    return [t.encode() for t in texts]


def _ids(cases):
    """`<op>-<n>` from each statement's source (`tf.strings.lower(...)` -> `lower-0`)."""
    names = []
    for i, case in enumerate(cases):
        source = inspect.getsource(case[0]).split("lambda:", 1)[1]
        match = re.search(r"tf\.(?:strings\.)?(\w+)|(==|\+)", source)
        names.append(f"{match.group(1) or {'==': 'eq', '+': 'add'}[match.group(2)]}-{i}")
    return names


STRING_CASES = [
    # tf.strings.lower(tf.constant(X)).numpy()
    (lambda: tf.strings.lower(tf.constant(X)), b("hello world", "  a  b ", "ÀÉ mixed case")),
    (lambda: tf.strings.upper(tf.constant(X)), b("HELLO WORLD", "  A  B ", "ÀÉ MIXED CASE")),
    (lambda: tf.strings.lower(tf.constant(X), encoding="utf-8"),
     b("hello world", "  a  b ", "àé mixed case")),
    (lambda: tf.strings.split(tf.constant("a b  c")), b("a", "b", "c")),
    (lambda: tf.strings.join([tf.constant(["a", "b"]), tf.constant(["c", "d"])], separator="-"),
     b("a-c", "b-d")),
    (lambda: tf.strings.join(["x", tf.constant(["a", "b"])]), b("xa", "xb")),
    (lambda: tf.strings.regex_replace(tf.constant(["a<br />b", "c.d!"]), "<br />", " "),
     b("a b", "c.d!")),
    # the text classification tutorial's punctuation pattern
    (lambda: tf.strings.regex_replace(tf.constant(["Hello, world! It's <ok>."]),
                                      "[%s]" % re.escape(string.punctuation), ""),
     b("Hello world Its ok")),
    (lambda: tf.strings.regex_replace(tf.constant(["abc123"]), r"([a-z]+)(\d+)", r"\2-\1"),
     b("123-abc")),
    (lambda: tf.strings.regex_replace(tf.constant(["aaa"]), "a", "b", replace_global=False),
     b("baa")),
    (lambda: tf.strings.regex_replace(tf.constant(["a, b!"]), "[[:punct:]]", ""), b("a b")),
    (lambda: tf.strings.substr(tf.constant(["hello", "world"]), 1, 3), b("ell", "orl")),
    (lambda: tf.strings.substr(tf.constant(["hello", "world"]), [0, 2], [2, 10]), b("he", "rld")),
    (lambda: tf.strings.substr(tf.constant("hello"), -3, 2), b"ll"),
    (lambda: tf.strings.substr(tf.constant("héllo"), 1, 2, unit="UTF8_CHAR"), "él".encode()),
    (lambda: tf.strings.reduce_join(tf.constant([["a", "b"], ["c", "d"]])), b"abcd"),
    (lambda: tf.strings.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), axis=1,
                                    separator=" "), b("a b", "c d")),
    (lambda: tf.strings.reduce_join(tf.constant([["a", "b"], ["c", "d"]]), axis=0,
                                    keepdims=True), [b("ac", "bd")]),
    (lambda: tf.strings.unicode_split(tf.constant("héllo"), "UTF-8"), b("h", "é", "l", "l", "o")),
    (lambda: tf.strings.as_string(tf.constant([1.5, -0.25, 3.0])),
     b("1.500000", "-0.250000", "3.000000")),
    (lambda: tf.strings.as_string(tf.constant([1, -20])), b("1", "-20")),
    (lambda: tf.strings.as_string(tf.constant([True, False])), b("true", "false")),
    (lambda: tf.strings.as_string(tf.constant([3.14159]), precision=2), b("3.14")),
    (lambda: tf.strings.as_string(tf.constant([31415.9]), scientific=True), b("3.141590e+04")),
    (lambda: tf.strings.as_string(tf.constant([0.1, 2.5]), shortest=True), b("0.1", "2.5")),
    (lambda: tf.strings.as_string(tf.constant([7]), width=4, fill="0"), b("0007")),
    (lambda: tf.strings.strip(tf.constant(["  a b \n", "\tc"])), b("a b", "c")),
    (lambda: tf.strings.format("x = {}, y = {}", (tf.constant([1, 2, 3]), tf.constant(2.5))),
     b"x = [1 2 3], y = 2.5"),
    (lambda: tf.strings.format("{}", tf.constant(list(range(10)))), b"[0 1 2 ... 7 8 9]"),
    (lambda: tf.strings.format("s: {}", tf.constant(["a", "b"])), b's: ["a" "b"]'),
    (lambda: tf.strings.format("{}", tf.constant([[1.5, 2.0], [3.0, 4.25]])),
     b"[[1.5 2]\n [3 4.25]]"),
    (lambda: tf.constant(["a", "b"]) + "!", b("a!", "b!")),
    (lambda: tf.expand_dims(tf.constant("a"), -1), b("a")),
    (lambda: tf.reshape(tf.constant(["a", "b", "c", "d"]), (2, 2)), [b("a", "b"), b("c", "d")]),
    (lambda: tf.concat([tf.constant(["a"]), tf.constant(["b", "c"])], 0), b("a", "b", "c")),
    (lambda: tf.stack([tf.constant("a"), tf.constant("b")]), b("a", "b")),
    (lambda: tf.gather(tf.constant(["a", "b", "c"]), [2, 0]), b("c", "a")),
    (lambda: tf.squeeze(tf.constant([["a"], ["b"]]), -1), b("a", "b")),
]


@pytest.mark.parametrize("statement,want", STRING_CASES, ids=_ids(STRING_CASES))
def test_string_ops_give_tensorflows_strings(statement, want):
    result = statement()
    assert result.dtype == tf.string
    got = result.numpy()
    if isinstance(want, bytes):
        assert got == want
    else:
        assert np.asarray(got).tolist() == want


NUMERIC_CASES = [
    (lambda: tf.strings.regex_full_match(tf.constant(["abc", "ab1", ""]), "[a-z]*"),
     [True, False, True], np.bool_),
    (lambda: tf.strings.length(tf.constant(["héllo", ""])), [6, 0], np.int32),
    (lambda: tf.strings.length(tf.constant(["héllo", ""]), unit="UTF8_CHAR"), [5, 0], np.int32),
    (lambda: tf.strings.to_number(tf.constant(["1.5", "-2", "3e2"])), [1.5, -2.0, 300.0],
     np.float32),
    (lambda: tf.strings.to_number(tf.constant(["7", "-3"]), out_type=tf.int32), [7, -3],
     np.int32),
    (lambda: tf.constant(["a", "b"]) == "a", [True, False], np.bool_),
    (lambda: tf.shape(tf.constant([["a"], ["b"]])), [2, 1], np.int32),
    (lambda: tf.size(tf.constant(["a", "b"])), 2, np.int32),
]


@pytest.mark.parametrize("statement,want,dtype", NUMERIC_CASES, ids=_ids(NUMERIC_CASES))
def test_numeric_results_of_string_ops_are_tensors(statement, want, dtype):
    result = statement()
    assert isinstance(result, tf.Tensor) and result.numpy().dtype == dtype
    np.testing.assert_array_equal(result.numpy(), want)


def test_ragged_results_list_like_tensorflows():
    # tf.strings.split(tf.constant(X)).to_list()
    assert tf.strings.split(tf.constant(X)).to_list() == [
        b("Hello", "World"), b("A", "b"), b("ÀÉ", "mixed", "Case")]
    assert tf.strings.split(tf.constant(["a,b,,c", "d"]), sep=",").to_list() == [
        b("a", "b", "", "c"), b("d")]
    assert tf.strings.split(tf.constant(["a b c d"]), maxsplit=1).to_list() == [b("a", "b c d")]
    assert tf.strings.unicode_split(tf.constant(["hé", "abc"]), "UTF-8").to_list() == [
        b("h", "é"), b("a", "b", "c")]
    padded = tf.strings.split(tf.constant(["a b", "c"])).to_tensor()
    assert padded.numpy().tolist() == [b("a", "b"), [b"c", b""]]


def test_constants_hold_utf8_bytes_as_tensorflow():
    # tf.constant("héllo").numpy() -> b'h\xc3\xa9llo'; tf.constant(["a", "bc"]).numpy()
    assert tf.constant("héllo").numpy() == "héllo".encode()
    t = tf.constant(["a", "bc"])
    assert t.shape == (2,) and t.dtype == tf.string and t.numpy().tolist() == b("a", "bc")
    assert [s.numpy() for s in t] == b("a", "bc") and t[1].numpy() == b"bc"
    assert tf.as_dtype("string") == tf.string


def test_bad_strings_raise_as_tensorflow():
    # TF: InvalidArgumentError "StringToNumberOp could not correctly convert string: x"
    with pytest.raises(tf.errors.InvalidArgumentError, match="could not correctly convert"):
        tf.strings.to_number(tf.constant(["x"]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="out of range"):
        tf.strings.substr(tf.constant("abc"), 5, 1)


def test_a_string_reaching_a_jax_computation_names_the_op():
    t = tf.constant(["a", "b"])
    with pytest.raises(TypeError, match="`sum` got a string tensor"):
        tf.reduce_sum(t)
    # A tf.function takes string tensors (traced for their value; test_tf_function_strings).
    assert tf.function(lambda x: x)(t).numpy().tolist() == [b"a", b"b"]
    with pytest.raises(TypeError, match="JAX computation got a string tensor"):
        jnp.asarray(t)
    with pytest.raises(TypeError, match="`mul` of a string tensor"):
        t * 2


def test_strings_through_dataset_map_and_text_vectorization():
    # list(tf.data.Dataset.from_tensor_slices(["Ab C", "d"]).map(tf.strings.lower)
    #      .as_numpy_iterator()) -> [b'ab c', b'd']
    ds = tf.data.Dataset.from_tensor_slices(["Ab C", "d"]).map(tf.strings.lower)
    assert list(ds.as_numpy_iterator()) == [b"ab c", b"d"]
    # TensorSpec(shape=(), dtype=tf.string, name=None)
    assert repr(ds.element_spec) == "TensorSpec(shape=(), dtype=tf.string, name=None)"
    layer = tf.keras.layers.TextVectorization(
        standardize=lambda s: tf.strings.regex_replace(tf.strings.lower(s), "[.!]", ""))
    layer.adapt(ds.batch(2))
    out = layer(tf.constant(["AB c!", "zz"]))
    vocab = layer.get_vocabulary()
    assert [[vocab[i] for i in row] for row in np.asarray(out).tolist()] == [
        ["ab", "c"], ["[UNK]", ""]]


def test_strings_given_to_a_model_name_the_input_pipeline_fix():
    model = tf.keras.Sequential([tf.keras.Input((1,)), tf.keras.layers.Dense(1)])
    with pytest.raises(TypeError, match=r"`x` holds strings.*ds.map\(lambda x, y"):
        model.predict(tf.constant(["The movie was great!"]), verbose=0)


def test_text_vectorization_of_one_string_tensor():
    # TF 2.21: tf.keras.layers.TextVectorization(vocabulary=["x"])(tf.constant("x y"))
    # -> tf.Tensor([2 1], shape=(2,), dtype=int64)
    out = tf.keras.layers.TextVectorization(vocabulary=["x"])(tf.constant("x y"))
    assert np.asarray(out).tolist() == [2, 1]
