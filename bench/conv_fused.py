"""fit() of a convolution model with steps fused into one call (steps_per_execution=k)
against one jitted step per call, in one run; and, for reference, the fused XLA loop
itself.

Model: PixelCNN-style (keras.io/examples/generative/pixelcnn) at a small size: a
masked 7x7 Conv2D ("A" mask), `--blocks` masked 3x3 Conv2D ("B" mask), a 1x1 Conv2D
with a sigmoid; binary cross-entropy, Adam 1e-3. Data: synthetic binary images.

XLA:CPU runs the gradient's convolutions as naive loop nests inside a loop body
(it rewrites them into Eigen's NHWC/HWIO form only at a program's top level), so on
CPU loopax runs such fused executions as one-step calls back to back. The three
contenders, epochs alternating (the best of each counts), per-step times without
compilation:

- single: `fit(steps_per_execution=1)`;
- fused:  `fit(steps_per_execution=k)`, what loopax runs for k steps per execution;
- XLA loop: the same train step in a compiled `lax.fori_loop` of k steps (loopax's
  device loop called directly), what a fused execution would cost without the rule
  (one call of k steps per round: it is slow).

    python bench/conv_fused.py [--size 20] [--filters 32] [--blocks 2] [--batch 16]
                               [--steps 16] [--k 4] [--epochs 5] [--no-xla-loop]
"""

import argparse
import time

import jax
import numpy as np


def masked_conv_model(keras, size, filters, blocks):
    class PixelConvLayer(keras.layers.Layer):
        """Conv2D whose kernel is masked to the pixels above and left of the centre
        (the centre too for mask "B"), as in Keras's PixelCNN example."""

        def __init__(self, mask_type, **kwargs):
            super().__init__()
            self.mask_type = mask_type
            self.conv = keras.layers.Conv2D(**kwargs)

        def build(self, input_shape):
            self.conv.build(input_shape)
            rows, cols = self.conv.kernel.shape[:2]
            self.mask = np.zeros(self.conv.kernel.shape, "float32")
            self.mask[:rows // 2] = 1.0
            self.mask[rows // 2, :cols // 2] = 1.0
            if self.mask_type == "B":
                self.mask[rows // 2, cols // 2] = 1.0

        def call(self, inputs):
            self.conv.kernel.assign(self.conv.kernel * self.mask)
            return self.conv(inputs)

    keras.utils.set_random_seed(0)
    inputs = keras.Input((size, size, 1))
    h = PixelConvLayer("A", filters=filters, kernel_size=7, activation="relu",
                       padding="same")(inputs)
    for _ in range(blocks):
        h = PixelConvLayer("B", filters=filters, kernel_size=3, activation="relu",
                           padding="same")(h)
    outputs = keras.layers.Conv2D(1, 1, activation="sigmoid")(h)
    return keras.Model(inputs, outputs)


def make_fit_epoch(keras, args, x, steps_per_execution):
    """A function running one `fit` epoch; returns its seconds per step
    (on_epoch_begin to on_epoch_end). Compiles before returning."""
    model = masked_conv_model(keras, args.size, args.filters, args.blocks)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy",
                  steps_per_execution=steps_per_execution)

    class EpochTimer(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            self.start = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.seconds = time.perf_counter() - self.start

    timer = EpochTimer()

    def epoch():
        model.fit(x, x, batch_size=args.batch, epochs=1, verbose=0, shuffle=False,
                  callbacks=[timer])
        return timer.seconds / args.steps
    start = time.perf_counter()
    epoch()
    print(f"  steps_per_execution={steps_per_execution}: first epoch (compiling) "
          f"{time.perf_counter() - start:.2f} s")
    return epoch


def make_xla_loop_epoch(keras, args, x):
    """The model's train step in loopax's compiled device loop (a `lax.fori_loop`
    of k steps per call), bypassing the rule that unfuses it on CPU. One call of
    k steps per "epoch" (it is slow); returns its seconds per step."""
    from loopax.src.trainers.live_state import LiveState
    from loopax.src.trainers.pass_kind import TRAIN

    model = masked_conv_model(keras, args.size, args.filters, args.blocks)
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="binary_crossentropy")
    model.fit(x[:args.batch], x[:args.batch], batch_size=args.batch, epochs=1, verbose=0)
    engine = model._compiled_steps
    _, groups, _ = engine.value_step(TRAIN)
    loop = engine.program(TRAIN, "device", "dynamic")   # called without asking may_fuse
    live = LiveState(groups)
    data = (jax.numpy.asarray(x), jax.numpy.asarray(x))
    start = time.perf_counter()
    values, _ = loop(live.values, data, None, 0, 0, batch_size=args.batch)   # compiles
    jax.block_until_ready(values)
    print(f"  XLA loop: compiling {time.perf_counter() - start:.2f} s")
    box = [values]

    def epoch():
        begin = time.perf_counter()
        box[0], _ = loop(box[0], data, None, 0, args.k, batch_size=args.batch)
        jax.block_until_ready(box[0])
        return (time.perf_counter() - begin) / args.k
    return epoch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20, help="image height and width")
    parser.add_argument("--filters", type=int, default=32)
    parser.add_argument("--blocks", type=int, default=2, help="masked 3x3 layers")
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=16, help="steps per epoch")
    parser.add_argument("--k", type=int, default=4, help="steps per execution when fused")
    parser.add_argument("--epochs", type=int, default=5,
                        help="timed epochs per contender, alternating (the best counts)")
    parser.add_argument("--no-xla-loop", action="store_true",
                        help="skip the (slow) fused XLA loop reference")
    args = parser.parse_args()
    import loopax as keras

    rng = np.random.default_rng(0)
    x = (rng.random((args.steps * args.batch, args.size, args.size, 1)) > 0.5).astype("float32")
    print(f"masked-conv model {args.size}x{args.size}x1, {args.filters} filters, "
          f"{args.blocks} B-blocks, batch {args.batch}, {args.steps} steps per epoch, "
          f"k={args.k}, {jax.devices()[0].platform}, best of {args.epochs} alternating epochs")
    contenders = {"single (spe=1)": make_fit_epoch(keras, args, x, 1),
                  f"fused  (spe={args.k})": make_fit_epoch(keras, args, x, args.k)}
    if not args.no_xla_loop:
        contenders[f"XLA loop (k={args.k})"] = make_xla_loop_epoch(keras, args, x)
    times = {name: [] for name in contenders}
    for _ in range(args.epochs):   # alternate: load from elsewhere hits all alike
        for name, epoch in contenders.items():
            times[name].append(epoch())
    per_step = {name: min(t) * 1e3 for name, t in times.items()}
    for name, ms in per_step.items():
        print(f"  {name:18s}: {ms:9.2f} ms/step")
    single, fused = list(per_step.values())[:2]
    print(f"fused / single : {fused / single:6.3f}   (target <= 1.1)")
    if not args.no_xla_loop:
        print(f"XLA loop / single : {list(per_step.values())[2] / single:6.1f}")


if __name__ == "__main__":
    main()
