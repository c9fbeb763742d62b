"""`preprocess_input` of the Keras application families, by the input convention
each family's ImageNet weights were trained with (Keras's per-family modules
re-export one of these; loopax's `loopax.applications.<family>` modules too,
also for families whose models loopax does not build yet).
"""

from __future__ import annotations

from loopax.src.applications import imagenet_utils


def preprocess_caffe(x, data_format=None):
    """RGB -> BGR, minus the ImageNet mean per channel (ResNet V1, VGG16/19).

    Args:
        x: RGB images in [0, 255], a batch or one image (NumPy or JAX).
        data_format: `"channels_last"` or `"channels_first"`; None is
            `loopax.config.image_data_format()`.

    Returns:
        The preprocessed images, same shape, float.
    """
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="caffe")


def preprocess_tf(x, data_format=None):
    """Scaled from [0, 255] to [-1, 1] (ResNet V2, MobileNet V1/V2, Inception V3,
    InceptionResNetV2, Xception, NASNet).

    Args:
        x: Images in [0, 255], a batch or one image (NumPy or JAX).
        data_format: Ignored for this mode (Keras's signature).

    Returns:
        The preprocessed images, same shape, float.
    """
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="tf")


def preprocess_torch(x, data_format=None):
    """Scaled to [0, 1], minus the ImageNet mean, divided by its std per channel
    (DenseNet).

    Args:
        x: RGB images in [0, 255], a batch or one image (NumPy or JAX).
        data_format: `"channels_last"` or `"channels_first"`; None is
            `loopax.config.image_data_format()`.

    Returns:
        The preprocessed images, same shape, float.
    """
    return imagenet_utils.preprocess_input(x, data_format=data_format, mode="torch")


def preprocess_none(x, data_format=None):
    """The identity: the model rescales its inputs itself (EfficientNet V1/V2,
    MobileNetV3, ConvNeXt).

    Args:
        x: Images (any array).
        data_format: Ignored (Keras's signature).

    Returns:
        `x`, unchanged.
    """
    return x
