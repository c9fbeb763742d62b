"""The program a gradient replays, and its compiled, cached forms.

`GradientTape.gradient` prunes the recorded nodes to those the targets need
and numbers their values (`_Program`). `_make_replay` turns that into

    replay(source_values, constant_values) -> target_values

and `jax.jit(jax.vjp(replay))` (or a Jacobian of it) is compiled once per
program structure and kept in a bounded cache.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src.tape.bounded_cache import BoundedCache
from loopax.src.tape.recording import _fill

# --------------------------------------------------------------------------
# Replay and the compiled gradient functions
# --------------------------------------------------------------------------

class _Program:
    """The pruned, slot-numbered program a gradient needs."""

    def __init__(self, steps, n_slots, sources, consts, const_slots, target_slots, key):
        self.steps = steps                # [(node, in_slots, out_slots)]
        self.n_slots = n_slots
        self.sources = sources            # Tensors in slots 0..len-1
        self.consts = consts              # Tensors or arrays, in const_slots
        self.const_slots = const_slots
        self.target_slots = target_slots
        self.key = key
        # Sources a step computes (negative out slots): their slot holds zeros,
        # which the replay adds the computed value to.
        self.computed_sources = frozenset(
            -1 - s for _, _, outs in steps for s in outs if s is not None and s < 0)


def _make_replay(program):
    """replay(source_values, const_values) -> [target values]; keeps no arrays."""
    steps = [(node.fn, node.treedef, node.template, node.positions, ins, outs)
             for node, ins, outs in program.steps]
    n, n_src = program.n_slots, len(program.sources)
    const_slots, target_slots = program.const_slots, program.target_slots

    def replay(sources, consts):
        env = [None] * n
        env[:n_src] = sources
        for s, v in zip(const_slots, consts):
            env[s] = v
        for fn, treedef, template, positions, ins, outs in steps:
            a, k = _fill(treedef, template, positions, [env[s] for s in ins])
            out = fn(*a, **k)
            for s, o in zip(outs, jax.tree_util.tree_leaves(out)):
                if s is None:
                    continue
                if s >= 0:
                    env[s] = o
                else:   # a source computed here: its value plus the slot's zeros
                    env[-1 - s] = env[-1 - s] + o
        return [env[s] for s in target_slots]
    return replay


def _sum_groups(values, groups):
    return [functools.reduce(jnp.add, [values[i] for i in g]) for g in groups]


def _compile_gradient(program, groups):
    replay = _make_replay(program)

    def gradient(sources, consts, cotangents):
        outs, vjp = jax.vjp(lambda s: replay(s, consts), sources)
        cotangents = [jnp.ones_like(o) if c is None else jnp.asarray(c, o.dtype)
                      for o, c in zip(outs, cotangents)]
        (grads,) = vjp(cotangents)
        return _sum_groups(grads, groups)
    return jax.jit(gradient)


def _compile_jacobian(program, groups):
    replay = _make_replay(program)

    def jacobian(sources, consts, unused):
        jac = jax.jacrev(lambda s: replay(s, consts)[0])(sources)
        return _sum_groups(jac, groups)
    return jax.jit(jacobian)


def _compile_batch_jacobian(program, groups):
    replay = _make_replay(program)

    def batch_jacobian(sources, consts, unused):
        y, vjp = jax.vjp(lambda s: replay(s, consts)[0], sources)
        batch, rest = y.shape[0], y.shape[1:]
        size = int(np.prod(rest))
        # One cotangent per target feature, the same for every batch row.
        basis = jnp.eye(size, dtype=y.dtype).reshape((size, 1) + rest)
        cts = jnp.broadcast_to(basis, (size, batch) + rest)
        (grads,) = jax.vmap(vjp)(cts)
        out = []
        for g in _sum_groups(grads, groups):      # (size, batch, *source_rest)
            g = jnp.moveaxis(g, 0, 1)
            out.append(g.reshape((batch,) + rest + g.shape[2:]))
        return out
    return jax.jit(batch_jacobian)


_COMPILERS = {"gradient": _compile_gradient, "jacobian": _compile_jacobian,
              "batch_jacobian": _compile_batch_jacobian}
_CACHE = BoundedCache()   # (mode, program structure, source groups) -> jitted fn


def _compiled(mode, program, groups):
    """The jitted function for this program structure (cached)."""
    key = (mode, program.key, groups)
    fn = _CACHE.get(key)
    if fn is None:
        fn = _CACHE.put(key, _COMPILERS[mode](program, groups))
    return fn

