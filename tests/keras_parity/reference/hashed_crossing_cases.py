"""HashedCrossing cases recorded from Keras 3.15.1 + TensorFlow by
make_hashed_crossing_reference.py: (case id, layer kwargs, features as
(values, NumPy dtype))."""

WORDS = ["A", "B", "A", "B", "A"]
CASES = [
    ("strings_and_ints", {"num_bins": 5}, [(WORDS, "str"), ([101, 101, 101, 102, 102], "int64")]),
    ("ints_int32_negative", {"num_bins": 1000003},
     [([1, 2, -3, 0], "int64"), ([5, 6, 7, -1], "int32")]),
    ("large_int64_ids", {"num_bins": 97},
     [([2**40 + 5, -(2**62), 2**63 - 1], "int64"), ([3, 4, 5], "int64")]),
    ("three_features", {"num_bins": 1000003},
     [(["a", "bb", "c"], "str"), (["x", "y", "z"], "str"), ([1, 2, 3], "int64")]),
    ("long_and_unicode_strings", {"num_bins": 2**31 - 1},
     [(["é" * 9, "x" * 70, "tokyo 東京"], "str"), (["", "a" * 33, "b" * 17], "str")]),
    ("bytes", {"num_bins": 13}, [([b"cat", b"dog"], "bytes"), ([b"red", b"blue"], "bytes")]),
    ("batch_of_one_column", {"num_bins": 7},
     [([["u"], ["v"], ["w"]], "str"), ([[1], [2], [3]], "int64")]),
    ("scalars", {"num_bins": 5}, [("A", "str"), (101, "int64")]),
    ("one_hot", {"num_bins": 6, "output_mode": "one_hot"},
     [(WORDS, "str"), ([101, 101, 101, 102, 102], "int64")]),
    ("one_hot_column", {"num_bins": 4, "output_mode": "one_hot"},
     [([["A"], ["B"]], "str"), ([[1], [2]], "int64")]),
    ("one_hot_scalars", {"num_bins": 4, "output_mode": "one_hot"},
     [("A", "str"), (7, "int64")]),
]
