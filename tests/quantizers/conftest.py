import gc
import sys
from unittest import mock

import pytest


@pytest.fixture(scope="module", autouse=True)
def keras_deletes_variables_without_a_full_gc():
    """Keras's `Layer.__delattr__` runs a full `gc.collect()` for every variable it
    deletes (quantizing deletes each float kernel), so that device memory is freed
    sooner: about 0.4 s a time in a test process holding JAX, Keras and loopax (a third
    of test_quantize_layers' time). Skipping it changes no value; Keras is left as it is
    when a module has not imported it."""
    keras_layer = sys.modules.get("keras.src.layers.layer")
    if keras_layer is None:
        yield
        return
    deletes_with_gc = keras_layer.Layer.__delattr__

    def deletes_without_gc(layer, name):
        with mock.patch.object(gc, "collect", lambda generation=2: 0):
            deletes_with_gc(layer, name)

    with mock.patch.object(keras_layer.Layer, "__delattr__", deletes_without_gc):
        yield
