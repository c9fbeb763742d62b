"""How TF-name ops return values: eager results are `loopax.Tensor`s (with
`.numpy()`, as TensorFlow's EagerTensor); under a JAX trace they stay tracers."""

from __future__ import annotations

import functools
import inspect
from typing import Any

import jax
import numpy as np

from loopax.src import dtypes as _dtypes
from loopax.src import tensor as _tensor
from loopax.src.data.strings import StringTensor
from loopax.src.state import Variable, _state
from loopax.src.tensor import EagerTensor, Tensor, op


def as_tensor(x: Any) -> Any:
    """`x` as an EagerTensor (which prints as TensorFlow's) when it is a concrete array
    or a Tensor that no recording GradientTape follows; anything else (tracers,
    Variables, Python values, Tensors a tape follows) unchanged."""
    if isinstance(x, EagerTensor):
        return x
    if isinstance(x, Tensor):
        if _state.tapes and any(t._follows(x) for t in _state.tapes):
            return x
        tensor = EagerTensor(x.value)
        mask = getattr(x, "_keras_mask", None)
        if mask is not None:
            tensor._keras_mask = mask
        return tensor
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        return EagerTensor(x)
    if isinstance(x, (np.ndarray, np.generic)):
        return EagerTensor(_dtypes.asarray(x))
    return x


def as_tensors(tree: Any) -> Any:
    """`as_tensor` on every leaf of a pytree (Tensors and Variables are leaves)."""
    return jax.tree_util.tree_map(as_tensor, tree,
                                  is_leaf=lambda x: isinstance(x, (Tensor, Variable)))


