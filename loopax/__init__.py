"""loopax: Keras-compatible deep learning on JAX.

`import loopax as keras` runs Keras code; `loopax.GradientTape`,
`loopax.function` and `loopax.Module` run TensorFlow-style code on JAX.
"""

from loopax import (
    activations,
    applications,
    backend,
    callbacks,
    config,
    constraints,
    datasets,
    distillation,
    distribution,
    dtype_policies,
    export,
    initializers,
    layers,
    legacy,
    losses,
    metrics,
    mixed_precision,
    models,
    ops,
    optimizers,
    preprocessing,
    quantizers,
    regularizers,
    saving,
    tree,
    utils,
    visualization,
)
from loopax.src import compilation_cache as _compilation_cache
from loopax.src import random
from loopax.src.custom_gradient import custom_gradient
from loopax.src.device import device
from loopax.src.function import Function, function, print
from loopax.src.initializers import Initializer
from loopax.src.layers.input_layer import Input
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.layer import Layer as Operation  # Keras's base of layers
from loopax.src.layers.symbolic import SymbolicTensor as KerasTensor
from loopax.src.losses.loss import Loss
from loopax.src.metrics.metric import Metric
from loopax.src.mixed_precision import DTypePolicy, FloatDTypePolicy
from loopax.src.models.model import Model
from loopax.src.models.sequential import Sequential
from loopax.src.module import Module
from loopax.src.naming import name_scope
from loopax.src.optimizers.optimizer import Optimizer
from loopax.src.quantizers import Quantizer
from loopax.src.regularizers import Regularizer
from loopax.src.remat import RematScope, remat
from loopax.src.state import StatelessScope, StateScope, Variable
from loopax.src.symbolic_scope import SymbolicScope
from loopax.src.tape import GradientTape, UnconnectedGradients
from loopax.src.tensor import Tensor, constant
from loopax.src.version import __version__, version

_compilation_cache.configure_from_environment()

# `from loopax import *` gives these; `loopax.print` (TensorFlow's tf.print) is
# left out so the star import does not replace the builtin `print`.
__all__ = [
    "DTypePolicy", "FloatDTypePolicy", "Function", "GradientTape", "Initializer", "Input",
    "InputSpec", "KerasTensor", "Layer", "Loss", "Metric", "Model", "Module", "Operation",
    "Optimizer", "Quantizer", "Regularizer", "RematScope", "Sequential", "StateScope",
    "StatelessScope", "SymbolicScope", "Tensor", "UnconnectedGradients", "Variable",
    "activations", "applications",
    "backend", "callbacks", "config", "constant", "constraints", "custom_gradient",
    "datasets", "device", "distribution", "dtype_policies", "export", "function",
    "initializers", "layers", "losses", "metrics", "mixed_precision", "models", "name_scope",
    "ops", "optimizers", "preprocessing", "quantizers", "random",
    "regularizers", "remat", "saving", "tree", "utils", "version", "visualization",
    "distillation", "legacy",
]


def __getattr__(name):
    """`loopax.wrappers` is imported on first use: it imports scikit-learn (seconds)."""
    if name == "wrappers":
        import importlib
        return importlib.import_module("loopax.wrappers")
    raise AttributeError(f"module 'loopax' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | {"wrappers"})
