"""NASNet Mobile and Large (Zoph et al. 2018): cells found by architecture search,
normal cells between reduction cells, each combining the previous two cells'
outputs; one builder, layers created in Keras's order and names."""

from __future__ import annotations

from loopax.src.api_export import export
from loopax.src.applications import building, imagenet_utils
from loopax.src.layers.activations.activation import Activation
from loopax.src.layers.convolutional.convolutional import Conv2D
from loopax.src.layers.convolutional.depthwise import SeparableConv2D
from loopax.src.layers.merging.merging import add, concatenate
from loopax.src.layers.normalization.normalization import BatchNormalization
from loopax.src.layers.pooling.pooling import AveragePooling2D, MaxPooling2D
from loopax.src.layers.reshaping.reshaping import Cropping2D, ZeroPadding2D


def _bn(name=None):
    return BatchNormalization(axis=-1, momentum=0.9997, epsilon=1e-3, name=name)


def _conv1x1(x, filters, name):
    return Conv2D(filters, 1, padding="same", use_bias=False, kernel_initializer="he_normal",
                  name=name)(x)


def separable_conv_block(x, filters, kernel_size=3, strides=1, block_id=None):
    """ReLU - separable conv (strided: explicit padding, 'valid') - BN - ReLU -
    separable conv - BN."""
    x = Activation("relu")(x)
    if strides == 2:
        x = ZeroPadding2D(imagenet_utils.correct_pad(tuple(x.shape[1:3]), kernel_size),
                          name=f"separable_conv_1_pad_{block_id}")(x)
    x = SeparableConv2D(filters, kernel_size, strides=strides,
                        padding="valid" if strides == 2 else "same", use_bias=False,
                        name=f"separable_conv_1_{block_id}")(x)
    x = _bn(f"separable_conv_1_bn_{block_id}")(x)
    x = Activation("relu")(x)
    x = SeparableConv2D(filters, kernel_size, padding="same", use_bias=False,
                        name=f"separable_conv_2_{block_id}")(x)
    return _bn(f"separable_conv_2_bn_{block_id}")(x)


