"""tf.distribute's API on one device: strategies, scope, run/reduce, datasets."""

import json

import numpy as np
import pytest

import loopax.tf as tf
from loopax import distribution


def test_scope_sets_the_strategy_and_the_distribution():
    strategy = tf.distribute.MirroredStrategy()
    assert strategy.num_replicas_in_sync == 1
    assert not tf.distribute.has_strategy()
    default = tf.distribute.get_strategy()
    assert default.num_replicas_in_sync == 1
    with strategy.scope():
        assert tf.distribute.has_strategy() and tf.distribute.get_strategy() is strategy
        assert tf.distribute.in_cross_replica_context()
        assert tf.distribute.get_replica_context() is None
        assert isinstance(distribution.distribution(), distribution.DataParallel)
        v = tf.Variable(np.ones((2, 3), "float32"))
    assert distribution.distribution() is None and not tf.distribute.has_strategy()
    assert v.value.sharding.is_fully_replicated

    def in_replica():
        context = tf.distribute.get_replica_context()
        return context.num_replicas_in_sync, tf.distribute.in_cross_replica_context()

    assert strategy.run(in_replica) == (1, False)


def test_run_and_reduce():
    strategy = tf.distribute.MirroredStrategy()
    x = np.arange(12, dtype="float32").reshape(4, 3)
    out = strategy.run(lambda a, b=1.0: a * b, args=(x,), kwargs={"b": 2.0})
    assert isinstance(out, tf.Tensor)
    np.testing.assert_array_equal(strategy.reduce(tf.distribute.ReduceOp.SUM, out, axis=None),
                                  2 * x)
    np.testing.assert_allclose(strategy.reduce("sum", out, axis=0).numpy(), 2 * x.sum(0))
    np.testing.assert_allclose(strategy.reduce(tf.distribute.ReduceOp.MEAN, out, axis=0),
                               2 * x.mean(0))
    both = strategy.reduce("MEAN", {"a": out, "b": (out, out)}, axis=1)
    np.testing.assert_allclose(both["b"][1], 2 * x.mean(1))
    with pytest.raises(ValueError, match="ReduceOp.SUM or MEAN"):
        strategy.reduce("max", out)
    assert len(strategy.experimental_local_results(out)) == 1


def test_input_context_and_distribute_datasets_from_function():
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1,
                                         num_replicas_in_sync=4)
    assert context.get_per_replica_batch_size(64) == 16
    with pytest.raises(ValueError, match="not divisible"):
        context.get_per_replica_batch_size(10)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    seen = []

    def dataset_fn(input_context):
        seen.append(input_context)
        batch = input_context.get_per_replica_batch_size(4)
        return tf.data.Dataset.range(10).batch(batch)

    batches = [b.numpy().tolist() for b in strategy.distribute_datasets_from_function(dataset_fn)]
    assert batches == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert seen[0].num_replicas_in_sync == 1 and seen[0].num_input_pipelines == 1


def test_distributed_dataset_elements_are_tensors_and_tf_function_reiterates():
    strategy = tf.distribute.MirroredStrategy()
    data = tf.data.Dataset.from_tensor_slices(np.arange(8, dtype="float32")).batch(4)
    dist = strategy.experimental_distribute_dataset(data)
    first = next(iter(dist))
    assert isinstance(first, tf.Tensor) and first.numpy().tolist() == [0, 1, 2, 3]
    calls = []

    @tf.function
    def total(dataset):
        calls.append(1)
        s = 0.0
        for x in dataset:
            s += tf.reduce_sum(x)
        return s

    assert float(total(dist)) == 28.0
    assert float(total(dist)) == 28.0 and len(calls) == 1   # one trace, batches as inputs
    endless = strategy.experimental_distribute_dataset(data.repeat())
    with pytest.raises(ValueError, match="infinite or unknown length.*take"):
        total(endless)


def test_dataset_shard():
    d = tf.data.Dataset.range(10)
    assert [int(x) for x in d.shard(3, 1)] == [1, 4, 7]
    assert d.shard(3, 1).cardinality() == 3 and d.shard(3, 0).cardinality() == 4
    with pytest.raises(ValueError, match=r"index must be in \[0, 3\), got 3"):
        d.shard(3, 3)


def test_devices_and_multi_worker(monkeypatch):
    with pytest.raises(ValueError, match="no device '/gpu:7'"):
        tf.distribute.MirroredStrategy(["/gpu:7"])
    strategy = tf.distribute.MirroredStrategy(["/cpu:0"],
                                              cross_device_ops=tf.distribute.NcclAllReduce())
    assert strategy.num_replicas_in_sync == 1
    monkeypatch.delenv("TF_CONFIG", raising=False)
    worker = tf.distribute.MultiWorkerMirroredStrategy()   # one process: the local devices
    assert worker.num_replicas_in_sync == 1
    assert tf.distribute.experimental.MultiWorkerMirroredStrategy is \
        tf.distribute.MultiWorkerMirroredStrategy
    from loopax.src.tf_compat import distribute
    monkeypatch.setenv("TF_CONFIG", json.dumps({
        "cluster": {"worker": ["10.0.0.1:2222", "10.0.0.2:2222"]},
        "task": {"type": "worker", "index": 1}}))
    assert distribute._tf_config_job() == ("10.0.0.1:2222", 2, 1)
    with pytest.raises(RuntimeError, match="Create the strategy first"):
        tf.distribute.MultiWorkerMirroredStrategy()   # JAX already runs in this process
    monkeypatch.setenv("TF_CONFIG", "{not json")
    with pytest.raises(ValueError, match="TF_CONFIG"):
        distribute._tf_config_job()


def test_fit_under_scope_matches_fit_without_it():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = x @ rng.normal(size=(4, 1)).astype("float32")

    def train():
        model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
        model.set_weights([np.full((4, 1), 0.1, "float32"), np.zeros(1, "float32")])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.1), loss="mse")
        return model.fit(x, y, batch_size=8, epochs=2, verbose=0, shuffle=False).history["loss"]

    with tf.distribute.MirroredStrategy().scope():
        distributed = train()
    np.testing.assert_allclose(distributed, train(), rtol=1e-6)
    assert tf.keras.losses.Reduction.NONE == "none"


def test_missing_names_say_what_there_is():
    with pytest.raises(AttributeError, match="TPUStrategy.*DataParallel or ModelParallel"):
        tf.distribute.TPUStrategy
    with pytest.raises(AttributeError, match="loopax.ops.image"):
        tf.image.draw_bounding_boxes
