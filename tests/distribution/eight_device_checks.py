"""Runs on 8 simulated CPU devices (started by test_eight_devices.py, which sets
XLA_FLAGS=--xla_force_host_platform_device_count=8) and prints one JSON object of
measurements: each distributed run next to the same run on one device."""

import json
import sys
import time
import warnings

import jax
import numpy as np

import loopax as keras
from loopax import distribution as dist
from loopax.src.trainers.pass_kind import TRAIN

START = time.perf_counter()

results = {"device_count": jax.device_count()}
rng = np.random.default_rng(0)
x = rng.normal(size=(128, 12)).astype("float32")
y = (x[:, :3] @ rng.normal(size=(3, 4))).astype("float32")


def make_model(seed=1):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((12,)),
                              keras.layers.Dense(16, activation="relu", name="hidden"),
                              keras.layers.Dense(4, name="out")])
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse", metrics=["mae"],
                  steps_per_execution=4)
    return model


def rel_diffs(a_list, b_list):
    return [float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / np.linalg.norm(np.asarray(a)))
            for a, b in zip(a_list, b_list)]


def spec(variable):
    return str(tuple(variable.value.sharding.spec))


def error_of(fn):
    try:
        fn()
    except (ValueError, TypeError) as e:
        return f"{type(e).__name__}: {e}"
    return None


# ---- one device: the reference -------------------------------------------
ref = make_model()
ref_history = ref.fit(x, y, batch_size=32, epochs=2, verbose=0, shuffle=False).history
ref_weights = ref.get_weights()
ref_pred = ref.predict(x, batch_size=32, verbose=0)

# ---- DataParallel on 8 devices --------------------------------------------
data_parallel = dist.DataParallel()
with data_parallel.scope():
    model = make_model()
    history = model.fit(x, y, batch_size=32, epochs=2, verbose=0, shuffle=False).history
    dp_weights = model.get_weights()
    loop = model._compiled_steps.program(TRAIN, "device", "dynamic")
    model.fit(x, y, batch_size=32, epochs=1, verbose=0, shuffle=False)
    cache_after_refit = loop.cache_size()
kernels = [model.get_layer("hidden").kernel, model.get_layer("out").kernel]
results["dp"] = {
    "history": history, "ref_history": ref_history,
    "weight_rel_diff": rel_diffs(ref_weights, dp_weights),
    "kernel_devices": [len(k.value.sharding.device_set) for k in kernels],
    "kernel_replicated": [bool(k.value.sharding.is_fully_replicated) for k in kernels],
    "slot_devices": [len(v.value.sharding.device_set) for v in model.optimizer.variables],
    "metric_devices": [len(v.value.sharding.device_set) for v in model.metrics_variables],
    "loop_compiles_after_second_fit": cache_after_refit,
}

# A generator (the host path: stacked chunks and single batches) gives the same.
def batches():
    for i in range(0, 128, 32):
        yield x[i:i + 32], y[i:i + 32]

ref_gen = make_model()
ref_gen_history = ref_gen.fit(batches(), epochs=1, verbose=0).history
with data_parallel.scope():
    gen = make_model()
    gen_history = gen.fit(batches(), epochs=1, verbose=0).history
results["dp_generator"] = {"history": gen_history, "ref_history": ref_gen_history,
                           "weight_rel_diff": rel_diffs(ref_gen.get_weights(),
                                                        gen.get_weights())}

# A model built before the distribution was set is placed when fit starts.
early = make_model()
with data_parallel.scope():
    early.fit(x, y, batch_size=32, epochs=2, verbose=0, shuffle=False)
results["dp_built_before"] = {
    "weight_rel_diff": rel_diffs(ref_weights, early.get_weights()),
    "kernel_devices": len(early.get_layer("hidden").kernel.value.sharding.device_set)}

# ---- ModelParallel on a (2, 4) mesh ---------------------------------------
mesh = dist.DeviceMesh((2, 4), ("batch", "model"))
layout_map = dist.LayoutMap(mesh)
layout_map[".*hidden/kernel"] = (None, "model")
layout_map[".*hidden/bias"] = ("model",)
layout_map[".*out/kernel"] = dist.TensorLayout(("model", None))
model_parallel = dist.ModelParallel(layout_map=layout_map, batch_dim_name="batch")
with model_parallel.scope():
    mp = make_model()
    mp_history = mp.fit(x, y, batch_size=32, epochs=2, verbose=0, shuffle=False).history
    mp_pred = mp.predict(x, batch_size=32, verbose=0)
    mp_eval = mp.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
ref_eval = ref.evaluate(x, y, batch_size=32, verbose=0, return_dict=True)
results["mp"] = {
    "specs": {v.path.split("/", 1)[1]: spec(v) for v in mp.variables},   # less "sequential/"
    "slot_specs": {v.path: spec(v) for v in mp.optimizer.variables},
    "hidden_kernel_shard_shape": list(
        mp.get_layer("hidden").kernel.value.addressable_shards[0].data.shape),
    "history": mp_history, "ref_history": ref_history,
    "weight_rel_diff": rel_diffs(ref_weights, mp.get_weights()),
    "predict_max_abs_diff": float(np.max(np.abs(mp_pred - ref_pred))),
    "eval": mp_eval, "ref_eval": ref_eval,
}

