"""`tf.device`, `tf.config`, `tf.py_function`, `tf.init_scope` and `tf.errors`."""

from __future__ import annotations

import collections
import contextlib
import functools
import re
import sys
import types
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.function import print as _loopax_print
from loopax.src.tensor import unwrap
from loopax.src.tf_compat.function import TensorSpec
from loopax.src.tf_compat.tensors import as_tensors, document_module

# ---- devices ---------------------------------------------------------------------

PhysicalDevice = collections.namedtuple("PhysicalDevice", ["name", "device_type"])
LogicalDevice = collections.namedtuple("LogicalDevice", ["name", "device_type"])

_JAX_PLATFORM = {"CPU": "cpu", "GPU": "gpu", "TPU": "tpu"}


def _devices_of(device_type):
    try:
        return jax.devices(_JAX_PLATFORM.get(device_type, device_type.lower()))
    except RuntimeError:   # no backend of that kind on this machine
        return []


def _listed(device_type, kind, prefix):
    types_ = [device_type.upper()] if device_type else ["CPU", "GPU", "TPU"]
    return [kind(f"/{prefix}:{t}:{i}", t) for t in types_ for i in range(len(_devices_of(t)))]


def list_physical_devices(device_type=None):
    """The machine's devices as TensorFlow lists them (`/physical_device:GPU:0`)."""
    return _listed(device_type, PhysicalDevice, "physical_device")


def list_logical_devices(device_type=None):
    """The devices as `/device:GPU:0` names."""
    return _listed(device_type, LogicalDevice, "device")


def set_memory_growth(device, enable):
    """Accepted for TensorFlow compatibility; JAX's allocator is configured with the
    XLA_PYTHON_CLIENT_PREALLOCATE / _MEM_FRACTION environment variables instead."""


def set_visible_devices(devices, device_type=None):
    """Accepted for TensorFlow compatibility; choose devices with CUDA_VISIBLE_DEVICES
    (or JAX_PLATFORMS=cpu) before the process starts."""


def run_functions_eagerly(run_eagerly):
    """Not supported globally: pass `jit_compile=False` to one tf.function instead."""
    if run_eagerly:
        warnings.warn("loopax.tf.config.run_functions_eagerly(True) has no effect: decorate "
                      "the function with tf.function(jit_compile=False) to run it as Python.",
                      stacklevel=2)


config = types.SimpleNamespace(
    list_physical_devices=list_physical_devices,
    list_logical_devices=list_logical_devices,
    set_visible_devices=set_visible_devices,
    run_functions_eagerly=run_functions_eagerly,
    experimental=types.SimpleNamespace(set_memory_growth=set_memory_growth,
                                       list_physical_devices=list_physical_devices),
)

_DEVICE_NAME = re.compile(r"(?:/job:\w+)?(?:/replica:\d+)?(?:/task:\d+)?/?(?:device:)?"
                          r"(?P<type>[A-Za-z]+)(?::(?P<index>\d+))?$")


@contextlib.contextmanager
def device(device_name):
    """Places arrays created inside on `device_name` ("/GPU:0", "cpu:0", ...)
    through `jax.default_device`. A device this machine lacks falls back to the
    default one with a warning (TensorFlow's soft placement)."""
    match = _DEVICE_NAME.match(device_name or "")
    if not device_name or match is None:
        if device_name:
            warnings.warn(f"tf.device({device_name!r}): not a device name such as '/GPU:0'; "
                          "using the default device.", stacklevel=3)
        yield
        return
    kind, index = match["type"].upper(), int(match["index"] or 0)
    devices = _devices_of(kind)
    if index >= len(devices):
        warnings.warn(f"tf.device({device_name!r}): this machine has {len(devices)} {kind} "
                      f"device(s); using the default device {jax.devices()[0]} instead "
                      "(soft placement).", stacklevel=3)
        yield
        return
    with jax.default_device(devices[index]):
        yield


