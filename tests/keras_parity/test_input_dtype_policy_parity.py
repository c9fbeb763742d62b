"""`Input(dtype=...)`'s layer keeps the global dtype policy, as Keras 3.15.1's InputLayer:
its `dtype` is the tensor's (int32 token ids) while `dtype_policy` and `compute_dtype`
are the global policy's."""

import pytest
from keras_reference import keras as real_keras

import loopax


def input_layer_dtypes(library, policy, dtype):
    library.mixed_precision.set_global_policy(policy)
    try:
        layer = library.layers.InputLayer(shape=(3,), dtype=dtype)
        return (layer.dtype_policy.name, layer.dtype, layer.compute_dtype,
                layer.output.dtype, layer.get_config()["dtype"])
    finally:
        library.mixed_precision.set_global_policy("float32")


@pytest.mark.parametrize("policy", ["float32", "mixed_float16"])
@pytest.mark.parametrize("dtype", ["int32", None, "float16"])
def test_input_layer_dtype_policy_is_keras(policy, dtype):
    ours = input_layer_dtypes(loopax, policy, dtype)
    assert ours == input_layer_dtypes(real_keras, policy, dtype)
