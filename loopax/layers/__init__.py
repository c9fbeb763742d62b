"""Layers (Keras names): `loopax.layers.Dense`, `Conv2D`, `BatchNormalization`, ..."""

from loopax.src.layers.attention import MultiHeadAttention
from loopax.src.layers.convolutional import Conv1D, Conv2D, Conv3D
from loopax.src.layers.core import (
                                    Activation,
                                    ActivityRegularization,
                                    Dense,
                                    Dropout,
                                    Embedding,
                                    Flatten,
                                    Identity,
                                    Reshape,
)
from loopax.src.layers.input_layer import Input, InputLayer
from loopax.src.layers.layer import InputSpec, Layer
from loopax.src.layers.merging import (
                                    Add,
                                    Average,
                                    Concatenate,
                                    Maximum,
                                    Minimum,
                                    Multiply,
                                    Subtract,
                                    add,
                                    average,
                                    concatenate,
                                    maximum,
                                    minimum,
                                    multiply,
                                    subtract,
)
from loopax.src.layers.normalization import BatchNormalization, LayerNormalization
from loopax.src.layers.pooling import (
                                    AveragePooling1D,
                                    AveragePooling2D,
                                    AvgPool1D,
                                    AvgPool2D,
                                    GlobalAveragePooling1D,
                                    GlobalAveragePooling2D,
                                    GlobalAvgPool1D,
                                    GlobalAvgPool2D,
                                    GlobalMaxPool1D,
                                    GlobalMaxPool2D,
                                    GlobalMaxPooling1D,
                                    GlobalMaxPooling2D,
                                    MaxPool1D,
                                    MaxPool2D,
                                    MaxPooling1D,
                                    MaxPooling2D,
)
