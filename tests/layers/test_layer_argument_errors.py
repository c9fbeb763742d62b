"""Bad input to the convolution, shape, normalization and preprocessing layers (and
the window check of Conv/Pooling) gets a ValueError naming the layer, the argument or shape, and
the fix — not a JAX traceback or an empty output."""

import numpy as np
import pytest

from loopax import layers


def zeros(*shape):
    return np.zeros(shape, "float32")


CASES = [
    (lambda: layers.Conv2DTranspose(2, 3)(zeros(2, 4, 4)),
     r"'conv2d_transpose' \(Conv2DTranspose\) has shape \(2, 4, 4\).*rank 4"),
    (lambda: layers.Conv2DTranspose(2, 3, strides=2, output_padding=2),
     r"Conv2DTranspose: `output_padding`.*smaller than its stride"),
    (lambda: layers.Conv1DTranspose(2, 3, padding="full"), r"Conv1DTranspose: `padding`"),
    (lambda: layers.DepthwiseConv2D(5)(zeros(1, 3, 3, 2)),
     r"DepthwiseConv2D 'depthwise_conv2d': `kernel_size` \(5, 5\) is larger than the "
     r"input's spatial size \(3, 3\).*padding='same'"),
    (lambda: layers.SeparableConv1D(2, 2, dilation_rate=3)(zeros(1, 3, 2)),
     r"SeparableConv1D.*\(dilated: \(4,\)\) is larger"),
    (lambda: layers.Conv2D(2, 5)(zeros(1, 3, 3, 1)), r"Conv2D 'conv2d': `kernel_size`"),
    (lambda: layers.MaxPooling2D(4)(zeros(1, 3, 3, 1)), r"MaxPooling2D.*`pool_size` \(4, 4\)"),
    (lambda: layers.Cropping2D(((2, 2), (0, 0)))(zeros(1, 4, 4, 1)),
     r"Cropping2D 'cropping2d'.*leaves nothing of input axis 1 \(size 4\)"),
    (lambda: layers.ZeroPadding2D((1, 2, 3)), r"ZeroPadding2D: `padding` must be"),
    (lambda: layers.UpSampling2D(interpolation="area"), r"UpSampling2D: `interpolation`"),
    (lambda: layers.Permute((1, 3)), r"Permute: `dims` must be a permutation of 1..2"),
    (lambda: layers.RepeatVector(2)(zeros(1, 2, 3)), r"'repeat_vector'.*expects rank 2"),
    (lambda: layers.GroupNormalization(groups=3)(zeros(1, 4, 4)),
     r"GroupNormalization.*multiple of groups \(3\).*\(1, 4, 4\)"),
    (lambda: layers.PReLU(shared_axes=[3])(zeros(2, 3)), r"PReLU.*`shared_axes` \[3\]"),
    (lambda: layers.Softmax()(zeros(2, 3), mask=np.ones((2, 4))),
     r"Softmax.*`mask` of shape \(2, 4\)"),
    (lambda: layers.AlphaDropout(1.5), r"AlphaDropout: `rate`"),
    (lambda: layers.SpatialDropout2D(0.2)(zeros(2, 3, 4)), r"'spatial_dropout2d'.*rank 4"),
    (lambda: layers.Resizing(2, 2)(zeros(2, 3)), r"Resizing 'resizing': expects images"),
    (lambda: layers.Normalization(mean=1.0), r"Normalization: pass both `mean` and `variance`"),
]


@pytest.mark.parametrize("make, match", CASES, ids=[m.split(":")[0].split(" ")[0].strip("'\\(")
                                                    for _, m in CASES])
def test_bad_input_is_a_clear_error(make, match):
    with pytest.raises(ValueError, match=match):
        make()
