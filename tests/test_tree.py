"""loopax.tree against keras.tree (Keras 3.15, optree): each function called on
the same structures gives the same result, or both raise the same error type."""

import collections

import numpy as np
import pytest

keras = pytest.importorskip("keras")

import loopax  # noqa: E402
from loopax import tree  # noqa: E402

Point = collections.namedtuple("Point", "x y")
OtherPoint = collections.namedtuple("Point", "x y")   # same name and fields, another type


def structures():
    """Fresh structures (some functions are given callables that mutate)."""
    return {
        "leaf": 3,
        "none": None,
        "string": "abc",
        "nested-lists": [[1, 2, 3], [4, [5], [[6]]]],
        "unsorted-dict": {100: "world!", 6: "Hello", "key": None},
        "ordered-dict": collections.OrderedDict([("b", 1), ("a", [2, None])]),
        "default-dict": collections.defaultdict(list, {"b": 1, "a": (2, 3)}),
        "namedtuple": Point(x={"q": 1, "p": 2}, y=(3,)),
        "deque": collections.deque([1, [2, 3]], maxlen=5),
        "empties": [[], {}, (), 4],
        "mixed-keys": {1: "one", "a": "letter"},
    }


CASE_IDS = list(structures())


def same(ours, theirs):
    assert type(ours) is type(theirs)
    assert ours == theirs


@pytest.mark.parametrize("name", CASE_IDS)
def test_flatten_flatten_with_path_and_is_nested_match_keras(name):
    structure = structures()[name]
    same(tree.flatten(structure), keras.tree.flatten(structure))
    same(tree.flatten_with_path(structure), keras.tree.flatten_with_path(structure))
    assert tree.is_nested(structure) == keras.tree.is_nested(structure)


@pytest.mark.parametrize("name", CASE_IDS)
def test_pack_sequence_as_inverts_flatten_as_keras(name):
    structure = structures()[name]
    flat = [f"v{i}" for i in range(len(keras.tree.flatten(structure)))]
    ours, theirs = tree.pack_sequence_as(structure, flat), keras.tree.pack_sequence_as(
        structure, flat)
    same(ours, theirs)
    assert list(ours) == list(theirs) if isinstance(ours, dict) else True   # key order


@pytest.mark.parametrize("name", CASE_IDS)
def test_map_structure_and_lists_to_tuples_match_keras(name):
    structure = structures()[name]
    double = lambda v: None if v is None else v * 2
    same(tree.map_structure(double, structure), keras.tree.map_structure(double, structure))
    same(tree.map_structure(lambda a, b: (a, b), structure, structure),
         keras.tree.map_structure(lambda a, b: (a, b), structure, structure))
    same(tree.lists_to_tuples(structure), keras.tree.lists_to_tuples(structure))


@pytest.mark.parametrize("top_down", [True, False], ids=["top-down", "bottom-up"])
@pytest.mark.parametrize("name", CASE_IDS)
def test_traverse_visits_and_replaces_as_keras(name, top_down):
    def run(lib):
        seen = []

        def visit(node):
            seen.append(repr(node))
            if node == 2:
                return lib.tree.MAP_TO_NONE
            return node * 10 if isinstance(node, int) and not top_down else None

        return lib.tree.traverse(visit, structures()[name], top_down=top_down), seen

    ours, theirs = run(loopax), run(keras)
    same(ours[0], theirs[0])
    assert ours[1] == theirs[1]


MISMATCHES = {
    "list-vs-tuple": ([1, 2], (1, 2)),
    "deeper": ([1, 2], [1, [2]]),
    "shallower": ([1, [2]], [1, 2]),
    "other-namedtuple-type": (Point(1, 2), OtherPoint(1, 2)),
    "other-keys": ({"a": 1}, {"b": 1}),
}


@pytest.mark.parametrize("a,b", MISMATCHES.values(), ids=MISMATCHES.keys())
def test_mismatched_structures_raise_value_error_as_keras(a, b):
    with pytest.raises(ValueError):
        keras.tree.assert_same_structure(a, b)
    with pytest.raises(ValueError, match="same nested structure"):
        tree.assert_same_structure(a, b)
    with pytest.raises(ValueError):
        tree.map_structure(lambda x, y: x, a, b)


def test_dict_likes_with_the_same_keys_match_and_keep_the_first_type():
    a, b = {"a": 1, "b": 2}, collections.OrderedDict([("b", 3), ("a", 4)])
    tree.assert_same_structure(a, b)
    same(tree.map_structure(lambda x, y: x + y, b, a),
         keras.tree.map_structure(lambda x, y: x + y, b, a))
    same(tree.map_structure(lambda x, y: x + y, a, b),
         keras.tree.map_structure(lambda x, y: x + y, a, b))


def test_assert_same_paths_ignores_container_types_as_keras():
    tree.assert_same_paths([1, [2]], (1, (3,)))
    keras.tree.assert_same_paths([1, [2]], (1, (3,)))
    with pytest.raises(ValueError, match="Paths in `a` missing in `b`"):
        tree.assert_same_paths([1, [2]], {"a": 1})


def test_map_structure_none_is_leaf_false_keeps_nones_as_keras():
    structure = [1, None, {"a": None, "b": 2}]
    same(tree.map_structure(lambda v: v * 2, structure, none_is_leaf=False),
         keras.tree.map_structure(lambda v: v * 2, structure, none_is_leaf=False))
    assert tree.map_structure(lambda v: 5, None, none_is_leaf=False) is None


def test_map_structure_up_to_matches_keras_and_its_documented_example():
    structure = [[1, 1], [2, 2]]
    same(tree.map_structure_up_to([0, [0, 0]], str, structure),
         keras.tree.map_structure_up_to([0, [0, 0]], str, structure))
    # Keras's docstring example (None leaves in the shallow structure), which
    # Keras 3.15 itself raises on:
    assert tree.map_structure_up_to([None, None], len, structure) == [2, 2]
    assert tree.map_structure_up_to([None, [None, None]], str, structure) == \
        ["[1, 1]", ["2", "2"]]
    with pytest.raises(ValueError):
        tree.map_structure_up_to([0, [0, 0]], str, [[1, 1], 2])


def test_map_shape_structure_treats_shapes_as_leaves_as_keras():
    structure = {"a": (None, 3), "b": [(1,), [2, None]], "c": (), "d": [[], {"x": None}]}
    same(tree.map_shape_structure(repr, structure),
         keras.tree.map_shape_structure(repr, structure))


@pytest.mark.parametrize("flat", [[1], [1, 2, 3]], ids=["too-few", "too-many"])
def test_pack_sequence_as_of_the_wrong_length_raises_value_error_as_keras(flat):
    with pytest.raises(ValueError):
        keras.tree.pack_sequence_as([1, [2]], flat)
    with pytest.raises(ValueError, match="2 leaves"):
        tree.pack_sequence_as([1, [2]], flat)
    with pytest.raises(TypeError):
        tree.pack_sequence_as([1], 5)


def test_arrays_and_variables_are_leaves():
    v = loopax.Variable(np.ones(2))
    leaves = tree.flatten({"w": v, "x": np.zeros(3)})
    assert leaves[0] is v and leaves[1].shape == (3,)
