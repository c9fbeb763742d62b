"""Records Keras's outputs for lookup_cases.CASES into lookup_reference.json.

Needs keras==3.15.1 and tensorflow (not loopax); run from this folder:
    KERAS_BACKEND=tensorflow python make_lookup_reference.py
"""

import json
import pathlib

import keras
import numpy as np
from lookup_cases import CASES

HERE = pathlib.Path(__file__).parent


def plain(x):
    x = np.asarray(x)
    if x.dtype.kind in "SO":
        x = np.vectorize(lambda v: v.decode() if isinstance(v, bytes) else v)(x)
    return x.tolist()


def main():
    out = {"keras": keras.__version__, "cases": {}}
    for case_id, name, kwargs, adapt, inputs in CASES:
        layer = getattr(keras.layers, name)(**kwargs)
        if adapt is not None:
            layer.adapt(adapt)
        record = {"output": plain(layer(np.asarray(inputs)))}
        if hasattr(layer, "get_vocabulary"):
            record["vocabulary"] = plain(layer.get_vocabulary())
        out["cases"][case_id] = record
    (HERE / "lookup_reference.json").write_text(json.dumps(out, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
