"""Activation functions by name or as callables: `loopax.activations.get("relu")`."""

from loopax.src.activations import (deserialize, elu, exponential, gelu, get, hard_sigmoid,
                                    hard_silu, hard_swish, leaky_relu, linear, log_softmax,
                                    mish, relu, relu6, selu, serialize, sigmoid, silu, softmax,
                                    softplus, softsign, swish, tanh)