# ---- predict under DataParallel, with a partial last batch ----------------
with data_parallel.scope():
    pred = model.predict(x[:100], batch_size=32, verbose=0)
plain = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                          keras.layers.Dense(4)])
plain.set_weights(model.get_weights())
results["dp_predict_max_abs_diff"] = float(np.max(np.abs(
    pred - plain.predict(x[:100], batch_size=32, verbose=0))))

# ---- a stateless custom loop (seed 000 style) with the helpers ------------
def custom_loop(distribution):
    keras.utils.set_random_seed(3)
    net = keras.Sequential([keras.Input((12,)), keras.layers.Dense(16, activation="relu"),
                            keras.layers.Dense(4)])
    optimizer = keras.optimizers.Adam(0.01)
    optimizer.build(net.trainable_variables)
    loss_fn = keras.losses.MeanSquaredError()

    def loss_and_updates(trainable, non_trainable, xb, yb):
        pred, non_trainable = net.stateless_call(trainable, non_trainable, xb)
        return loss_fn(yb, pred), non_trainable

    grad_fn = jax.value_and_grad(loss_and_updates, has_aux=True)

    @jax.jit
    def train_step(state, data):
        trainable, non_trainable, opt = state
        (loss, non_trainable), grads = grad_fn(trainable, non_trainable, *data)
        trainable, opt = optimizer.stateless_apply(opt, grads, trainable)
        return loss, (trainable, non_trainable, opt)

    state = (net.trainable_variables, net.non_trainable_variables, optimizer.variables)
    losses = []
    for i in range(0, 128, 32):
        data = (x[i:i + 32], y[i:i + 32])
        if distribution is not None:
            data = dist.distribute_batch(data, distribution)
        loss, state = train_step(state, data)
        losses.append(float(loss))
    batch_devices = len(data[0].sharding.device_set) if distribution is not None else 1
    batch_spec = str(tuple(data[0].sharding.spec)) if distribution is not None else ""
    kernel = state[0][0]
    return losses, [np.asarray(v) for v in state[0]], batch_devices, batch_spec, kernel


ref_losses, ref_trained, _, _, _ = custom_loop(None)
with model_parallel.scope():
    mp_losses, mp_trained, batch_devices, batch_spec, kernel = custom_loop(model_parallel)
results["custom_loop"] = {
    "losses": mp_losses, "ref_losses": ref_losses,
    "weight_rel_diff": rel_diffs(ref_trained, mp_trained),
    "batch_devices": batch_devices, "batch_spec": batch_spec,
    "kernel_devices": len(kernel.sharding.device_set),
}
explicit = dist.distribute_tensor(np.ones((8, 4), "float32"),
                                  dist.TensorLayout(("model", None), mesh))
results["distribute_tensor_spec"] = str(tuple(explicit.sharding.spec))

# ---- bad input: clear errors ----------------------------------------------
def fit_batch_12():
    with data_parallel.scope():
        make_model().fit(x, y, batch_size=12, epochs=1, verbose=0)


def missing_axis():
    layout_map["dense.*kernel"] = (None, "tensor")


def not_divisible():
    bad = dist.LayoutMap(dist.DeviceMesh((2, 4), ("batch", "model")))
    bad[".*hidden/kernel"] = ("model", None)   # 12 rows over 4 devices: fine
    bad[".*out/kernel"] = (None, "model")      # 4 columns: fine
    bad[".*out/bias"] = ("batch",)             # fine
    bad[".*hidden/bias"] = ("batch",)          # fine
    bad2 = dist.LayoutMap(dist.DeviceMesh((1, 8), ("batch", "model")))
    bad2[".*out/kernel"] = (None, "model")     # 4 columns over 8 devices
    with dist.ModelParallel(layout_map=bad2).scope():
        make_model()


def unmatched_key_warnings():
    """A key that matches no variable places nothing, as in Keras, and warns once."""
    lm = dist.LayoutMap(mesh)
    lm[".*hidden/kernel"] = (None, "model")
    lm["conv.*kernel"] = (None, None, None, "model")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with dist.ModelParallel(layout_map=lm).scope():
            model = make_model()
            model.fit(x, y, batch_size=32, epochs=1, verbose=0)
            model.evaluate(x, y, batch_size=32, verbose=0)
    kernel = next(v for v in model.variables if v.path.endswith("/hidden/kernel"))
    return {"warnings": [str(w.message) for w in caught if "layout map" in str(w.message)],
            "hidden_kernel_spec": str(tuple(kernel.value.sharding.spec))}


def distribute_batch_odd():
    dist.distribute_batch((x[:30], y[:30]), data_parallel)


def wrong_rank():
    lm = dist.LayoutMap(mesh)
    lm[".*hidden/kernel"] = ("model",)
    with dist.ModelParallel(layout_map=lm).scope():
        make_model()


results["errors"] = {name: error_of(fn) for name, fn in [
    ("batch_not_divisible", fit_batch_12), ("missing_axis", missing_axis),
    ("dimension_not_divisible", not_divisible),
    ("distribute_batch_not_divisible", distribute_batch_odd), ("wrong_rank", wrong_rank)]}
results["unmatched_key"] = unmatched_key_warnings()

results["seconds"] = time.perf_counter() - START
json.dump(results, sys.stdout)
