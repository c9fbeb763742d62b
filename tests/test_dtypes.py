"""`dtypes.asarray`: NumPy arrays become JAX arrays as `jnp.asarray` makes them, without the
compiled program per shape that jax 0.10 runs for that; weights set or loaded from NumPy
arrays then compile nothing."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import loopax
from loopax.src import dtypes

RNG = np.random.default_rng(0)
INPUTS = {
    "float64": RNG.normal(size=(7,)) * 1e3,
    "float32": RNG.normal(size=(2, 3)).astype(np.float32),
    "tiny_float64": RNG.normal(size=(5,)) * 1e-40,
    "special_float64": np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 0.5, 1.5, 7e4]),
    "halves_float64": np.array([0.5, 1.5, 2.5, -0.5, -2.5, 254.7, 1 + 2**-24]),
    "int64_past_int32": RNG.integers(-2**40, 2**40, 6),
    "uint8": RNG.integers(0, 255, 4).astype(np.uint8),
    "bool": RNG.random(5) > 0.5,
    "bfloat16": RNG.normal(size=(3,)).astype(jnp.bfloat16),
    "numpy_scalar": np.float64(3.3),
}
TARGETS = [None, "float32", "bfloat16", "float16", "int32", "uint8", "bool"]


def defined_cast(value, target):
    """Float to integer casts of NaN, infinities and values out of range are undefined in
    NumPy (C's cast), which both sides use: those are left out."""
    if target is None or np.dtype(target).kind not in "iu" or value.dtype.kind != "f":
        return True
    info = np.iinfo(target)
    finite = np.asarray(value, np.float64)
    return bool(np.all(np.isfinite(finite)) and finite.min() > info.min - 1
                and finite.max() < info.max + 1)


@pytest.mark.parametrize("name", INPUTS)
def test_numpy_arrays_become_what_jnp_asarray_makes_without_a_compile(name, count_compiles):
    value = INPUTS[name]
    targets = [target for target in TARGETS if defined_cast(value, target)]
    expected = {target: jnp.asarray(value, dtype=target) for target in targets}
    with count_compiles() as compiles:
        got = {target: dtypes.asarray(value, dtype=target) for target in targets}
    assert compiles == []
    for target in targets:
        want, have = expected[target], got[target]
        assert (have.dtype, have.shape, have.weak_type) == (want.dtype, want.shape,
                                                             want.weak_type), target
        wide = np.float32 if have.dtype == jnp.bfloat16 else None   # NumPy's NaN test
        np.testing.assert_array_equal(np.asarray(have, wide), np.asarray(want, wide),
                                      err_msg=str(target))


SCALARS = [(0, "int32"), (-7, "int8"), (2**31 - 1, "int32"), (2**32 - 1, "uint32"),
           (True, "bool"), (False, "float32"), (True, "int32"), (0.1, "float32"),
           (-1e-45, "float32"), (1e39, "float32"), (float("nan"), "float32")]


@pytest.mark.parametrize("value, dtype", SCALARS, ids=lambda v: repr(v))
def test_python_scalars_with_a_dtype_become_what_jnp_asarray_makes_without_a_compile(
        value, dtype, monkeypatch, count_compiles):
    """`Variable(0, dtype="int32")` (an optimizer's step count) compiled a cast: the
    compiled cast is refused here (an earlier test may have compiled it already)."""
    with monkeypatch.context() as patched, count_compiles() as compiles:
        patched.setattr(jnp, "asarray", lambda *args, **kwargs: pytest.fail("a device cast"))
        have = dtypes.asarray(value, dtype)
    assert compiles == []
    want = jnp.asarray(value, dtype=dtype)
    assert (have.dtype, have.shape, have.weak_type) == (want.dtype, want.shape, want.weak_type)
    np.testing.assert_array_equal(np.asarray(have), np.asarray(want))


@pytest.mark.parametrize("value, dtype", [(2**31, "int32"), (-1, "uint32"), (300, "uint8")],
                         ids=lambda v: repr(v))
def test_python_ints_out_of_range_are_refused_as_jnp_refuses_them(value, dtype):
    with pytest.raises(OverflowError) as jax_error:
        jnp.asarray(value, dtype=dtype)
    with pytest.raises(OverflowError, match=str(jax_error.value)):
        dtypes.asarray(value, dtype)


def test_other_values_are_left_to_jnp_asarray():
    assert dtypes.asarray(1.5).weak_type and jnp.asarray(1.5).weak_type
    with pytest.warns(UserWarning, match="int64 requested in asarray is not available"):
        assert dtypes.asarray(np.arange(3), "int64").dtype == jnp.int32
    np.testing.assert_array_equal(dtypes.asarray([1, 2], "float32"), np.array([1.0, 2.0]))
    traced = jax.jit(lambda x: dtypes.asarray(x, "int32"))(jnp.array([1.7, -2.7]))
    np.testing.assert_array_equal(traced, [1, -2])


def dense_model():
    return loopax.Sequential([loopax.Input((3,))] + [loopax.layers.Dense(n) for n in (4, 5, 6)])


def test_set_weights_from_float64_arrays_and_load_weights_compile_nothing(tmp_path,
                                                                        count_compiles):
    """One compile per weight before (jax's `stage` / `convert_element_type` per shape)."""
    model = dense_model()
    weights = [RNG.normal(size=w.shape) for w in model.get_weights()]   # float64
    with count_compiles() as compiles:
        model.set_weights(weights)
    assert compiles == []
    for have, want in zip(model.get_weights(), weights):
        np.testing.assert_array_equal(have, want.astype(np.float32))

    model.save_weights(tmp_path / "m.weights.h5")
    fresh = dense_model()
    with count_compiles() as compiles:
        fresh.load_weights(tmp_path / "m.weights.h5")
    assert compiles == []
    for have, want in zip(fresh.get_weights(), model.get_weights()):
        np.testing.assert_array_equal(have, want)
