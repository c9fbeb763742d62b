"""fit() per-sample time under `DataParallel` on 8 simulated CPU devices
against the same fit on 1 device, and what the collectives alone cost.

The 8 "devices" are `XLA_FLAGS=--xla_force_host_platform_device_count=8`
CPU devices: they all share this machine's cores (2 here), so 8 devices
cannot be faster than 1; the question is how much the sharding adds (the
gradient all-reduce, the split of each batch, the replicated updates).

Each configuration runs in its own process (the flag is read when JAX starts):

1. one device: `model.fit(x, y, batch_size=B)`, no distribution;
2. 8 devices, `DataParallel()`: the same fit, each batch split 8 ways, the
   weights replicated;
3. 8 devices, the all-reduce alone: a jitted `psum`-style mean of arrays of
   the model's weight sizes over the 8 devices (what one step must add at
   least), per step.

Model: 784-256(relu)-256(relu)-10 MLP, Adam, categorical cross-entropy,
synthetic MNIST-shaped data. Per-sample times exclude compilation (epochs
after the first).

    python bench/data_parallel.py [--samples 16384] [--batch 256] [--epochs 3]
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def child(args):
    import jax
    import numpy as np

    import loopax as keras
    from loopax import distribution as dist

    rng = np.random.default_rng(0)
    x = rng.random((args.samples, 784), dtype=np.float32)
    y = np.eye(10, dtype=np.float32)[rng.integers(0, 10, args.samples)]

    def make():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((784,)),
                                  keras.layers.Dense(256, activation="relu"),
                                  keras.layers.Dense(256, activation="relu"),
                                  keras.layers.Dense(10)])
        model.compile(optimizer="adam",
                      loss=keras.losses.CategoricalCrossentropy(from_logits=True))
        return model

    class EpochTimer(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.seconds = []

        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            float(logs["loss"])   # the epoch's work is done
            self.seconds.append(time.perf_counter() - self.start)

    out = {"devices": jax.device_count(), "mode": args.mode}
    if args.mode == "allreduce":
        from jax.sharding import NamedSharding, PartitionSpec
        mesh = dist.DeviceMesh((8,), ("batch",)).backend_mesh
        sizes = [(784, 256), (256,), (256, 256), (256,), (256, 10), (10,)]
        # One gradient per device (sharded on a leading axis of 8), averaged.
        grads = [jax.device_put(np.ones((8,) + s, np.float32),
                                NamedSharding(mesh, PartitionSpec("batch")))
                 for s in sizes]
        replicated = NamedSharding(mesh, PartitionSpec())
        mean = jax.jit(lambda gs: [g.mean(axis=0) for g in gs], out_shardings=replicated)
        jax.block_until_ready(mean(grads))
        steps = 200
        start = time.perf_counter()
        for _ in range(steps):
            # One call at a time, as fit() does on simulated CPU devices.
            jax.block_until_ready(mean(grads))
        out["step_seconds"] = (time.perf_counter() - start) / steps
    else:
        timer = EpochTimer()
        scope = dist.DataParallel().scope() if args.mode == "data_parallel" else None
        if scope is not None:
            scope.__enter__()
        model = make()
        model.fit(x, y, batch_size=args.batch, epochs=args.epochs, verbose=0,
                  callbacks=[timer])
        if scope is not None:
            scope.__exit__(None, None, None)
        best = min(timer.seconds[1:])
        out["sample_us"] = best / args.samples * 1e6
        out["step_seconds"] = best / (args.samples // args.batch)
    print(json.dumps(out))


def run(mode, devices, args):
    env = dict(os.environ, XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
               PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, __file__, "--child", "--mode", mode,
                           "--samples", str(args.samples), "--batch", str(args.batch),
                           "--epochs", str(args.epochs)],
                          env=env, capture_output=True, text=True, check=False)
    if done.returncode:
        sys.exit(done.stderr)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=16384)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--mode", default="single")
    args = parser.parse_args()
    if args.child:
        return child(args)
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}; "
          f"{args.samples} samples, batch {args.batch}")
    single = run("single", 1, args)
    parallel = run("data_parallel", 8, args)
    allreduce = run("allreduce", 8, args)
    print(f"1 device:                   {single['sample_us']:8.2f} us/sample "
          f"({single['step_seconds'] * 1e3:.2f} ms/step)")
    print(f"8 devices, DataParallel:    {parallel['sample_us']:8.2f} us/sample "
          f"({parallel['step_seconds'] * 1e3:.2f} ms/step)  "
          f"ratio {parallel['sample_us'] / single['sample_us']:.2f}x")
    print(f"8 devices, all-reduce only: {allreduce['step_seconds'] * 1e3:8.2f} ms/step "
          f"(gradient mean of the model's weight sizes)")
    extra = parallel["step_seconds"] - single["step_seconds"]
    print(f"data parallel adds {extra * 1e3:.2f} ms/step over 1 device; the all-reduce "
          f"alone is {allreduce['step_seconds'] * 1e3:.2f} ms/step")


if __name__ == "__main__":
    main()
