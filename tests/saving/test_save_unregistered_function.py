"""A module-level function inside a layer's config (the TF basics guide's
`Dense(kernel_initializer=tf.random.normal)`) saves as Keras writes it,
`{"module", "class_name": "function", "config": name, "registered_name": "function"}`,
with a warning; loading it needs `custom_objects`, since loopax never imports a
module a file names."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

import loopax


def scaled_normal(shape, dtype=None):
    return loopax.random.normal(shape, dtype=dtype) * 0.1


def test_unregistered_module_function_saves_as_keras_and_loads_with_custom_objects(tmp_path):
    model = loopax.Sequential([loopax.Input((3,)),
                               loopax.layers.Dense(2, kernel_initializer=scaled_normal)])
    path = tmp_path / "m.keras"
    with pytest.warns(UserWarning, match="custom_objects=.*scaled_normal"):
        model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    entry = config["config"]["layers"][-1]["config"]["kernel_initializer"]
    assert entry == {"module": __name__, "class_name": "function",
                     "config": "scaled_normal", "registered_name": "function"}
    with pytest.raises(ValueError, match="scaled_normal"):
        loopax.models.load_model(path)
    loaded = loopax.models.load_model(path, custom_objects={"scaled_normal": scaled_normal})
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
