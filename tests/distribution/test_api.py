"""The distribution API's objects on this process's single device (the
8-device behaviour is in test_eight_devices.py)."""

import jax
import numpy as np
import pytest

import loopax as keras
from loopax import distribution as dist


@pytest.fixture(autouse=True)
def _no_distribution():
    yield
    dist.set_distribution(None)


def test_list_devices_names_every_device():
    assert dist.list_devices() == [f"{d.platform}:{d.id}" for d in jax.devices()]
    assert dist.get_device_count("cpu") == len(jax.devices("cpu"))


def test_device_mesh_checks_its_arguments():
    mesh = dist.DeviceMesh((1,), ("batch",), dist.list_devices())
    assert mesh.shape == (1,) and mesh.axis_names == ("batch",)
    assert mesh.backend_mesh.axis_names == ("batch",)
    with pytest.raises(ValueError, match=r"holds 2 devices but 1 were given"):
        dist.DeviceMesh((2,), ("batch",))
    with pytest.raises(ValueError, match="has 2 axes but axis_names"):
        dist.DeviceMesh((1, 1), ("batch",))
    with pytest.raises(ValueError, match="no device 'cpu:7'"):
        dist.DeviceMesh((1,), ("batch",), ["cpu:7"])


def test_layout_map_matches_whole_paths_as_regexes():
    mesh = dist.DeviceMesh((1, 1), ("batch", "model"))
    layout_map = dist.LayoutMap(mesh)
    layout_map["dense.*kernel"] = (None, "model")
    layout_map["hidden/bias"] = dist.TensorLayout(("model",))
    assert layout_map["dense_3/kernel"].axes == (None, "model")
    assert layout_map["dense_3/kernel"].device_mesh == mesh   # filled in by the map
    assert layout_map["hidden/bias"].axes == ("model",)
    assert layout_map["my_dense/kernel"] is None            # re.fullmatch, not search
    assert layout_map["dense/kernel_1"] is None
    layout_map["dense_3.*"] = (None, None)
    with pytest.raises(ValueError, match="matches several keys"):
        layout_map["dense_3/kernel"]
    with pytest.raises(ValueError, match="already mapped"):
        layout_map["hidden/bias"] = ("model",)
    assert layout_map.unmatched_keys(["hidden/bias", "dense/kernel"]) == ["dense_3.*"]
    assert sorted(layout_map) == ["dense.*kernel", "dense_3.*", "hidden/bias"]


def test_layout_naming_a_missing_axis_is_refused_where_it_is_written():
    mesh = dist.DeviceMesh((1,), ("batch",))
    with pytest.raises(ValueError, match=r"names mesh axis 'model'.*axes \('batch',\)"):
        dist.TensorLayout((None, "model"), mesh)
    with pytest.raises(ValueError, match=r"LayoutMap\['k'\]"):
        dist.LayoutMap(mesh)["k"] = ("model",)
    with pytest.raises(ValueError, match="batch_dim_name='data'"):
        dist.ModelParallel(layout_map=dist.LayoutMap(mesh), batch_dim_name="data")
    with pytest.raises(ValueError, match="needs `layout_map=`"):
        dist.ModelParallel(layout_map={"k": ("batch",)})


def test_set_distribution_and_scope():
    assert dist.distribution() is None
    data_parallel = dist.DataParallel()
    assert data_parallel.batch_dim_name == "batch"
    assert data_parallel.num_model_replicas == jax.device_count()
    with data_parallel.scope():
        assert dist.distribution() is data_parallel
    assert dist.distribution() is None
    dist.set_distribution(data_parallel)
    assert dist.distribution() is data_parallel
    with pytest.raises(TypeError, match="Distribution or None"):
        dist.set_distribution("data_parallel")


def test_data_layout_splits_the_first_dimension():
    mesh = dist.DeviceMesh((1, 1), ("data", "model"))
    layout_map = dist.LayoutMap(mesh)
    model_parallel = dist.ModelParallel(layout_map=layout_map, batch_dim_name="data")
    assert model_parallel.get_data_layout((32, 5, 3)).axes == ("data", None, None)
    assert model_parallel.get_variable_layout(keras.Variable(np.zeros((2, 3)))).axes == (
        None, None)


def test_one_process_keeps_the_whole_dataset():
    x = np.arange(10)
    assert dist.DataParallel().distribute_dataset(x) is x


def test_fit_under_a_one_device_data_parallel_matches_plain_fit():
    x = np.random.default_rng(0).normal(size=(32, 3)).astype("float32")
    y = x.sum(axis=1, keepdims=True)

    def train():
        keras.utils.set_random_seed(2)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
        return model.fit(x, y, batch_size=8, epochs=2, verbose=0).history["loss"], model

    plain, _ = train()
    with dist.DataParallel().scope():
        distributed, model = train()
    np.testing.assert_allclose(distributed, plain, rtol=1e-6)
    assert model.layers[0].kernel.value.sharding.mesh.axis_names == ("batch",)
