"""Cases for the lookup/text layers whose Keras outputs need TensorFlow.

Keras 3 runs StringLookup, IntegerLookup, Hashing and TextVectorization with
TensorFlow only; the test environment has no TensorFlow, so
`make_lookup_reference.py` (run once in an environment with keras==3.15.1 and
tensorflow) records Keras's outputs for these cases in
`lookup_reference.json`, and `test_lookup_parity.py` compares loopax with
them. Each case: (id, layer class, constructor kwargs, adapt data or None,
call input).
"""

WORDS = ["the", "cat", "sat", "on", "the", "mat", "the", "cat", "ran", "dog", "a", "a"]
TEXTS = ["The cat sat on the mat.", "The dog ran!", "A cat, a dog; a MAT?", "  spaces   here ",
         "Ünïcode Wörds wörds", "the the the cat"]
QUERY_TEXTS = ["the cat ran home", "A dog... sat", "", "Wörds and more words"]

CASES = [
    ("string-adapt-int", "StringLookup", {}, WORDS, [["the", "dog", "zebra"], ["a", "mat", "x"]]),
    ("string-vocab-mask", "StringLookup", {"vocabulary": ["a", "b", "c"], "mask_token": ""},
     None, [["a", "", "c", "q"]]),
    ("string-oov3", "StringLookup", {"vocabulary": ["a", "b"], "num_oov_indices": 3},
     None, [["a", "zz", "yy", "b", "hello", "world"]]),
    ("string-max-tokens", "StringLookup", {"max_tokens": 4}, WORDS, [["the", "cat", "a", "sat"]]),
    ("string-multi-hot", "StringLookup", {"output_mode": "multi_hot"}, WORDS,
     [["the", "cat", "cat"], ["zz", "a", "the"]]),
    ("string-count-pad", "StringLookup", {"output_mode": "count", "max_tokens": 10,
                                          "pad_to_max_tokens": True}, WORDS,
     [["the", "cat", "cat"], ["zz", "zz", "the"]]),
    ("string-one-hot", "StringLookup", {"output_mode": "one_hot"}, WORDS,
     ["the", "zz", "a"]),
    ("string-tf-idf", "StringLookup", {"output_mode": "tf_idf"},
     [["the", "cat", "sat"], ["the", "dog", "the"], ["a", "cat", "a"]],
     [["the", "cat", "cat"], ["zz", "a", "the"]]),
    ("string-tf-idf-given", "StringLookup", {"output_mode": "tf_idf", "vocabulary": ["x", "y"],
                                             "idf_weights": [0.5, 2.0]}, None,
     [["x", "y", "y"], ["z", "z", "x"]]),
    ("string-invert", "StringLookup", {"vocabulary": ["a", "b", "c"], "invert": True}, None,
     [[0, 1, 3, 2]]),
    ("string-invert-mask", "StringLookup", {"vocabulary": ["a", "b"], "invert": True,
                                            "mask_token": "[M]"}, None, [[0, 1, 2, 3]]),
    ("int-adapt", "IntegerLookup", {}, [12, 36, 12, 1138, 42, 12, 36], [[12, 1138, 42, 7]]),
    ("int-vocab-mask", "IntegerLookup", {"vocabulary": [12, 36, 1138], "mask_token": 0}, None,
     [[12, 0, 1138, 5]]),
    ("int-oov2", "IntegerLookup", {"vocabulary": [12, 36], "num_oov_indices": 2}, None,
     [[12, 7, 8, 36, -3]]),
    ("int-multi-hot", "IntegerLookup", {"vocabulary": [12, 36, 1138],
                                        "output_mode": "multi_hot"}, None,
     [[12, 36, 5], [36, 36, 1138]]),
    ("int-invert", "IntegerLookup", {"vocabulary": [12, 36, 1138], "invert": True}, None,
     [[0, 1, 2, 3]]),
    ("hash-strings", "Hashing", {"num_bins": 7}, None,
     [["a", "b", "cat", "dog"], ["", "x", "yy", "the"]]),
    ("hash-ints-mask", "Hashing", {"num_bins": 5, "mask_value": 0}, None,
     [[0, 1, 2, 3, 12345, -7]]),
    ("hash-salt", "Hashing", {"num_bins": 11, "salt": 133}, None, [["a", "b", "cat", "dog"]]),
    ("hash-salt-pair-multi-hot", "Hashing", {"num_bins": 6, "salt": [1, 2],
                                             "output_mode": "multi_hot"}, None,
     [["a", "b", "c"], ["a", "a", "dog"]]),
    ("hash-long-strings", "Hashing", {"num_bins": 1000003}, None,
     [["x" * n + str(n) for n in (15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 128, 129, 200, 1000)]]),
    ("hash-long-strings-salt", "Hashing", {"num_bins": 1000003, "salt": [5, 9]}, None,
     [["y" * n for n in (0, 7, 8, 9, 16, 100)]]),
    ("hash-one-hot", "Hashing", {"num_bins": 4, "output_mode": "one_hot"}, None,
     [["a"], ["b"], ["c"]]),
    ("text-default", "TextVectorization", {}, TEXTS, QUERY_TEXTS),
    ("text-seq-len", "TextVectorization", {"max_tokens": 8, "output_sequence_length": 5},
     TEXTS, QUERY_TEXTS),
    ("text-ngrams", "TextVectorization", {"ngrams": 2, "output_sequence_length": 6}, TEXTS,
     QUERY_TEXTS),
    ("text-multi-hot", "TextVectorization", {"output_mode": "multi_hot", "max_tokens": 10},
     TEXTS, QUERY_TEXTS),
    ("text-count-ngrams", "TextVectorization", {"output_mode": "count", "ngrams": (1, 3)},
     TEXTS, QUERY_TEXTS),
    ("text-tf-idf", "TextVectorization", {"output_mode": "tf_idf"}, TEXTS, QUERY_TEXTS),
    ("text-lower-char", "TextVectorization", {"standardize": "lower", "split": "character",
                                              "output_sequence_length": 12}, TEXTS, QUERY_TEXTS),
    ("text-strip-no-split", "TextVectorization", {"standardize": "strip_punctuation",
                                                  "split": None}, TEXTS, [[t] for t in TEXTS]),
    ("text-vocab", "TextVectorization", {"vocabulary": ["cat", "the", "dog"]}, None,
     QUERY_TEXTS),
    ("text-2d-input", "TextVectorization", {"output_sequence_length": 4}, TEXTS,
     [[t] for t in QUERY_TEXTS]),
]
