"""get_config round trips between loopax and Keras, for every layer of the
parity suite: Keras's `from_config` reads loopax's config, loopax's reads
Keras's (restricted to the keys loopax's config has: Keras adds a few of
its own, e.g. `quantization_config`), and the re-created layers agree on
every key both configs hold.
"""

import numpy as np
import pytest
from keras_reference import keras
from test_layer_parity import CASES

import loopax

NOISE = [("Dropout", {"rate": 0.3, "noise_shape": (None, 1), "seed": 2}),
         ("SpatialDropout1D", {"rate": 0.2}),
         ("SpatialDropout2D", {"rate": 0.2, "data_format": "channels_first"}),
         ("SpatialDropout3D", {"rate": 0.2}),
         ("GaussianNoise", {"stddev": 0.4, "seed": 1}),
         ("GaussianDropout", {"rate": 0.1}),
         ("AlphaDropout", {"rate": 0.1, "noise_shape": (None, 1)}),
         ("Dense", {"units": 3, "kernel_initializer": {"class_name": "HeNormal",
                                                      "config": {"seed": 3}},
                    "kernel_regularizer": "l2", "bias_constraint": "non_neg"})]
CONFIG_CASES = [pytest.param(c.values[0], c.values[1], id=c.id) for c in CASES] + [
    pytest.param(name, kwargs, id=f"{name}-config") for name, kwargs in NOISE]


def agree(a, b, where="config"):
    """Asserts `a` and `b` agree: dicts on their common keys, sequences
    element-wise (tuple == list), numbers approximately; a Keras dtype
    policy as its dtype name."""
    a, b = (x["config"]["name"] if isinstance(x, dict) and x.get("class_name") == "DTypePolicy"
            else x for x in (a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        if "class_name" in a and "class_name" in b:  # serialized objects
            assert a["class_name"] == b["class_name"], (where, a, b)
        for key in a.keys() & b.keys() - {"module", "registered_name", "name"}:
            agree(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        assert len(a) == len(b), (where, a, b)
        for i, (x, y) in enumerate(zip(a, b)):
            agree(x, y, f"{where}[{i}]")
    elif isinstance(a, float) or isinstance(b, float):
        assert np.isclose(a, b), (where, a, b)
    else:
        assert a == b, (where, a, b)


@pytest.mark.parametrize("name, kwargs", CONFIG_CASES)
def test_config_round_trips_with_keras(name, kwargs):
    keras_class, loopax_class = getattr(keras.layers, name), getattr(loopax.layers, name)
    loopax_config = loopax_class(**kwargs).get_config()
    keras_config = keras_class(**kwargs).get_config()
    # loopax -> Keras
    from_loopax = keras_class.from_config(loopax_config).get_config()
    agree(loopax_config, from_loopax)
    # Keras -> loopax (Keras's dtype policy dict included)
    readable = {key: value for key, value in keras_config.items() if key in loopax_config}
    from_keras = loopax_class.from_config(readable).get_config()
    agree(keras_config, from_keras)
    assert from_keras.keys() == loopax_config.keys()
