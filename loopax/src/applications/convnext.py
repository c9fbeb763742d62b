"""ConvNeXt Tiny/Small/Base/Large/XLarge (Liu et al. 2022): a patchify stem,
four stages of depthwise 7x7 + LayerNorm + MLP blocks with layer scale, one
builder; layer and sub-model names as Keras's."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from loopax.src import random
from loopax.src.api_export import export
from loopax.src.applications import building
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.core.dense import Dense
from loopax.src.layers.layer import Layer
from loopax.src.layers.normalization.normalization import LayerNormalization
from loopax.src.layers.pooling.pooling import GlobalAveragePooling2D, GlobalMaxPooling2D
from loopax.src.layers.preprocessing.preprocessing import Normalization
from loopax.src.models.sequential import Sequential

# (blocks per stage, channels per stage)
CONFIGS = {
    "Tiny": ((3, 3, 9, 3), (96, 192, 384, 768)),
    "Small": ((3, 3, 27, 3), (96, 192, 384, 768)),
    "Base": ((3, 3, 27, 3), (128, 256, 512, 1024)),
    "Large": ((3, 3, 27, 3), (192, 384, 768, 1536)),
    "XLarge": ((3, 3, 27, 3), (256, 512, 1024, 2048)),
}
_IMAGENET_MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
_IMAGENET_VARIANCE = tuple((s * 255) ** 2 for s in (0.229, 0.224, 0.225))


class StochasticDepth(Layer):
    """Drops the whole residual branch per batch with `drop_path_rate` in
    training (scaling the kept ones by `1 / keep`); the identity otherwise."""

    def __init__(self, drop_path_rate, **kwargs):
        super().__init__(**kwargs)
        self.drop_path_rate = drop_path_rate
        self.seed_generator = random.SeedGenerator()

    def call(self, x, training=None):
        if not training:
            return x
        keep = 1.0 - self.drop_path_rate
        shape = (x.shape[0],) + (1,) * (len(x.shape) - 1)
        mask = jnp.floor(keep + random.uniform(shape, 0, 1, seed=self.seed_generator))
        return x / keep * mask

    def get_config(self):
        return {**super().get_config(), "drop_path_rate": self.drop_path_rate}


class LayerScale(Layer):
    """`x * gamma`, a learned per-channel scale `(projection_dim,)` starting at
    `init_values`."""

    def __init__(self, init_values, projection_dim, **kwargs):
        super().__init__(**kwargs)
        self.init_values = init_values
        self.projection_dim = projection_dim

    def build(self, input_shape):
        self.gamma = self.add_weight(shape=(self.projection_dim,),
                                     initializer=lambda shape, dtype=None: np.full(
                                         shape, self.init_values, dtype or "float32"),
                                     name="gamma")

    def call(self, x):
        return x * self.gamma

    def get_config(self):
        return {**super().get_config(), "init_values": self.init_values,
                "projection_dim": self.projection_dim}


def convnext_block(x, dim, drop_path_rate, layer_scale_init_value, name):
    """x + LayerScale(MLP(LayerNorm(depthwise 7x7 (x))))."""
    y = Conv2D(dim, 7, padding="same", groups=dim, name=f"{name}_depthwise_conv")(x)
    y = LayerNormalization(epsilon=1e-6, name=f"{name}_layernorm")(y)
    y = Dense(4 * dim, name=f"{name}_pointwise_conv_1")(y)
    y = Activation("gelu", name=f"{name}_gelu")(y)
    y = Dense(dim, name=f"{name}_pointwise_conv_2")(y)
    if layer_scale_init_value is not None:
        y = LayerScale(layer_scale_init_value, dim, name=f"{name}_layer_scale")(y)
    if drop_path_rate:
        y = StochasticDepth(drop_path_rate, name=f"{name}_stochastic_depth")(y)
    else:
        y = Activation("linear", name=f"{name}_identity")(y)
    return x + y


def _downsampling(dims, index, name):
    """The stem (4x4 patches) or a stage's LayerNorm + 2x2 strided convolution."""
    if index == 0:
        return Sequential([
            Conv2D(dims[0], 4, strides=4, name=f"{name}_stem_conv"),
            LayerNormalization(epsilon=1e-6, name=f"{name}_stem_layernorm")],
            name=f"{name}_stem")
    i = index - 1
    return Sequential([
        LayerNormalization(epsilon=1e-6, name=f"{name}_downsampling_layernorm_{i}"),
        Conv2D(dims[index], 2, strides=2, name=f"{name}_downsampling_conv_{i}")],
        name=f"{name}_downsampling_block_{i}")


