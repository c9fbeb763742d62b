"""Every one-step program donates the state it is given. Evaluation and prediction
return the weights unchanged; undonated, XLA would copy every weight on every step
(an argument returned as it came in is copied: 43% of an evaluation step of a
784-256-256-10 MLP on CPU, and twice the weights' memory on an accelerator)."""

import jax
import numpy as np
import pytest
from trainer_testlib import mlp, regression_data

import loopax
from loopax.src.trainers.pass_kind import PREDICT, TEST, TRAIN


@pytest.mark.parametrize("kind", [TRAIN, TEST, PREDICT], ids=lambda kind: kind.name)
def test_a_step_hands_back_the_state_in_the_buffers_it_was_given(kind):
    x, y = regression_data(n=16)
    model = mlp(units=64)
    model.compile(optimizer="adam", loss="mse", steps_per_execution=1)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0)
    engine = model._compiled_steps
    state = tuple([jax.numpy.array(v.value, copy=True) for v in group]
                  for group in engine.state_groups(kind))
    given = [a.unsafe_buffer_pointer() for a in jax.tree_util.tree_leaves(state)]
    batch = (x[:8], y[:8]) if kind is not PREDICT else (x[:8],)
    out_state, _ = engine.program(kind)(state, batch)
    returned = [a.unsafe_buffer_pointer() for a in jax.tree_util.tree_leaves(out_state)]
    assert returned == given
    with pytest.raises(RuntimeError, match="deleted"):   # donated: the caller's are gone
        np.asarray(jax.tree_util.tree_leaves(state)[0])


def test_evaluate_and_predict_leave_the_weights_as_they_were():
    loopax.utils.set_random_seed(0)
    x, y = regression_data(n=40)
    model = mlp(units=8)
    model.compile(optimizer="adam", loss="mse", metrics=["mae"])
    model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    weights = [np.array(w) for w in model.get_weights()]
    first = model.evaluate(x, y, batch_size=8, verbose=0)
    predicted = model.predict(x, batch_size=8, verbose=0)
    for before, after in zip(weights, model.get_weights()):
        np.testing.assert_array_equal(before, after)
    assert model.evaluate(x, y, batch_size=8, verbose=0) == first
    np.testing.assert_array_equal(model.predict(x, batch_size=8, verbose=0), predicted)
