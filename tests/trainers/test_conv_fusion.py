"""Convolution programs on CPU: fused executions run as one-step calls where XLA:CPU
would run the loop body's convolutions as naive loop nests (it rewrites them into
Eigen's NHWC/HWIO form only at a program's top level), with the weights of one step
per call, bit for bit."""

import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

import loopax
from loopax.src.trainers import programs
from loopax.src.trainers.programs import cpu_rules

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "keras_parity"))

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="an XLA:CPU rule")

NHWC = ("NHWC", "HWIO", "NHWC")
# Eigen's convolutions, YNNPACK's reductions.
EIGEN_CONVOLUTIONS = {"xla_cpu_experimental_ynn_fusion_type": "LIBRARY_FUSION_TYPE_REDUCE"}


def conv(x, kernel, dimension_numbers=NHWC):
    return lax.conv_general_dilated(x, kernel, (1, 1), "SAME", dimension_numbers=dimension_numbers)


def jaxpr_of(fn, *shapes):
    return jax.make_jaxpr(fn)(*(jnp.zeros(s) for s in shapes))


def test_channels_last_forward_convolutions_are_fine_in_loops():
    assert cpu_rules(jaxpr_of(conv, (2, 5, 5, 3), (3, 3, 3, 4))) == (EIGEN_CONVOLUTIONS, True)


def test_channels_first_convolutions_are_slow_in_loops():
    nchw = lambda x, k: conv(x, k, ("NCHW", "OIHW", "NCHW"))
    assert cpu_rules(jaxpr_of(nchw, (2, 3, 5, 5), (4, 3, 3, 3))) == (EIGEN_CONVOLUTIONS, False)


def test_a_convolution_gradient_is_slow_in_loops_even_nested_in_a_jit():
    """The gradients' convolutions swap the kernel's feature axes (input gradient)
    and batch and feature axes (kernel gradient): not Eigen's form."""
    loss = jax.jit(lambda x, k: jnp.sum(conv(x, k) ** 2))
    assert not cpu_rules(jaxpr_of(jax.grad(loss, argnums=(0, 1)), (2, 5, 5, 3),
                                  (3, 3, 3, 4)))[1]


def small_conv_model(steps_per_execution):
    loopax.utils.set_random_seed(0)
    inputs = loopax.Input((6, 6, 1))
    h = loopax.layers.Conv2D(4, 3, padding="same", activation="relu")(inputs)
    outputs = loopax.layers.Conv2D(1, 1)(h)
    model = loopax.Model(inputs, outputs)
    model.compile(optimizer=loopax.optimizers.Adam(0.01), loss="mse",
                  steps_per_execution=steps_per_execution)
    return model


@pytest.mark.parametrize("data", ["arrays", "generator"])
def test_fused_conv_training_gives_the_bits_of_one_step_per_call(data):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(32, 6, 6, 1)).astype("float32")

    def source():
        if data == "arrays":
            return dict(x=x, y=x, batch_size=4)
        def batches():
            while True:
                for i in range(0, 32, 4):
                    yield x[i:i + 4], x[i:i + 4]
        return dict(x=batches(), steps_per_epoch=8)

    runs = {}
    for spe in (1, 4):
        model = small_conv_model(spe)
        history = model.fit(**source(), epochs=2, shuffle=False, verbose=0)
        runs[spe] = (model.get_weights(), history.history["loss"])
    for a, b in zip(runs[1][0], runs[4][0], strict=True):
        np.testing.assert_array_equal(a, b)
    assert runs[1][1] == runs[4][1]


def programs_compiled_by(run, monkeypatch):
    """`(function name, compiler_options)` of every `jax.jit` made while `run()` runs."""
    made, real_jit = [], jax.jit

    def recording_jit(*args, **kwargs):
        if args:
            made.append((getattr(args[0], "__name__", "?"), kwargs.get("compiler_options")))
        return real_jit(*args, **kwargs)

    monkeypatch.setattr(jax, "jit", recording_jit)
    run()
    monkeypatch.setattr(jax, "jit", real_jit)
    return made


def test_convolution_steps_compile_with_eigen_convolutions_and_other_steps_with_the_defaults(
        monkeypatch):
    """jaxlib 0.10's XLA:CPU runs convolutions through YNNPACK, 2-3x slower than Eigen
    here (docs/performance.md); a YNN fusion list of reductions only gives them back to
    Eigen. Every
    program of a convolution step (train, test, predict; single steps and loops) gets
    it, so all compute the same bits; a step without a convolution keeps XLA's
    defaults."""
    x = np.random.default_rng(0).normal(size=(8, 6, 6, 1)).astype("float32")
    conv_model = small_conv_model(2)
    dense = loopax.Sequential([loopax.Input((6, 6, 1)), loopax.layers.Flatten(),
                               loopax.layers.Dense(36), loopax.layers.Reshape((6, 6, 1))])
    dense.compile(optimizer="adam", loss="mse", steps_per_execution=2)

    def fit_evaluate_predict(model):
        model.fit(x, x, batch_size=4, epochs=1, verbose=0)
        model.evaluate(x, x, batch_size=4, verbose=0)
        model.predict(x, batch_size=4, verbose=0)

    programs.convolution_compiler_options()   # its one-time check jits a probe: not a step
    conv_programs = programs_compiled_by(lambda: fit_evaluate_predict(conv_model), monkeypatch)
    # "one": a one-step program ("one_counting_rows" where a padded batch may run it)
    assert {name.partition("_")[0] for name, options in conv_programs
            if options == EIGEN_CONVOLUTIONS} == {"one", "loop"}
    assert [options for _, options in conv_programs if options is not None] and all(
        options == EIGEN_CONVOLUTIONS for _, options in conv_programs if options is not None)
    dense_programs = programs_compiled_by(lambda: fit_evaluate_predict(dense), monkeypatch)
    assert {name.partition("_")[0] for name, _ in dense_programs} >= {"one"}
    assert [options for _, options in dense_programs if options is not None] == []


