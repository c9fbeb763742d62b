"""LayoutMap keys for layer outputs ("d2/output"): Keras's ModelParallel asks its
layout map for `<layer path>/output` after every layer call and lays the output
out with it (a sharding constraint under jit). loopax asks for the same paths
(checked against Keras 3.15.1 by recording what each library asks) and applies
what it gets. On this machine's one device the layout is a one-device mesh; the
constraint is still in the traced program."""

import warnings

import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

X = np.ones((4, 4), "float32")


def _models(lib):
    """A functional model, a Sequential and a subclassed model, built and called."""
    inp = lib.Input((4,))
    functional = lib.Model(inp, lib.layers.Dense(2, name="d2")(
        lib.layers.Dense(4, name="d1")(inp)), name="functional")
    sequential = lib.Sequential([lib.Input((4,)), lib.layers.Dense(2, name="d3")],
                                name="sequential")

    class Sub(lib.Model):
        def __init__(self):
            super().__init__(name="sub")
            self.inner = lib.layers.Dense(2, name="d4")

        def call(self, x):
            return self.inner(x)

    return {"functional": functional, "sequential": sequential, "subclassed": Sub()}


def _asked_paths(lib, monkeypatch, run):
    mesh = lib.distribution.DeviceMesh((1,), ["model"], jax.devices()[:1])
    layout_map = lib.distribution.LayoutMap(mesh)
    layout_map["d1/kernel"] = (None, "model")
    distribution = lib.distribution.ModelParallel(layout_map=layout_map)
    asked = []
    cls = type(distribution)
    original = cls.get_tensor_layout
    monkeypatch.setattr(cls, "get_tensor_layout",
                        lambda self, path: (asked.append(path), original(self, path))[1])
    with distribution.scope():
        run(_models(lib))
    return sorted(set(asked))


def _call_each(models):
    for model in models.values():
        model(X)


def _fit_functional(models):
    model = models["functional"]
    model.compile("sgd", "mse")
    model.fit(X, np.ones((4, 2), "float32"), batch_size=4, epochs=1, verbose=0)


@pytest.mark.parametrize("run", [pytest.param(_call_each, id="calls"),
                                 pytest.param(_fit_functional, id="fit")])
def test_the_output_paths_asked_for_are_keras_s(run, monkeypatch):
    ours = _asked_paths(loopax, monkeypatch, run)
    assert ours == _asked_paths(keras, monkeypatch, run)
    assert "sequential/d3/output" in ours and "d1/output" in ours


def _laid_out_model(key):
    mesh = loopax.distribution.DeviceMesh((1,), ["model"], jax.devices()[:1])
    layout_map = loopax.distribution.LayoutMap(mesh)
    layout_map[key] = (None, "model")
    return loopax.distribution.ModelParallel(layout_map=layout_map), mesh


@pytest.mark.parametrize("key", ["d2/output", r"d\d/output"])
def test_an_output_key_constrains_that_layer_s_output(key):
    distribution, mesh = _laid_out_model(key)
    with distribution.scope():
        model = _models(loopax)["functional"]
        jaxpr = str(jax.make_jaxpr(lambda x: model(x))(X))
        out = model(X)
    constraints = jaxpr.count("sharding_constraint")
    assert constraints == (1 if key == "d2/output" else 2), jaxpr
    assert out.sharding.is_equivalent_to(
        jax.sharding.NamedSharding(mesh.backend_mesh, jax.sharding.PartitionSpec(None, "model")),
        2)
    k1, b1, k2, b2 = model.get_weights()
    np.testing.assert_allclose(out, (X @ k1 + b1) @ k2 + b2, rtol=1e-6)


def test_without_an_output_key_nothing_is_constrained():
    distribution, _ = _laid_out_model("d1/kernel")
    with distribution.scope():
        model = _models(loopax)["functional"]
        assert "sharding_constraint" not in str(jax.make_jaxpr(lambda x: model(x))(X))


def test_an_output_key_is_not_reported_as_matching_nothing():
    distribution, _ = _laid_out_model("d2/output")
    with distribution.scope(), pytest.warns() as caught:
        model = _models(loopax)["functional"]
        model.compile("sgd", "mse")
        model.fit(X, np.ones((4, 2), "float32"), batch_size=4, epochs=1, verbose=0)
        warnings.warn("sentinel")
    assert [str(w.message) for w in caught if "ModelParallel" in str(w.message)] == []


def test_layer_paths_are_keras_s():
    def paths(lib):
        models = _models(lib)
        fresh = lib.layers.Dense(2).path
        _call_each(models)
        return fresh, {kind: [layer.path for layer in model.layers] + [model.path]
                       for kind, model in models.items()}

    ours, theirs = paths(loopax), paths(keras)
    assert ours == theirs
    assert ours[1]["sequential"] == ["sequential/d3", "sequential"]