def adjust_block(p, ip, filters, block_id):
    """The previous cell's output `p` brought to `ip`'s size (two half-filter
    strided paths, one shifted by a pixel) or to `filters` channels."""
    if p is None:
        return ip
    if p.shape[-2] != ip.shape[-2]:
        p = Activation("relu", name=f"adjust_relu_1_{block_id}")(p)
        p1 = AveragePooling2D(1, strides=2, padding="valid",
                              name=f"adjust_avg_pool_1_{block_id}")(p)
        p1 = _conv1x1(p1, filters // 2, f"adjust_conv_1_{block_id}")
        p2 = ZeroPadding2D(((0, 1), (0, 1)))(p)
        p2 = Cropping2D(((1, 0), (1, 0)))(p2)
        p2 = AveragePooling2D(1, strides=2, padding="valid",
                              name=f"adjust_avg_pool_2_{block_id}")(p2)
        p2 = _conv1x1(p2, filters // 2, f"adjust_conv_2_{block_id}")
        p = concatenate([p1, p2], axis=-1)
        return _bn(f"adjust_bn_{block_id}")(p)
    if p.shape[-1] != filters:
        p = Activation("relu")(p)
        p = _conv1x1(p, filters, f"adjust_conv_projection_{block_id}")
        return _bn(f"adjust_bn_{block_id}")(p)
    return p


def _squeeze(ip, filters, kind, block_id):
    """ReLU - 1x1 conv - BN of the cell's input."""
    h = Activation("relu")(ip)
    h = _conv1x1(h, filters, f"{kind}_conv_1_{block_id}")
    return _bn(f"{kind}_bn_1_{block_id}")(h)


def _avg_pool(x, strides, padding, name):
    return AveragePooling2D(3, strides=strides, padding=padding, name=name)(x)


def normal_cell(ip, p, filters, block_id):
    """Returns `(output, ip)`: the output and the input for the next cell's `p`."""
    p = adjust_block(p, ip, filters, block_id)
    h = _squeeze(ip, filters, "normal", block_id)
    x1 = add([separable_conv_block(h, filters, 5, block_id=f"normal_left1_{block_id}"),
              separable_conv_block(p, filters, block_id=f"normal_right1_{block_id}")],
             name=f"normal_add_1_{block_id}")
    x2 = add([separable_conv_block(p, filters, 5, block_id=f"normal_left2_{block_id}"),
              separable_conv_block(p, filters, 3, block_id=f"normal_right2_{block_id}")],
             name=f"normal_add_2_{block_id}")
    x3 = add([_avg_pool(h, 1, "same", f"normal_left3_{block_id}"), p],
             name=f"normal_add_3_{block_id}")
    x4 = add([_avg_pool(p, 1, "same", f"normal_left4_{block_id}"),
              _avg_pool(p, 1, "same", f"normal_right4_{block_id}")],
             name=f"normal_add_4_{block_id}")
    x5 = add([separable_conv_block(h, filters, block_id=f"normal_left5_{block_id}"), h],
             name=f"normal_add_5_{block_id}")
    x = concatenate([p, x1, x2, x3, x4, x5], axis=-1, name=f"normal_concat_{block_id}")
    return x, ip


def reduction_cell(ip, p, filters, block_id):
    """Halves the spatial size; returns `(output, ip)`."""
    p = adjust_block(p, ip, filters, block_id)
    h = _squeeze(ip, filters, "reduction", block_id)
    h3 = ZeroPadding2D(imagenet_utils.correct_pad(tuple(h.shape[1:3]), 3),
                       name=f"reduction_pad_1_{block_id}")(h)
    x1 = add([separable_conv_block(h, filters, 5, 2, f"reduction_left1_{block_id}"),
              separable_conv_block(p, filters, 7, 2, f"reduction_right1_{block_id}")],
             name=f"reduction_add_1_{block_id}")
    x2 = add([MaxPooling2D(3, strides=2, padding="valid",
                           name=f"reduction_left2_{block_id}")(h3),
              separable_conv_block(p, filters, 7, 2, f"reduction_right2_{block_id}")],
             name=f"reduction_add_2_{block_id}")
    x3 = add([_avg_pool(h3, 2, "valid", f"reduction_left3_{block_id}"),
              separable_conv_block(p, filters, 5, 2, f"reduction_right3_{block_id}")],
             name=f"reduction_add3_{block_id}")
    x4 = add([x2, _avg_pool(x1, 1, "same", f"reduction_left4_{block_id}")])
    x5 = add([separable_conv_block(x1, filters, 3, block_id=f"reduction_left4_{block_id}"),
              MaxPooling2D(3, strides=2, padding="valid",
                           name=f"reduction_right5_{block_id}")(h3)],
             name=f"reduction_add4_{block_id}")
    x = concatenate([x2, x3, x4, x5], axis=-1, name=f"reduction_concat_{block_id}")
    return x, ip


def build_nasnet(penultimate_filters, num_blocks, stem_block_filters, skip_reduction,
                 default_size, include_top, weights, input_tensor, input_shape, pooling,
                 classes, classifier_activation, name, owner, filter_multiplier=2):
    """A NASNet (Keras's `nasnet.NASNet`): a stem, two reduction cells, then three
    groups of `num_blocks` normal cells separated by reduction cells."""
    if penultimate_filters % (24 * filter_multiplier**2):
        raise ValueError(f"{owner}: `penultimate_filters` must be a multiple of 24 * "
                         f"filter_multiplier**2 = {24 * filter_multiplier**2}; got "
                         f"{penultimate_filters}.")
    if weights == "imagenet" and input_shape is not None and None in tuple(input_shape):
        raise ValueError(f"{owner}: ImageNet weights need a fully known input_shape; got "
                         f"{input_shape}.")
    inputs, _, weights = building.prepare(owner, weights, include_top, classes, pooling,
                                          input_tensor, input_shape, default_size)
    filters = penultimate_filters // 24
    x = Conv2D(stem_block_filters, 3, strides=2, padding="valid", use_bias=False,
               kernel_initializer="he_normal", name="stem_conv1")(inputs)
    x = _bn("stem_bn1")(x)
    x, p = reduction_cell(x, None, filters // filter_multiplier**2, "stem_1")
    x, p = reduction_cell(x, p, filters // filter_multiplier, "stem_2")
    for group in range(3):
        width = filters * filter_multiplier**group
        if group:
            x, p0 = reduction_cell(x, p, width, f"reduce_{group * num_blocks}")
            p = p if skip_reduction else p0
        for i in range(num_blocks):
            x, p = normal_cell(x, p, width, f"{group * num_blocks + i + min(group, 1)}")
    x = Activation("relu")(x)
    x = building.classifier_head(x, include_top, pooling, classes, classifier_activation,
                                 (None, None))
    return building.finish(inputs, x, name, weights)


@export("loopax.applications.NASNetMobile")
def NASNetMobile(input_shape=None, include_top=True, weights="imagenet", input_tensor=None,
                 pooling=None, classes=1000, classifier_activation="softmax",
                 name="nasnet_mobile"):
    if not include_top and input_shape is None:   # as Keras
        input_shape = (224, 224, 3)
    return build_nasnet(1056, 4, 32, False, 224, include_top, weights, input_tensor,
                        input_shape, pooling, classes, classifier_activation, name,
                        "NASNetMobile")


@export("loopax.applications.NASNetLarge")
def NASNetLarge(input_shape=None, include_top=True, weights="imagenet", input_tensor=None,
                pooling=None, classes=1000, classifier_activation="softmax",
                name="nasnet_large"):
    return build_nasnet(4032, 6, 96, True, 331, include_top, weights, input_tensor,
                        input_shape, pooling, classes, classifier_activation, name,
                        "NASNetLarge")


_DOC = ("{owner} on `(batch, height, width, 3)` images preprocessed with "
        "`loopax.applications.nasnet.preprocess_input` (scaled to [-1, 1]); default "
        "size {size}.")
NASNetMobile.__doc__ = (_DOC.format(owner="NASNetMobile", size=224) + building.ARGS_DOC
                        + "(Without the top and `input_shape`, the input is 224x224, as "
                        "in Keras.)\n")
NASNetLarge.__doc__ = _DOC.format(owner="NASNetLarge", size=331) + building.ARGS_DOC
