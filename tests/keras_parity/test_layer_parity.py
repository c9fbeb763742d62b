"""Every deterministic loopax layer against the Keras layer of the same name.

For each case: both layers are built from the same arguments, loopax gets
Keras's weights, and on the same random float32 input

- the outputs agree in inference (`training=False`) and, for layers that
  behave differently in training but deterministically (BatchNormalization,
  attention without dropout), in training too, with the updated
  non-trainable values (moving statistics);
- the gradients of `sum(output · c)` w.r.t. the trainable weights and the
  float inputs agree (`jax.grad` through both layers' `stateless_call`).

Tolerance: rtol 1e-5, atol 1e-5 (both run XLA on the same inputs; only
summation order differs), unless a case states a looser one. The random
layers (dropout, noise) are compared by statistics in test_noise_parity.py.
"""

import keras_reference
import numpy as np
import pytest
from keras_reference import assert_close, build_pair, evaluate_pair

rng = np.random.default_rng(9)


def normal(*shape):
    return rng.standard_normal(shape).astype("float32")


x2 = normal(3, 5)
x3 = normal(2, 7, 3)
x4 = normal(2, 6, 5, 3)
x5 = normal(2, 4, 5, 4, 2)
ids = np.array([[1, 0, 3, 4], [2, 2, 0, 1]], dtype="int32")


def case(name, kwargs, *args, call=None, training=False, rtol=1e-5, atol=1e-5, id=None):
    """One parity case: layer class `name`(**kwargs) called on `args`."""
    label = id or name
    return pytest.param(name, kwargs, args, call or {}, training, rtol, atol, id=label)


