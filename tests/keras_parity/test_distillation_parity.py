"""`loopax.distillation` against Keras 3.15.1's `keras.distillation`: a small teacher
and student (Functional and Sequential) start from the same weights, and fit()'s
losses, the trackers (`student_loss`, `distillation_loss`, `total_loss`), metrics and
evaluate() agree."""

import itertools
import warnings

import numpy as np
import pytest
from keras_reference import keras

import loopax

RNG = np.random.default_rng(0)
X = RNG.normal(size=(32, 6)).astype("float32")
Y = RNG.integers(0, 3, 32)


def functional(lib, name, units):
    inputs = lib.Input((6,))
    hidden = lib.layers.Dense(units, activation="relu", name=f"{name}_hidden")(inputs)
    return lib.Model(inputs, lib.layers.Dense(3, name=f"{name}_logits")(hidden), name=name)


def sequential(lib, name, units):
    return lib.Sequential([lib.Input((6,)),
                           lib.layers.Dense(units, activation="relu", name=f"{name}_hidden"),
                           lib.layers.Dense(3, name=f"{name}_logits")], name=name)


def losses_for(lib, case):
    d = lib.distillation
    return {
        "logits-default": [d.LogitsDistillation(temperature=2.0)],
        "logits-kl-instance": [d.LogitsDistillation(temperature=3.0,
                                                    loss=lib.losses.KLDivergence())],
        "logits-and-features": [
            d.LogitsDistillation(temperature=2.0, loss=lib.losses.KLDivergence()),
            d.FeatureDistillation(loss="mse", teacher_layer_name="teacher_hidden",
                                  student_layer_name="student_hidden")],
        "features-final-output": [d.FeatureDistillation(loss="mae")],
    }[case]


def train(lib, build, case, weights, student_loss_weight):
    teacher, student = build(lib, "teacher", 8), build(lib, "student", 8)
    if weights is None:
        weights = (teacher.get_weights(), student.get_weights())
    teacher.set_weights(weights[0])
    student.set_weights(weights[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        distiller = lib.distillation.Distiller(
            teacher, student, losses_for(lib, case),
            distillation_loss_weights=[1.0, 0.5] if case == "logits-and-features" else None,
            student_loss_weight=student_loss_weight)
    distiller.compile(optimizer=lib.optimizers.SGD(0.1),
                      loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    history = distiller.fit(X, Y, batch_size=8, epochs=2, shuffle=False, verbose=0).history
    evaluated = distiller.evaluate(X, Y, batch_size=8, verbose=0, return_dict=True)
    return weights, history, evaluated, distiller


BUILDS = {"functional": functional, "sequential": sequential}
LOSS_CASES = ["logits-default", "logits-kl-instance", "logits-and-features",
              "features-final-output"]
STUDENT_LOSS_WEIGHTS = [0.3, 1.0, 0.0]
# Every pair of two settings' values meets in a case (each case trains two models in
# both libraries, a few seconds): all 12 losses x weights, the model kind alternating,
# instead of the 24 of the full product.
CASES = [(list(BUILDS)[(i + j) % 2], loss_case, weight)
         for i, loss_case in enumerate(LOSS_CASES)
         for j, weight in enumerate(STUDENT_LOSS_WEIGHTS)]


def test_the_cases_cover_every_pair_of_settings():
    settings = [list(BUILDS), LOSS_CASES, STUDENT_LOSS_WEIGHTS]
    for a, b in itertools.combinations(range(3), 2):
        covered = {(case[a], case[b]) for case in CASES}
        assert covered == set(itertools.product(settings[a], settings[b]))


@pytest.mark.parametrize("build_name, case, student_loss_weight", [
    pytest.param(*case, id=f"alpha{case[2]}-{case[1]}-{case[0]}") for case in CASES])
def test_distiller_trains_as_keras(build_name, case, student_loss_weight):
    build = BUILDS[build_name]
    weights, expected, expected_eval, theirs = train(keras, build, case, None,
                                                     student_loss_weight)
    _, history, evaluated, ours = train(loopax, build, case, weights, student_loss_weight)
    assert sorted(history) == sorted(expected)
    for key in expected:
        np.testing.assert_allclose(history[key], expected[key], rtol=2e-4, atol=1e-6,
                                   err_msg=key)
    for key in expected_eval:
        np.testing.assert_allclose(evaluated[key], expected_eval[key], rtol=2e-4, atol=1e-6,
                                   err_msg=key)
    assert ours.metrics_names == theirs.metrics_names
    assert len(ours.trainable_weights) == len(theirs.trainable_weights)
    assert ours.teacher.trainable is False
    for a, b in zip(ours.teacher.get_weights(), theirs.teacher.get_weights()):
        np.testing.assert_array_equal(a, b)   # the teacher is frozen in both
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0),
                               rtol=1e-4, atol=1e-5)


def test_default_kl_divergence_name_warns_that_it_compares_logits():
    with pytest.warns(UserWarning, match="KLDivergence()"):
        loopax.distillation.LogitsDistillation()


@pytest.mark.parametrize("lib_name", ["keras", "loopax"])
def test_bad_arguments_are_refused_as_keras(lib_name):
    lib = {"keras": keras, "loopax": loopax}[lib_name]
    d = lib.distillation
    teacher, student = functional(lib, "teacher", 8), functional(lib, "student", 4)
    logits = d.LogitsDistillation(loss=lib.losses.KLDivergence())
    with pytest.raises(ValueError, match="student_loss_weight"):
        d.Distiller(teacher, student, logits, student_loss_weight=1.5)
    with pytest.raises(ValueError, match="distillation_losses"):
        d.Distiller(teacher, student, None)
    with pytest.raises(ValueError, match="distillation_loss_weights"):
        d.Distiller(teacher, student, [logits, logits], distillation_loss_weights=[1.0])
    with pytest.raises(ValueError, match="temperature"):
        d.LogitsDistillation(temperature=0.0)
    with pytest.raises(ValueError, match="nope"):
        d.Distiller(teacher, student, d.FeatureDistillation(teacher_layer_name="nope"))
    other = lib.Sequential([lib.Input((5,)), lib.layers.Dense(3)])
    with pytest.raises(ValueError, match="incompatible"):
        d.Distiller(teacher, other, logits)
    distiller = d.Distiller(teacher, student, logits)
    with pytest.raises(ValueError, match="cannot be"):
        distiller.compile(optimizer="sgd", loss=None)


def test_distillation_loss_configs_round_trip():
    d = loopax.distillation
    feature = d.FeatureDistillation(loss="mae", teacher_layer_name="a", student_layer_name="b")
    again = d.FeatureDistillation.from_config(feature.get_config())
    assert (again.teacher_layer_name, again.student_layer_name) == ("a", "b")
    logits = d.LogitsDistillation(temperature=5.0, loss=loopax.losses.KLDivergence())
    again = d.LogitsDistillation.from_config(logits.get_config())
    assert again.temperature == 5.0 and isinstance(again.loss, loopax.losses.KLDivergence)
    x, y = np.ones((2, 3), "float32"), np.zeros((2, 3), "float32")
    assert float(again.compute_loss(x, y)) == pytest.approx(float(logits.compute_loss(x, y)))
