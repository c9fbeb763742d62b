"""The `DataAdapter` interface the runner uses: resumable iteration from any
batch, device residency and batch counts on the base class; one `executions()`
cutting an epoch for every kind of pass; one batch-size and one shape-signature
rule."""

import numpy as np
import pytest

import loopax
from loopax.src.callbacks.callback_list import BatchNeeds
from loopax.src.trainers.data_adapters import (
    ArrayDataAdapter,
    DataAdapter,
    GeneratorDataAdapter,
    PyDatasetAdapter,
    data_adapter_utils,
)
from loopax.src.trainers.epoch_runner import executions
from loopax.src.trainers.execution_planner import ExecutionPlanner, StepBounds
from loopax.src.trainers.pass_kind import PREDICT, TRAIN

X = np.arange(22 * 3, dtype=np.float32).reshape(22, 3)   # 5 batches of 4, then 2 rows
Y = np.arange(22, dtype=np.float32)


class Rows(loopax.utils.PyDataset):
    def __len__(self):
        return 6

    def __getitem__(self, i):
        return X[i * 4:(i + 1) * 4], Y[i * 4:(i + 1) * 4]


def _array_adapter():
    return ArrayDataAdapter(X, Y, batch_size=4, shuffle=True)


def _pydataset_adapter():
    return PyDatasetAdapter(Rows(), shuffle=True)


@pytest.mark.parametrize("make", [_array_adapter, _pydataset_adapter], ids=["arrays", "pydataset"])
@pytest.mark.parametrize("start", [0, 2, 5], ids=["from-0", "from-2", "from-last"])
def test_a_resumable_adapter_seeks_to_the_batches_the_whole_epoch_has_there(make, start):
    adapter = make()
    assert isinstance(adapter, DataAdapter) and adapter.resumable
    whole = list(adapter.get_numpy_iterator((7, 1)))
    tail = list(make().get_numpy_iterator((7, 1), start=start))
    assert len(whole) == 6 and len(tail) == 6 - start
    for got, expected in zip(tail, whole[start:]):
        for a, b in zip(got, expected):
            np.testing.assert_array_equal(a, b)


def test_a_generator_is_not_resumable_and_not_on_the_device():
    adapter = GeneratorDataAdapter(iter([(X[:4], Y[:4]), (X[4:8], Y[4:8])]))
    assert not adapter.resumable and not adapter.in_memory and not adapter.fits_on_device()
    with pytest.raises(NotImplementedError, match="GeneratorDataAdapter"):
        adapter.device_data()


def test_array_data_lives_on_the_device_with_its_batch_counts():
    adapter = _array_adapter()
    assert adapter.in_memory and adapter.fits_on_device()
    assert (adapter.num_batches, adapter.num_full_batches, adapter.partial_batch_size) == (6, 5, 2)
    np.testing.assert_array_equal(np.asarray(adapter.device_data()[0]), X)


def _cut(planner, bounds, **kwargs):
    out = []
    for e in executions(_array_adapter(), planner, bounds, **kwargs):
        out.append((e.how, e.first_step, e.steps, e.row0, e.batch_size))
    return out


def test_executions_cut_an_epoch_into_fused_calls_and_the_partial_batch_alone():
    bounds = StepBounds(BatchNeeds(), 4, TRAIN)
    assert _cut(ExecutionPlanner(4), bounds) == [
        ("loop", 0, 4, 0, 4), ("loop", 4, 1, 16, 4), ("single", 5, 1, 20, 2)]
    # from a resumed batch, and no further than max_steps
    assert _cut(ExecutionPlanner(4), bounds, start_step=3, max_steps=5) == [("loop", 3, 2, 12, 4)]


def test_executions_obey_every_batch_and_predict_capacity():
    every = StepBounds(BatchNeeds(every_batch=(("cb", "on_train_batch_end"),)), "auto", TRAIN)
    assert [e[:3] for e in _cut(ExecutionPlanner("auto"), every)] == [
        ("single", i, 1) for i in range(6)]
    capped = _cut(ExecutionPlanner(4), StepBounds(BatchNeeds(), 4, PREDICT), capacity=3)
    assert capped == [("loop", 0, 3, 0, 4), ("loop", 3, 2, 12, 4), ("single", 5, 1, 20, 2)]


def test_one_batch_size_rule_for_any_tree():
    scalar_first = {"a": np.float32(2.0), "b": np.zeros((5, 3))}
    assert data_adapter_utils.batch_size_of(scalar_first) == 5
    assert data_adapter_utils.batch_size_of((1.0, np.float32(3))) == 1
    assert data_adapter_utils.batch_size_of([], default=None) is None


def test_one_shape_signature_tells_batches_one_program_serves():
    signature = data_adapter_utils.shape_signature
    a = (np.zeros((4, 3), np.float32), np.zeros(4, np.int32))
    assert signature(a) == signature((np.ones((4, 3), np.float32), np.ones(4, np.int32)))
    assert signature(a) != signature((np.zeros((2, 3), np.float32), np.zeros(2, np.int32)))
    assert signature(a) != signature((np.zeros((4, 3), np.float64), np.zeros(4, np.int32)))
    assert signature(a) != signature([a[0], a[1]])
