"""String tensors inside `tf.function`: made by `tf.constant`, passed in, returned, and
through the tf.strings ops; each result is what TensorFlow 2.21 gives for the same
function."""

import warnings

import numpy as np
import pytest

import loopax.tf as tf


def test_a_string_constant_made_and_joined_inside_is_returned():
    @tf.function
    def f():
        a = tf.constant("a")
        return tf.strings.join([a, "b"], separator="-")

    assert str(f()) == "tf.Tensor(b'a-b', shape=(), dtype=string)"


def test_string_arguments_go_through_string_ops_with_numeric_results():
    @tf.function
    def g(s):
        return tf.strings.upper(s), tf.strings.length(s)

    upper, length = g(tf.constant(["ab", "cde"]))
    assert upper.numpy().tolist() == [b"AB", b"CDE"]
    assert length.numpy().tolist() == [2, 3] and length.dtype == tf.int32

    @tf.function
    def h(s):
        return tf.strings.reduce_join(tf.strings.split(s), separator="+")

    assert h(tf.constant("x y z")).numpy() == b"x+y+z"

    @tf.function
    def n(s):
        return tf.strings.regex_replace(tf.strings.lower(s), "[a]", "o")

    assert n("BANANA").numpy() == b"bonono"   # a Python str argument, as in TensorFlow


def test_numbers_parsed_from_strings_feed_compiled_arithmetic():
    @tf.function
    def k(s, scale):
        return tf.strings.to_number(s) * scale

    np.testing.assert_allclose(k(tf.constant(["1.5", "2"]), tf.constant(2.0)).numpy(),
                               [3.0, 4.0])

    @tf.function
    def count_words(s):
        return tf.size(tf.strings.split(s))

    assert int(count_words(tf.constant("a b c"))) == 3


def test_the_same_strings_reuse_the_trace_and_new_ones_give_new_results():
    @tf.function
    def double(a):
        return a + a

    assert double(tf.constant("a")).numpy() == b"aa"
    assert double(tf.constant("a")).numpy() == b"aa"
    assert double.experimental_get_tracing_count() == 1
    # TensorFlow traces once for every scalar string; loopax once per value (the
    # strings are computed on the host while tracing).
    assert double(tf.constant("b")).numpy() == b"bb"


def test_string_input_signature_binds_lists_and_refuses_numbers():
    @tf.function(input_signature=[tf.TensorSpec(shape=[None], dtype=tf.string)])
    def lens(s):
        return tf.strings.length(s) + 1

    assert lens(tf.constant(["ab", "c"])).numpy().tolist() == [3, 2]
    assert lens(["xyz"]).numpy().tolist() == [4]
    with pytest.raises(TypeError, match="s must be strings for TensorSpec"):
        lens(tf.constant([1]))


def test_strings_made_from_computed_numbers_run_the_function_as_python():
    v = tf.Variable(3)

    @tf.function
    def label(prefix):
        v.assign_add(1)
        return tf.strings.join([prefix, tf.strings.as_string(v)])

    with pytest.warns(UserWarning, match="'label' makes strings from values it computes "
                                         r"\(tf.strings.as_string\)"):
        first = label("n=")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        second = label("n=")
    assert (first.numpy(), second.numpy(), int(v.numpy())) == (b"n=4", b"n=5", 5)

    @tf.function
    def m(x):
        return tf.strings.as_string(x)

    with pytest.warns(UserWarning):
        assert m(tf.constant([1, 2])).numpy().tolist() == [b"1", b"2"]


def test_inside_a_compiled_loopax_function_the_error_names_the_op():
    import loopax

    @loopax.function
    def text_of(x):
        return tf.strings.as_string(x * 2)

    with pytest.raises(TypeError, match="tf.strings.as_string: `input` is computed inside "
                                        "a compiled tf.function"):
        text_of(tf.constant([1, 2]))