# ---- print --------------------------------------------------------------------------

class _CurrentStderr:
    """Writes to whatever `sys.stderr` is when the print runs (a compiled function
    prints long after it was traced)."""

    def write(self, text):
        return sys.stderr.write(text)

    def flush(self):
        sys.stderr.flush()


def print(*inputs, output_stream=None, sep=" ", end="\n", summarize=3, name=None):
    """`tf.print`: prints the values when the code runs, also inside tf.function;
    to standard error by default, as TensorFlow (`loopax.print` prints to stdout)."""
    _loopax_print(*inputs, output_stream=output_stream or _CurrentStderr(), sep=sep, end=end,
                  summarize=summarize)


# ---- py_function ----------------------------------------------------------------

def py_function(func=None, inp=None, Tout=None, name=None):  # TF's name
    """Runs the Python `func(*inp)` on NumPy-backed Tensors, also inside a compiled
    function (through `jax.pure_callback`). `Tout` is a dtype, a list of dtypes
    or TensorSpecs. Inside a compiled function the output shapes must be known:
    from TensorSpecs in `Tout`, else by calling `func` once on zeros of the
    input shapes when the function is traced. Not differentiable.

    As in TensorFlow it is also a decorator: `@tf.py_function(Tout=tf.float32)`
    above `def f(x, m)` makes `f(x, m)` run as `py_function(f, [x, m], Tout)`."""
    if Tout is None:
        raise TypeError("py_function: give `Tout`, the output dtype (or a list of "
                        "dtypes or TensorSpecs), e.g. `@tf.py_function(Tout=tf.float32)`.")
    if func is None or inp is None:
        def decorate(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                body = functools.partial(fn, **kwargs) if kwargs else fn
                return py_function(body, list(args), Tout, name)
            return wrapper
        return decorate if func is None else decorate(func)
    inputs = [unwrap(x) for x in inp]
    single = not isinstance(Tout, (list, tuple))
    touts = [Tout] if single else list(Tout)

    def run(*arrays):
        out = func(*as_tensors([jnp.asarray(a) for a in arrays]))
        outs = [out] if single else list(out)
        return [np.asarray(unwrap(o), dtype=_dtype_of(t)) for o, t in zip(outs, touts)]

    if not any(isinstance(x, jax.core.Tracer) for x in inputs):
        results = [jnp.asarray(r) for r in run(*inputs)]
    else:
        if all(isinstance(t, TensorSpec) and None not in t.shape for t in touts):
            shapes = [jax.ShapeDtypeStruct(tuple(t.shape), t.dtype) for t in touts]
        else:
            with jax.ensure_compile_time_eval():   # concrete Tensors for the probe
                probe = run(*[np.zeros(x.shape, x.dtype) for x in inputs])
            shapes = [jax.ShapeDtypeStruct(p.shape, p.dtype) for p in probe]
        results = jax.pure_callback(run, shapes, *inputs)
    return as_tensors(results[0] if single else results)


def numpy_function(func=None, inp=None, Tout=None, stateful=True, name=None):
    """`py_function` whose `func` receives NumPy arrays (a decorator too, as
    `py_function`)."""
    if func is None or inp is None:
        decorate = py_function(Tout=Tout)

        def numpy_decorate(fn):
            wrapped = decorate(lambda *xs, **kw: fn(*[np.asarray(x) for x in xs], **kw))
            return functools.wraps(fn)(wrapped)
        return numpy_decorate if func is None else numpy_decorate(func)
    return py_function(lambda *xs: func(*[np.asarray(x) for x in xs]), inp, Tout)


def _dtype_of(tout):
    return np.dtype(getattr(tout, "dtype", tout))


@contextlib.contextmanager
def init_scope():
    """Code inside runs eagerly even while a function is traced (TensorFlow lifts
    it out of the graph): arrays made inside are concrete values."""
    with jax.ensure_compile_time_eval():
        yield


document_module(globals())
