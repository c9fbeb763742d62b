"""Records Keras's HashedCrossing outputs for hashed_crossing_cases.CASES
into hashed_crossing_reference.json.

Needs keras==3.15.1 and tensorflow (not loopax); run from this folder:
    KERAS_BACKEND=tensorflow python make_hashed_crossing_reference.py
"""

import json
import pathlib

import keras
import numpy as np
from hashed_crossing_cases import CASES

HERE = pathlib.Path(__file__).parent


def feature(values, dtype):
    return np.asarray(values, dtype={"str": np.str_, "bytes": np.bytes_}.get(dtype, dtype))


def main():
    out = {"keras": keras.__version__, "cases": {}}
    for case_id, kwargs, features in CASES:
        result = np.asarray(keras.layers.HashedCrossing(**kwargs)(
            tuple(feature(*f) for f in features)))
        out["cases"][case_id] = {"output": result.tolist(), "dtype": str(result.dtype)}
    (HERE / "hashed_crossing_reference.json").write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
