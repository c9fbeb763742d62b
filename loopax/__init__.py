"""loopax: Keras-compatible deep learning on JAX.

`import loopax as keras` runs Keras code; `loopax.GradientTape`,
`loopax.function` and `loopax.Module` run TensorFlow-style code on JAX.
"""

from loopax import (
                    activations,
                    callbacks,
                    constraints,
                    datasets,
                    initializers,
                    layers,
                    losses,
                    metrics,
                    models,
                    ops,
                    optimizers,
                    regularizers,
                    saving,
                    utils,
)
from loopax.src import random
from loopax.src.custom_gradient import custom_gradient
from loopax.src.function import Function, function, print
from loopax.src.layers.input_layer import Input
from loopax.src.layers.layer import Layer
from loopax.src.models.model import Model
from loopax.src.models.sequential import Sequential
from loopax.src.module import Module
from loopax.src.state import StateScope, Variable, name_scope
from loopax.src.tape import GradientTape
from loopax.src.tensor import Tensor, constant

