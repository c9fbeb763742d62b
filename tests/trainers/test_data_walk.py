"""Following `fit(x)`'s `x` through loopax (issue #20): the data goes one way, trainer →
data adapter → runner → steps. Every call in loopax/src that receives the data (the array
itself or an object holding it: the adapter, a batch tuple) is recorded with the chain of
loopax files on its call stack; no file may appear twice on a chain (A → B → A: the data
went back to a file it had left). The data adapters count as one place: an adapter class and
its base class call each other by design (`PyDatasetAdapter` is a `GeneratorDataAdapter`).

Read as a reader follows it (issue #35), the walk is a sequence of stops: each function that
receives the data, in the order first reached; a file is entered each time the next stop is in
another file than the last. `stops_and_entries` counts both."""

import collections
import os
import sys

import numpy as np
import pytest

import loopax as keras

SRC = os.path.join(os.path.dirname(keras.__file__), "src") + os.sep
ADAPTERS = "trainers/data_adapters/"
RNG = np.random.default_rng(0)
X = RNG.normal(size=(48, 3)).astype("float32")
Y = X @ np.ones((3, 1), "float32")


class _Holders:
    """Whether a value is `data` or holds it (attributes, items) within two levels."""

    def __init__(self, data):
        self.ids = {id(data)}

    def __call__(self, value, depth=0):
        if id(value) in self.ids:
            return True
        if depth >= 2:
            return False
        if isinstance(value, (tuple, list)):
            parts = value[:8]
        elif isinstance(value, dict):
            parts = list(value.values())[:8]
        else:
            attributes = getattr(value, "__dict__", None)
            parts = list(attributes.values())[:50] if isinstance(attributes, dict) else ()
        if any(self(part, depth + 1) for part in parts):
            self.ids.add(id(value))
            return True
        return False


def data_walk(action, data):
    """[(function, chain of loopax files from the outermost)] of each loopax call that
    received `data` or something holding it, while `action()` runs."""
    holds, walk = _Holders(data), []

    def profile(frame, event, arg):
        code = frame.f_code
        if event != "call" or not code.co_filename.startswith(SRC):
            return
        names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if not any(holds(frame.f_locals.get(name)) for name in names):
            return
        chain, outer = [], frame
        while outer is not None:
            path = outer.f_code.co_filename
            if path.startswith(SRC):
                path = path[len(SRC):].replace(os.sep, "/")
                if path.startswith(ADAPTERS):
                    path = ADAPTERS
                if not chain or chain[-1] != path:
                    chain.append(path)
            outer = outer.f_back
        walk.append((code.co_name, chain[::-1]))

    sys.setprofile(profile)
    try:
        action()
    finally:
        sys.setprofile(None)
    return walk


def stops_and_entries(walk):
    """(the distinct `(file, function)` stops in the order first reached, {file: how many
    times the stops enter it})."""
    stops = list(dict.fromkeys((chain[-1], name) for name, chain in walk))
    entries, last = collections.Counter(), None
    for path, _ in stops:
        if path != last:
            entries[path] += 1
        last = path
    return stops, dict(entries)


def back_and_forth(walk):
    return sorted({f"{' -> '.join(chain)} ({name})" for name, chain in walk
                   if len(chain) != len(set(chain))})


class _Batches(keras.utils.PyDataset):
    def __len__(self):
        return 3

    def __getitem__(self, i):
        return X[16 * i:16 * (i + 1)], Y[16 * i:16 * (i + 1)]


def _model():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


def test_the_walk_sees_the_data_and_a_chain_that_goes_back():
    model = _model()
    walk = data_walk(lambda: model.fit(X, Y, batch_size=16, verbose=0), X)
    files = {path for _, chain in walk for path in chain}
    assert {"trainers/trainer.py", "trainers/epoch_runner.py", ADAPTERS} <= files
    walk.append(("made_up", ["trainers/trainer.py", "trainers/epoch_runner.py",
                             "trainers/trainer.py"]))
    assert back_and_forth(walk) == [
        "trainers/trainer.py -> trainers/epoch_runner.py -> trainers/trainer.py (made_up)"]


@pytest.mark.parametrize("call", ["fit-arrays", "fit-pydataset", "evaluate", "predict"])
def test_the_data_goes_one_way(call):
    model = _model()
    data = _Batches() if call == "fit-pydataset" else X
    action = {
        "fit-arrays": lambda: model.fit(X, Y, batch_size=16, epochs=2, verbose=0,
                                        validation_split=0.25),
        "fit-pydataset": lambda: model.fit(data, epochs=2, verbose=0),
        "evaluate": lambda: model.evaluate(X, Y, batch_size=16, verbose=0),
        "predict": lambda: model.predict(X, batch_size=16, verbose=0),
    }[call]
    walk = data_walk(action, data)
    assert len(walk) > 5
    assert back_and_forth(walk) == []


def test_stops_and_entries_count_a_return_to_a_file_as_an_entry():
    walk = [("fit", ["trainers/trainer.py"]),
            ("run_pass", ["trainers/trainer.py", "trainers/epoch_runner.py"]),
            ("peek", ["trainers/trainer.py", "trainers/epoch_runner.py", ADAPTERS]),
            ("run_pass", ["trainers/trainer.py", "trainers/epoch_runner.py"]),   # seen
            ("executions", ["trainers/trainer.py", "trainers/epoch_runner.py"]),
            ("fit", ["trainers/trainer.py"])]
    stops, entries = stops_and_entries(walk)
    assert stops == [("trainers/trainer.py", "fit"), ("trainers/epoch_runner.py", "run_pass"),
                     (ADAPTERS, "peek"), ("trainers/epoch_runner.py", "executions")]
    assert entries == {"trainers/trainer.py": 1, "trainers/epoch_runner.py": 2, ADAPTERS: 1}


# fit(x)'s walk, issue #35's target (main before it: 38 stops, the runner entered 5 times, the
# adapters 7): the adapter resolves the data's kind from its type once, and the trainer hands
# the adapter to the runner once, which asks it for the epoch's order and data together.
MAX_STOPS, MAX_ENTRIES, MAX_ADAPTER_ENTRIES = 25, 3, 3


def test_following_fits_x_through_the_engine():
    model = _model()
    walk = data_walk(lambda: model.fit(X, Y, batch_size=16, verbose=0), X)
    stops, entries = stops_and_entries(walk)
    assert len(stops) <= MAX_STOPS, stops
    assert entries.pop(ADAPTERS) <= MAX_ADAPTER_ENTRIES, stops
    assert max(entries.values()) <= MAX_ENTRIES, (entries, stops)