def build_convnext(depths, projection_dims, include_top, weights, input_tensor, input_shape,
                   pooling, classes, classifier_activation, name, owner,
                   include_preprocessing=True, drop_path_rate=0.0,
                   layer_scale_init_value=1e-6):
    """A ConvNeXt of `depths[i]` blocks of `projection_dims[i]` channels per stage
    (Keras's `convnext.ConvNeXt`)."""
    inputs, input_shape, weights = building.prepare(owner, weights, include_top, classes,
                                                    pooling, input_tensor, input_shape)
    x = inputs
    if include_preprocessing and input_shape[-1] == 3:
        x = Normalization(mean=list(_IMAGENET_MEAN), variance=list(_IMAGENET_VARIANCE),
                          name=f"{name}_prestem_normalization")(x)
    rates = [float(r) for r in np.linspace(0.0, drop_path_rate, sum(depths))]
    done = 0
    for stage, depth in enumerate(depths):
        x = _downsampling(projection_dims, stage, name)(x)
        for j in range(depth):
            x = convnext_block(x, projection_dims[stage], rates[done + j],
                               layer_scale_init_value, f"{name}_stage_{stage}_block_{j}")
        done += depth
    if include_top:
        x = GlobalAveragePooling2D(name=f"{name}_head_gap")(x)
        x = LayerNormalization(epsilon=1e-6, name=f"{name}_head_layernorm")(x)
        x = Dense(classes, activation=classifier_activation, name=f"{name}_head_dense")(x)
    else:
        if pooling == "avg":
            x = GlobalAveragePooling2D()(x)
        elif pooling == "max":
            x = GlobalMaxPooling2D()(x)
        x = LayerNormalization(epsilon=1e-6)(x)
    return building.finish(inputs, x, name, weights)


def _variant(size):
    depths, dims = CONFIGS[size]
    owner = f"ConvNeXt{size}"

    def constructor(include_top=True, include_preprocessing=True, weights="imagenet",
                    input_tensor=None, input_shape=None, pooling=None, classes=1000,
                    classifier_activation="softmax", name=f"convnext_{size.lower()}"):
        return build_convnext(depths, dims, include_top, weights, input_tensor, input_shape,
                              pooling, classes, classifier_activation, name, owner,
                              include_preprocessing=include_preprocessing)

    constructor.__name__ = constructor.__qualname__ = owner
    constructor.__doc__ = (
        f"{owner} on raw `[0, 255]` RGB images (with `include_preprocessing`, the "
        "default, the model normalizes them itself; `preprocess_input` is the "
        "identity); default size 224." + building.ARGS_DOC)
    return constructor


ConvNeXtTiny = export("loopax.applications.ConvNeXtTiny")(_variant("Tiny"))
ConvNeXtSmall = export("loopax.applications.ConvNeXtSmall")(_variant("Small"))
ConvNeXtBase = export("loopax.applications.ConvNeXtBase")(_variant("Base"))
ConvNeXtLarge = export("loopax.applications.ConvNeXtLarge")(_variant("Large"))
ConvNeXtXLarge = export("loopax.applications.ConvNeXtXLarge")(_variant("XLarge"))
