"""`GradientTape`: TensorFlow's imperative autodiff, on JAX.

While a tape records, every loopax op whose inputs it follows (a watched
Tensor, a watched or trainable Variable, or a Tensor an earlier recorded op
returned) runs eagerly and appends one node to the tape:

    node = (fn, static structure of the arguments, input Tensors, output Tensors)

A Variable input is *read*: its current value becomes a fresh Tensor that the
tape remembers as a read of that Variable. The outermost Layer call is one
node too (`record_layer_call`), so layer internals may be plain JAX.

`gradient(target, sources)` keeps the nodes the target depends on and turns
them into a replay function

    replay(source_values, constant_values) -> target_values

that re-runs the recorded fns. `jax.jit(jax.vjp(replay))` is compiled once
per recorded *program structure* (fns, static arguments, wiring) and cached,
so a training loop compiles its backward pass once. The gradient for a
Variable is the sum over its reads. If an outer tape records while an inner
tape computes a gradient, the compiled gradient function is itself recorded
on the outer tape as one op, which gives higher-order derivatives.

Speed: an op structure seen before runs as one jitted call, and a layer
called again with the same argument structure runs its compiled forward
(`_LayerPlan`), so the eager step costs a few dispatches, not one per
primitive.

Static (non-array) arguments are part of the structure: plain values by
value, other objects by identity. A Python number that changes every step
compiles a new program each step (pass an array instead), and an object
mutated after its first use (a loss's settings, a layer's Python attributes)
keeps its old behaviour in compiled code, as under `jax.jit`.

A `jax.numpy` function applied to a Tensor or Variable that a tape follows
raises a TypeError that names the fix (`loopax.ops.sin`, not `jnp.sin`):
JAX cannot report that computation to the tape, and an error beats a
silently missing gradient.

The package, in dependency order:

- `bounded_cache`: the size-bounded, least-recently-used cache every compiled
  piece of the tape is kept in.
- `recording`: what a recording tape does per op: nodes, static keys,
  `record` (the op recorder `loopax.src.tensor.op` calls).
- `layer_calls`: the outermost layer call as one node (`record_layer_call`).
- `program`: the pruned program `gradient` replays, compiled per structure.
- `gradient_tape`: `GradientTape` itself.
"""

from loopax.src.tape.gradient_tape import GradientTape, UnconnectedGradients
from loopax.src.tape.layer_calls import record_layer_call
from loopax.src.tape.recording import record, static_key

__all__ = ["GradientTape", "UnconnectedGradients", "record", "record_layer_call", "static_key"]