CASES = [
    # core
    case("Dense", {"units": 4, "activation": "tanh"}, x3),
    case("Activation", {"activation": "gelu"}, x2),
    case("Dropout", {"rate": 0.5}, x2),  # identity at inference
    case("Flatten", {}, x4),
    case("Reshape", {"target_shape": (3, -1)}, x3),
    case("Embedding", {"input_dim": 5, "output_dim": 3}, ids),
    case("ActivityRegularization", {"l1": 0.1}, x2),
    case("Identity", {}, x2),
    case("EinsumDense", {"equation": "abc,cde->abde", "output_shape": (None, 2, 2),
                         "bias_axes": "de"}, x3),   # more equations: tests/layers/
    # convolutions
    case("Conv1D", {"filters": 4, "kernel_size": 3, "padding": "causal", "dilation_rate": 2},
         x3, id="Conv1D-causal-dilated"),
    case("Conv2D", {"filters": 4, "kernel_size": (3, 2), "strides": 2, "padding": "same"},
         x4, id="Conv2D-same-strided"),
    case("Conv2D", {"filters": 4, "kernel_size": 2, "groups": 2}, normal(2, 5, 5, 4),
         id="Conv2D-groups"),
    case("Conv3D", {"filters": 3, "kernel_size": 2, "activation": "relu"}, x5),
    case("Conv1DTranspose", {"filters": 4, "kernel_size": 3, "strides": 2}, x3,
         id="Conv1DTranspose-valid"),
    case("Conv1DTranspose", {"filters": 2, "kernel_size": 4, "strides": 3, "padding": "same"},
         x3, id="Conv1DTranspose-same"),
    case("Conv2DTranspose", {"filters": 3, "kernel_size": 3, "strides": 2, "padding": "same"},
         x4, id="Conv2DTranspose-same"),
    case("Conv2DTranspose", {"filters": 2, "kernel_size": (3, 2), "strides": (2, 3),
                             "output_padding": (1, 2)}, x4,
         id="Conv2DTranspose-output_padding"),
    case("Conv2DTranspose", {"filters": 2, "kernel_size": 3, "dilation_rate": 2,
                             "padding": "same"}, x4, id="Conv2DTranspose-dilated"),
    case("Conv2DTranspose", {"filters": 2, "kernel_size": 3, "strides": 2, "padding": "same",
                             "output_padding": 1}, x4, id="Conv2DTranspose-same-output_padding"),
    case("Conv3DTranspose", {"filters": 2, "kernel_size": 2, "strides": 2}, x5),
    case("DepthwiseConv1D", {"kernel_size": 3, "depth_multiplier": 2, "padding": "same"}, x3),
    case("DepthwiseConv2D", {"kernel_size": (3, 2), "depth_multiplier": 2, "strides": 2},
         x4),
    case("DepthwiseConv2D", {"kernel_size": 2, "dilation_rate": 2, "use_bias": False}, x4,
         id="DepthwiseConv2D-dilated"),
    case("SeparableConv1D", {"filters": 4, "kernel_size": 3, "depth_multiplier": 2}, x3),
    case("SeparableConv2D", {"filters": 4, "kernel_size": 3, "padding": "same",
                             "strides": 2, "activation": "relu"}, x4),
    # pooling
    case("MaxPooling1D", {"pool_size": 3, "strides": 2, "padding": "same"}, x3),
    case("AveragePooling1D", {"pool_size": 2, "padding": "same"}, x3),
    case("MaxPooling2D", {"pool_size": (2, 3)}, x4),
    case("AveragePooling2D", {"pool_size": 3, "strides": 2, "padding": "same"}, x4),
    case("MaxPooling3D", {"pool_size": 2, "padding": "same"}, x5),
    case("AveragePooling3D", {"pool_size": 2, "strides": 1}, x5),
    case("GlobalAveragePooling1D", {}, x3),
    case("GlobalMaxPooling1D", {"keepdims": True}, x3),
    case("GlobalAveragePooling2D", {}, x4),
    case("GlobalMaxPooling2D", {}, x4),
    case("GlobalAveragePooling3D", {}, x5),
    case("GlobalMaxPooling3D", {"keepdims": True}, x5),
    # normalization
    case("BatchNormalization", {"momentum": 0.8, "epsilon": 0.01}, x4, training=True),
    case("BatchNormalization", {"axis": 1, "center": False}, x3, training=True,
         id="BatchNormalization-axis1"),
    case("LayerNormalization", {"axis": [1, 2]}, x3),
    case("LayerNormalization", {"rms_scaling": True}, x3, id="LayerNormalization-rms"),
    case("GroupNormalization", {"groups": 2}, normal(2, 5, 3, 4)),
    case("GroupNormalization", {"groups": -1, "axis": 1, "scale": False}, normal(2, 3, 6),
         id="GroupNormalization-instance"),
    case("UnitNormalization", {}, x3),
    case("UnitNormalization", {"axis": [1, 2]}, x3, id="UnitNormalization-axes"),
    case("RMSNormalization", {}, x3),
    case("RMSNormalization", {"axis": [1, 2], "epsilon": 0.1}, x3, id="RMSNormalization-axes"),
    # preprocessing
    case("Rescaling", {"scale": 1 / 255, "offset": -1.0}, x4),
    case("Normalization", {"mean": [0.5, -1.0, 2.0], "variance": [4.0, 0.25, 1.0]}, x4),
    case("Normalization", {"axis": (1, 2), "mean": 0.5, "variance": 2.0, "invert": True}, x3,
         id="Normalization-invert"),
    case("Resizing", {"height": 3, "width": 8}, x4),
    case("Resizing", {"height": 4, "width": 4, "interpolation": "bicubic",
                      "crop_to_aspect_ratio": True}, x4, id="Resizing-bicubic-crop"),
    case("Resizing", {"height": 4, "width": 4, "interpolation": "nearest",
                      "pad_to_aspect_ratio": True}, x4, id="Resizing-nearest-pad"),
    case("CenterCrop", {"height": 3, "width": 4}, x4),
    case("CenterCrop", {"height": 9, "width": 7}, x4, id="CenterCrop-upsize"),
    case("RandomFlip", {}, x4),  # identity at inference
    case("RandomCrop", {"height": 4, "width": 4}, x4),  # identity at inference
    case("RandomCrop", {"height": 7, "width": 4}, x4, training=True,
         id="RandomCrop-not-larger"),  # deterministic: the box is resized
    # augmentation: identity at inference here; transforms in test_augmentation_parity
    case("RandomRotation", {"factor": 0.2}, x4),
    case("RandomZoom", {"height_factor": 0.2}, x4),
    case("RandomTranslation", {"height_factor": 0.2, "width_factor": 0.1}, x4),
    case("RandomContrast", {"factor": 0.2}, x4),
    case("RandomBrightness", {"factor": 0.2}, x4),
    # attention
    case("MultiHeadAttention", {"num_heads": 2, "key_dim": 3}, x3, normal(2, 4, 3),
         training=True),
    # (value_dim != key_dim fails inside Keras 3.15's JAX attention: not compared.)
    case("MultiHeadAttention", {"num_heads": 2, "key_dim": 2, "output_shape": 4},
         x3, x3, call={"use_causal_mask": True}, id="MultiHeadAttention-causal"),
    case("MultiHeadAttention", {"num_heads": 1, "key_dim": 2}, x3, x3,
         call={"attention_mask": np.tril(np.ones((2, 7, 7), bool))[:, ::-1]},
         id="MultiHeadAttention-mask"),
    case("GroupQueryAttention", {"head_dim": 2, "num_query_heads": 4,
                                 "num_key_value_heads": 2}, x3, normal(2, 4, 3),
         call={"use_causal_mask": True}, training=True),   # more: tests/layers/
    case("Attention", {"use_scale": True}, [x3, normal(2, 4, 3)]),
    case("Attention", {"score_mode": "concat"}, [x3, normal(2, 4, 3), normal(2, 4, 3)],
         call={"use_causal_mask": True}, id="Attention-concat-causal"),
    case("AdditiveAttention", {}, [x3, normal(2, 4, 3)],
         call={"mask": [np.arange(7) < np.array([[5], [7]]), np.arange(4) < np.array([[2], [4]])]},
         id="AdditiveAttention-masks"),
    # merging
    case("Add", {}, [x3, x3[:, :1]]),
    case("Subtract", {}, [x3, 2 * x3]),
    case("Multiply", {}, [x3, x3, x3]),
    case("Average", {}, [x3, -x3 + 1]),
    case("Maximum", {}, [x3, normal(2, 7, 3)]),
    case("Minimum", {}, [x3, normal(2, 7, 3)]),
    case("Concatenate", {"axis": 1}, [x3, normal(2, 2, 3)]),
    case("Dot", {"axes": 2}, [x3, normal(2, 4, 3)]),
    case("Dot", {"axes": (2, 1), "normalize": True}, [x3, normal(2, 3, 5)],
         id="Dot-normalize"),
    case("Dot", {"axes": -1}, [x2, normal(3, 5)], id="Dot-vectors"),
    # reshaping
    case("UpSampling1D", {"size": 3}, x3),
    case("UpSampling2D", {"size": (2, 3)}, x4),
    case("UpSampling2D", {"size": 2, "interpolation": "bilinear"}, x4,
         id="UpSampling2D-bilinear"),
    case("UpSampling3D", {"size": (1, 2, 2)}, x5),
    case("ZeroPadding1D", {"padding": (1, 2)}, x3),
    case("ZeroPadding2D", {"padding": ((1, 0), (2, 3))}, x4),
    case("ZeroPadding3D", {"padding": 1, "data_format": "channels_first"}, x5),
    case("Cropping1D", {"cropping": (2, 1)}, x3),
    case("Cropping2D", {"cropping": ((1, 2), (0, 1))}, x4),
    case("Cropping3D", {"cropping": ((1, 1), (1, 2), (0, 0))}, x5),
    case("RepeatVector", {"n": 3}, x2),
    case("Permute", {"dims": (3, 1, 2)}, x4),
    # activation layers
    case("ReLU", {"max_value": 1.0, "negative_slope": 0.1, "threshold": 0.2}, x3),
    case("ReLU", {"max_value": 6.0}, 4 * x3, id="ReLU-6"),
    case("LeakyReLU", {"negative_slope": 0.2}, x3),
    case("PReLU", {"alpha_initializer": "random_uniform", "shared_axes": [1]}, x3),
    case("ELU", {"alpha": 0.7}, x3),
    case("Softmax", {"axis": 1}, x3),
    case("Softmax", {}, x3, call={"mask": np.arange(3) < 2}, id="Softmax-mask"),
    case("Softmax", {"axis": (1, 2)}, x3, id="Softmax-axes"),
]


@pytest.mark.parametrize("name, kwargs, args, call, training, rtol, atol", CASES)
def test_outputs_and_gradients_match_keras(name, kwargs, args, call, training, rtol, atol):
    pair = build_pair(name, kwargs, args, call)
    for mode in (False, True) if training else (False,):
        call_kwargs = {**call, "training": mode}
        (k_out, k_state, k_grads), (l_out, l_state, l_grads) = evaluate_pair(
            pair, args, call_kwargs)
        assert_close(l_out, k_out, rtol, atol, f"{name} output, training={mode}")
        assert_close(l_state, k_state, rtol, atol,
                     f"{name} non-trainable values after a call with training={mode}")
        assert_close(l_grads, k_grads, rtol, atol,
                     f"{name} gradients (weights, inputs), training={mode}")


def test_normalization_adapt_matches_keras():
    data = normal(20, 4, 3) * 3 + 1
    outputs = []
    for module in (keras_reference.keras, keras_reference.loopax):
        layer = module.layers.Normalization(axis=-1)
        layer.adapt(data)
        outputs.append((np.asarray(layer(x3)), [np.asarray(w) for w in layer.get_weights()]))
    assert_close(outputs[1], outputs[0], 1e-5, 1e-5, "Normalization.adapt")