def ynn_fused(hlo_text, op):
    """How many of the compiled program's YNNPACK fusions hold an `op` (` reduce(`...)."""
    bodies = dict(re.findall(r"^(%\S+) .*?\{\n(.*?)\n\}", hlo_text, re.S | re.M))
    called = re.findall(r'calls=(%[^,\s]+).*"__ynn_fusion"', hlo_text)
    return sum(op in bodies.get(name, "") for name in called)


def ynn_convolutions(hlo_text):
    return ynn_fused(hlo_text, " convolution(")


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="an XLA:CPU option")
def test_a_convolution_step_keeps_ynnpack_reductions_and_keras_batch_norm_gradients():
    """Without YNNPACK XLA:CPU splits a long reduction (BatchNormalization's statistics
    and their gradients) into a reduce-window tree: slower (ResNet-20's step 1.25x) and
    summed in another order than Keras's program, which keeps XLA's defaults."""
    from keras_reference import keras

    def build(lib):
        layers = lib.layers
        inputs = lib.Input((16, 16, 8))
        x = layers.Conv2D(16, 3, padding="same", use_bias=False)(inputs)
        x = layers.Activation("relu")(layers.BatchNormalization()(x))
        y = layers.Conv2D(16, 3, padding="same", use_bias=False)(x)
        x = layers.Activation("relu")(layers.Add()([x, layers.BatchNormalization()(y)]))
        return lib.Model(inputs, layers.Dense(10)(layers.GlobalAveragePooling2D()(x)))

    models = {"keras": build(keras), "loopax": build(loopax)}
    models["loopax"].set_weights(models["keras"].get_weights())
    rng = np.random.default_rng(0)
    x = rng.random((64, 16, 16, 8), np.float32) * 3 + 1
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, 64)]

    def gradient(lib, options):
        model = models[lib]
        trainable = [v.value for v in model.trainable_variables]
        others = [v.value for v in model.non_trainable_variables]
        loss = {"keras": keras, "loopax": loopax}[lib].losses.CategoricalCrossentropy(
            from_logits=True)

        def step(trainable):
            return loss(y, model.stateless_call(trainable, others, x, training=True)[0])

        program = jax.jit(jax.grad(step), compiler_options={
            "xla_backend_optimization_level": 2, **options}).lower(trainable).compile()
        return program(trainable), program.as_text()

    want, _ = gradient("keras", {})
    rule = programs.convolution_compiler_options()
    got, text = gradient("loopax", rule)
    assert " convolution(" in text and not ynn_convolutions(text)
    # (a reduce-window left is the Dense bias gradient's (64, 10) -> (2, 10) split)
    assert ynn_fused(text, " reduce(")
    assert not re.search(r"= f32\[\d+,\d+,\d+,\d+\]\S* reduce-window\(", text)
    for i, (a, b) in enumerate(zip(got, want, strict=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=f"gradient {i}")


@pytest.mark.skipif(jax.default_backend() != "cpu", reason="an XLA:CPU option")
def test_a_convolution_step_runs_its_convolution_and_gradients_on_eigen_not_ynnpack():
    def step(x, k):
        return jax.value_and_grad(lambda k: jnp.sum(lax.conv_general_dilated(
            x, k, (1, 1), "VALID", dimension_numbers=NHWC) ** 2))(k)

    def compiled(options):   # at XLA's default optimization level (the suite runs -O0)
        return jax.jit(step, compiler_options={"xla_backend_optimization_level": 2, **options})

    # (XLA keeps small convolutions off YNNPACK.)
    x = jnp.asarray(np.random.default_rng(1).normal(size=(8, 13, 13, 32)), jnp.float32)
    k = jnp.asarray(np.random.default_rng(2).normal(size=(3, 3, 32, 64)), jnp.float32)
    rule = programs.convolution_compiler_options()
    assert rule == EIGEN_CONVOLUTIONS
    without = compiled({}).lower(x, k).compile().as_text()
    with_rule = compiled(rule).lower(x, k).compile().as_text()
    assert ynn_convolutions(without)   # jaxlib 0.10's default: YNNPACK convolutions
    assert not ynn_convolutions(with_rule) and " convolution(" in with_rule
    want = np.asarray(compiled({})(x, k)[1])  # float rounding apart: sums of 15488 terms
    for got in (
        compiled(rule)(x, k)[1],
        compiled(cpu_rules(jax.make_jaxpr(step)(x, k))[0])(x, k)[1],
    ):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * np.abs(want).max())
