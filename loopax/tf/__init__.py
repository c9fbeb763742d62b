"""TensorFlow 2 names on loopax: `import loopax.tf as tf` runs TensorFlow 2
training code (eager ops, `tf.GradientTape`, `tf.function`, `tf.Module`,
`tf.keras`) on JAX.

`tf.keras` is loopax itself. The ops keep TensorFlow's signatures and
defaults (`argmax` along axis 0, `reduce_*(axis, keepdims)`,
`random.uniform(shape, minval, maxval, dtype, seed)`, ...) and return
`loopax.Tensor`s. docs/guides/migrating_from_tf_keras.md lists every name,
what it maps to, and what stays out (TensorFlow graphs and tf.compat.v1, TFRecord
protos, ragged and sparse ops), each of which raises an error naming the alternative.
`tf.function` rewrites Python control flow on tensors as TensorFlow's
autograph does (`tf.autograph`).
"""

import sys as _sys

import loopax as keras
from loopax import (
    Module,
    Tensor,
    UnconnectedGradients,
    custom_gradient,
    name_scope,
)

# ---- issue 36, items 1 and 8: versions, the profiler, tf.random.Generator --------
from loopax.src.tf_compat import (
    data,
    dtypes,
    linalg,
    nn,
    profiler,
    random,
    summary,
    train,
    version,
)
from loopax.src.tf_compat import math_ops as math
from loopax.src.tf_compat import unsupported as _unsupported
from loopax.src.tf_compat.core import (
    abs,
    add,
    add_n,
    argmax,
    argmin,
    argsort,
    boolean_mask,
    broadcast_to,
    cast,
    ceil,
    clip_by_global_norm,
    clip_by_norm,
    clip_by_value,
    concat,
    cond,
    constant,
    convert_to_tensor,
    cos,
    cumsum,
    divide,
    einsum,
    equal,
    executing_eagerly,
    exp,
    expand_dims,
    eye,
    fill,
    floor,
    gather,
    gather_nd,
    get_static_value,
    greater,
    greater_equal,
    identity,
    is_tensor,
    less,
    less_equal,
    linspace,
    log,
    logical_and,
    logical_not,
    logical_or,
    matmul,
    maximum,
    minimum,
    multiply,
    negative,
    newaxis,
    norm,
    not_equal,
    one_hot,
    ones,
    ones_like,
    pad,
    pow,
    range,
    rank,
    reduce_all,
    reduce_any,
    reduce_logsumexp,
    reduce_max,
    reduce_mean,
    reduce_min,
    reduce_prod,
    reduce_std,
    reduce_sum,
    reduce_variance,
    reshape,
    reverse,
    roll,
    round,
    rsqrt,
    shape,
    sigmoid,
    sign,
    sin,
    size,
    slice,
    sort,
    split,
    sqrt,
    square,
    squeeze,
    stack,
    stop_gradient,
    subtract,
    tan,
    tanh,
    tensordot,
    tile,
    transpose,
    truediv,
    unique,
    unstack,
    where,
    while_loop,
    zeros,
    zeros_like,
)
from loopax.src.tf_compat.dtypes import (
    DType,
    as_dtype,
    bfloat16,
    bool,
    complex64,
    complex128,
    double,
    float16,
    float32,
    float64,
    half,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from loopax.src.tf_compat.errors import errors
from loopax.src.tf_compat.function import GradientTape, TensorShape, TensorSpec, function
from loopax.src.tf_compat.runtime import (
    config,
    device,
    init_scope,
    numpy_function,
    print,
    py_function,
)
from loopax.src.tf_compat.tensor_array import TensorArray
from loopax.src.tf_compat.variables import Variable
from loopax.src.tf_compat.version import VERSION as __version__

# ---- end of issue 36, items 1 and 8 ----------------------------------------------

__getattr__ = _unsupported.missing_name

# ---- issue 36 items 2-3: tf.image, tf.distribute ----------------------------------
from loopax.src.tf_compat import distribute, image
from loopax.src.tf_compat import stateless_random as _stateless

for _name in ("split", "fold_in", "stateless_uniform", "stateless_normal",
              "stateless_truncated_normal"):   # tf.random's stateless ops
    setattr(random, _name, getattr(_stateless, _name))

# ---- end of issue 36 items 2-3 ----------------------------------------------------

# `import loopax.tf.nn`, `from loopax.tf.keras.layers import Dense`: the namespaces
# are importable by their TensorFlow paths too.
for _name, _namespace in (("math", math), ("nn", nn), ("linalg", linalg), ("data", data),
                          ("train", train), ("summary", summary),
                          ("random", random), ("config", config), ("errors", errors),
                          ("dtypes", dtypes), ("keras", keras),
                          ("image", image), ("distribute", distribute),
                          ("profiler", profiler), ("version", version)):
    _sys.modules[f"{__name__}.{_name}"] = _namespace
for _name, _module in vars(keras).items():
    if type(_module) is type(_sys) and _module.__name__.startswith("loopax."):
        _sys.modules.setdefault(f"{__name__}.keras.{_name}", _module)
del _name, _namespace, _module

# ---- issue 36 items 6 and 7: string tensors on the host, tf.strings, tf.data --------
# (one block, so that the parallel branches touching this file merge cleanly)
from loopax.src.tf_compat import core as _core  # noqa: E402
from loopax.src.tf_compat import strings  # noqa: E402
from loopax.src.tf_compat.dtypes import string  # noqa: E402

constant = strings.text_constant(constant)
convert_to_tensor = strings.text_convert_to_tensor(convert_to_tensor)
for _name, _numpy_path in strings.NUMPY_PATHS.items():
    globals()[_name] = strings.host_aware(getattr(_core, _name), _numpy_path)
del _name, _numpy_path
_sys.modules[f"{__name__}.strings"] = strings
from loopax.src.tf_compat import io  # noqa: E402

_sys.modules[f"{__name__}.io"] = io
from loopax.src.tf_compat import types  # noqa: E402

_sys.modules[f"{__name__}.types"] = types
from loopax.src.tf_compat.ragged_sparse import (  # noqa: E402
    RaggedTensor,
    SparseTensor,
    ragged,
    sparse,
)

_sys.modules[f"{__name__}.ragged"] = ragged
_sys.modules[f"{__name__}.sparse"] = sparse
# TensorFlow 2's short aliases of tf.keras.* (the text classification tutorial's
# `tf.metrics.BinaryAccuracy`)
metrics, losses, optimizers = keras.metrics, keras.losses, keras.optimizers
# ---- end of issue 36 items 6 and 7 ---------------------------------------------------

# ---- issue 36 item 5: tf.autograph (autograph of tf.function, loopax/src/autograph.py) ----
from loopax.src.tf_compat import autograph  # noqa: E402

_sys.modules[f"{__name__}.autograph"] = autograph

# ---- issue 36 item 4: tf.saved_model and tf.lite on loopax.export (loopax's own format) ----
from loopax.src.tf_compat import lite, saved_model  # noqa: E402

_sys.modules[f"{__name__}.saved_model"] = saved_model
_sys.modules[f"{__name__}.lite"] = lite