def returns_tensors(fn):
    """Wraps `fn` so its eager array results come back as Tensors."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return as_tensors(fn(*args, **kwargs))
    return wrapper


def tf_op(fn):
    """A loopax op (a tape records it) whose eager results are Tensors."""
    return returns_tensors(op(fn))


class HostValueNeeded(TypeError):
    """A host-side op (tf.strings) got a value that a compiled function computes,
    so not known until the program runs; `tf.function` then runs the function as
    Python."""


# ---- printing, as TensorFlow's EagerTensor prints -------------------------------------

def dtype_name(value: Tensor | Variable) -> str:
    """TensorFlow's name of `value`'s dtype: `float32`, `int32`, `string`, ..."""
    return "string" if isinstance(value, StringTensor) else np.dtype(value.dtype).name


def numpy_text(value: Tensor | Variable, is_repr: bool) -> str:
    """The NumPy text of `value` in TensorFlow's prints: `str` (or, for `repr`, the
    `repr` of the array, and of the Python scalar for a 0-d value), on a new line
    when it spans several."""
    raw = value.numpy()
    if isinstance(raw, bytes):
        return repr(raw)
    array = np.asarray(raw)
    if array.ndim == 0:
        text = repr(array.item()) if is_repr else str(array)
    else:
        text = repr(array) if is_repr else str(array)
    return "\n" + text if "\n" in text else text


def tensorflow_text(value: Tensor, is_repr: bool) -> str:
    """`str(t)` and `repr(t)` of an eager Tensor as TensorFlow prints them:
    `tf.Tensor([1 2], shape=(2,), dtype=int32)` and
    `<tf.Tensor: shape=(2,), dtype=int32, numpy=array([1, 2], dtype=int32)>`."""
    if isinstance(value.value, jax.core.Tracer):
        return value._loopax_repr()
    shape, dtype = tuple(value.shape), dtype_name(value)
    if is_repr:
        return f"<tf.Tensor: shape={shape}, dtype={dtype}, numpy={numpy_text(value, True)}>"
    return f"tf.Tensor({numpy_text(value, False)}, shape={shape}, dtype={dtype})"


# With loopax.tf imported, EagerTensors (what TensorFlow code gets) print as TensorFlow's;
# other Tensors (a layer's eager output, loopax.constant) keep loopax's text.
_tensor.register_tensor_format(tensorflow_text)


def static_ints(value, what):
    """A shape-like argument (list, tuple, array, Tensor) as a tuple of Python
    ints; its entries must be known when the function is traced."""
    if isinstance(value, (Tensor, Variable)):
        value = value.value
    try:
        if isinstance(value, (list, tuple)):
            return tuple(int(np.asarray(v)) for v in value)
        return tuple(int(v) for v in np.asarray(value).reshape(-1))
    except jax.errors.ConcretizationTypeError:
        raise TypeError(
            f"{what} must be known when the function is compiled (XLA needs static "
            f"shapes), got a traced value. Compute it from `x.shape` (Python ints) "
            f"rather than from a value the function computes.") from None


def axis_arg(axis):
    """A TensorFlow axis argument (int, list, tuple, array or None) as an int, a
    tuple of ints or None."""
    if axis is None or isinstance(axis, int):
        return axis
    if isinstance(axis, (list, tuple)) or np.ndim(np.asarray(axis)) == 1:
        return static_ints(axis, "axis")
    return int(np.asarray(axis if not isinstance(axis, Tensor) else axis.value))


# ---- docstrings ---------------------------------------------------------------------
# TensorFlow's ops share their parameter names; each is described once here, and
# `document` appends the Args/Returns sections of the reference pages to the short
# docstrings of the functions.

_UNUSED = "Accepted for TensorFlow compatibility; unused."
PARAMETERS = {
    "x": "A tensor (array, Tensor, Variable or Python number).",
    "y": "A tensor, broadcast against `x`.",
    "a": "A tensor.", "b": "A tensor.", "t": "A tensor.",
    "input": "A tensor.", "input_": "A tensor.", "input_tensor": "A tensor.",
    "tensor": "A tensor.", "value": "A tensor or array-like value.",
    "values": "A list of tensors.", "inputs": "A list of tensors of one shape.",
    "params": "The tensor to take slices from.",
    "indices": "Integer indices.", "mask": "A boolean tensor over the leading axes.",
    "condition": "A boolean tensor.",
    "axis": "An axis or list of axes (negative counts from the end); None as described.",
    "axes": "A list of axes.", "keepdims": "Whether reduced axes stay, with size 1.",
    "dtype": "The dtype of the result (a `tf.<dtype>`, NumPy dtype or name).",
    "dtype_hint": "The dtype used when `value` has none of its own.",
    "shape": "A list of ints (or a 1-D integer tensor known when compiled).",
    "dims": "A list of ints: the shape.", "multiples": "Repetitions per axis.",
    "perm": "The permutation of the axes.", "conjugate": "Also conjugate (complex).",
    "output_type": "The integer dtype of the result.", "out_type": "The integer dtype.",
    "out_idx": "The integer dtype of the indices.",
    "batch_dims": "The number of leading batch axes shared by `params` and `indices`.",
    "start": "The first value (or, alone, the limit).", "limit": "The end (excluded).",
    "delta": "The step.", "stop": "The last value.", "num": "The number of values.",
    "num_rows": "Rows.", "num_columns": "Columns (default `num_rows`).",
    "batch_shape": "Leading batch dimensions.",
    "depth": "The number of classes.", "on_value": "The value at the index (default 1).",
    "off_value": "The value elsewhere (default 0).",
    "clip_value_min": "The lower bound.", "clip_value_max": "The upper bound.",
    "clip_norm": "The largest norm allowed.", "t_list": "A list of tensors (None allowed).",
    "use_norm": "A precomputed global norm (default: computed).",
    "pred": "A scalar bool (Python or tensor).",
    "true_fn": "Function of no arguments run when `pred` is true.",
    "false_fn": "Function of no arguments run otherwise (same output structure).",
    "cond": "`cond(*loop_vars)` -> scalar bool.",
    "body": "`body(*loop_vars)` -> new loop vars (same structure, shapes, dtypes).",
    "loop_vars": "The initial loop variables (a list or tuple).",
    "maximum_iterations": "An upper bound on the iterations, or None.",
    "transpose_a": "Transpose `a` first.", "transpose_b": "Transpose `b` first.",
    "adjoint_a": "Conjugate-transpose `a` first.", "adjoint_b": "Conjugate-transpose `b`.",
    "equation": "The einsum subscripts, e.g. 'ij,jk->ik'.",
    "num_or_size_splits": "The number of equal parts, or a list of sizes (one may be -1).",
    "begin": "The start index per axis.", "size": "The extent per axis (-1: to the end).",
    "paddings": "[[before, after]] per axis.", "mode": "'CONSTANT', 'REFLECT' or 'SYMMETRIC'.",
    "constant_values": "The value of constant padding.",
    "shift": "The shift (per axis in `axis`).", "direction": "'ASCENDING' or 'DESCENDING'.",
    "exclusive": "Start at zero (exclude each entry itself).",
    "reverse": "Accumulate from the end.", "ord": "The norm's order ('euclidean' default).",
    "partial": _UNUSED, "stable": "Accepted for TensorFlow compatibility (sorts are stable).",
    "type_value": "A dtype name, NumPy/JAX type or dtype.",
    "device_name": "A device name such as '/GPU:0' or 'cpu:0'.",
    "func": "The Python function.", "inp": "The list of input tensors.",
    "Tout": "The output dtype, a list of them, or TensorSpecs (with shapes).",
    "stateful": _UNUSED, "output_stream": "A file object (default: standard error).",
    "sep": "The separator between values.", "end": "Printed after the values.",
    "summarize": "How many entries to show at each end of long arrays (-1: all).",
    "input_signature": "A list of TensorSpecs the arguments must match, or None.",
    "autograph": "True rewrites Python if/while/for on tensors as compiled control flow; "
                 "False runs the Python as written.",
    "jit_compile": "False runs the function as Python (for debugging); None or True compile "
                   "with XLA.",
    "reduce_retracing": _UNUSED,
    "features": "A tensor.", "alpha": "The slope for negative inputs.",
    "approximate": "Use the tanh approximation (False: exact, with erf).",
    "labels": "The targets (by keyword, as TensorFlow requires).",
    "logits": "Unnormalized log-probabilities (by keyword).",
    "pos_weight": "The weight of the positive term.", "dim": "Deprecated name of `axis`.",
    "epsilon": "A lower bound of the squared norm.", "variance_epsilon": "Added to variance.",
    "mean": "The mean.", "variance": "The variance.", "offset": "Added after scaling, or None.",
    "scale": "Multiplied after normalizing, or None.", "bias": "A 1-D tensor (channels).",
    "data_format": "'NHWC' (channels last, default) or 'NCHW'.",
    "rate": "The probability of dropping an entry.", "noise_shape": "The shape of the mask.",
    "seed": "None (the global generator), an int op seed, or a loopax SeedGenerator.",
    "filters": "The kernel: spatial dims + [in_channels, out_channels].",
    "strides": "An int, one per spatial axis, or [1, s..., 1].", "stride": "As `strides`.",
    "padding": "'SAME' or 'VALID'.", "dilations": "An int or one per spatial axis.",
    "ksize": "The window: an int, one per spatial axis, or [1, k..., 1].",
    "ids": "Integer row indices.", "max_norm": _UNUSED, "k": "How many (or which diagonal).",
    "sorted": "Whether the k values come sorted, largest first.", "index_type": _UNUSED,
    "targets": "Class indices, one per row.", "predictions": "Scores (batch, classes).",
    "per_example_loss": "One loss per example.", "sample_weight": "Weights, or None.",
    "global_batch_size": "The divisor (default: the number of examples).",
    "regularization_loss": "A regularization loss.",
    "data": "A tensor whose rows are summed.", "segment_ids": "The segment of each row.",
    "num_segments": "The number of segments.",
    "matrix": "A (batch of) square matrix.", "rhs": "The right-hand side.",
    "adjoint": "Solve with the conjugate transpose of `matrix`.",
    "full_matrices": "Full (not reduced) factors.", "compute_uv": "Also return u and v.",
    "diagonal": "The diagonal values (last axis).", "num_lower": "Sub-diagonals kept (-1: all).",
    "num_upper": "Super-diagonals kept (-1: all).",
    "minval": "The lower bound (included).", "maxval": "The upper bound (excluded).",
    "stddev": "The standard deviation.", "num_samples": "Samples per row.",
    "device": _UNUSED, "device_type": "'CPU', 'GPU', 'TPU', or None for all.",
    "devices": _UNUSED, "enable": _UNUSED, "run_eagerly": "Whether to run eagerly.",
}
COMPATIBILITY_ONLY = {
    "name", "layout", "validate_indices", "a_is_sparse", "b_is_sparse", "grad_a", "grad_b",
    "shape_invariants", "parallel_iterations", "back_prop", "swap_memory",
    "experimental_implements", "experimental_autograph_options", "experimental_attributes",
    "experimental_relax_shapes", "experimental_compile", "experimental_follow_type_hints",
}


def document(fn, returns="The result, a Tensor (a tracer inside a compiled function).",
             **described):
    """Appends Args (from `PARAMETERS`, or `described`) and Returns sections to
    `fn`'s docstring, unless it has them; returns `fn`."""
    doc = fn.__doc__ or ""
    if "Args:" in doc:
        return fn
    lines = []
    for parameter in inspect.signature(fn).parameters.values():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            text = described.get(parameter.name, "Passed on.")
        elif parameter.name in described:
            text = described[parameter.name]
        elif parameter.name in COMPATIBILITY_ONLY:
            text = _UNUSED
        else:
            text = PARAMETERS.get(parameter.name)
            if text is None:
                raise KeyError(f"describe parameter {parameter.name!r} of {fn.__name__} "
                               "in loopax.src.tf_compat.tensors.PARAMETERS")
        lines.append(f"    {parameter.name}: {text}")
    sections = "\n\nArgs:\n" + "\n".join(lines) if lines else ""
    if returns and not doc.lstrip().startswith("Returns"):
        sections += f"\n\nReturns:\n    {returns}"
    fn.__doc__ = doc.rstrip() + sections + "\n"
    return fn


def document_module(namespace):
    """`document` on every public function of loopax.tf in the module `namespace`;
    functions a factory made (`tf_unary`, ...) get their public name."""
    for name, value in list(namespace.items()):
        if (inspect.isfunction(value) and not name.startswith("_")
                and value.__module__.startswith("loopax.src.tf_compat")
                and value.__module__ != __name__):
            if value.__name__.startswith("tf_") or "<locals>" in value.__qualname__:
                value.__name__ = value.__qualname__ = name   # where the docs can find it
            document(value)
