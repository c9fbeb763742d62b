"""`Bidirectional`: an RNN layer run forwards and a copy backwards, outputs merged."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from loopax.src import serialization
from loopax.src.api_export import export
from loopax.src.layers.layer import Layer
from loopax.src.naming import name_scope

_MERGE_MODES = ("concat", "sum", "mul", "ave", None)


@export("loopax.layers.Bidirectional")
class Bidirectional(Layer):
    """Runs a copy of an RNN layer forwards and another backwards and
    merges their outputs.

    Args:
        layer: the RNN layer to copy (its configuration is used, not its weights).
        merge_mode: "concat" (default), "sum", "mul", "ave", or None (a list
            `[forward, backward]`).
        backward_layer: an RNN layer with `go_backwards=True` to use as is.

    The backward outputs are flipped back to input order before merging.
    With `return_state`, returns `[output, *forward_states, *backward_states]`.
    """

    row_wise = True

    def __init__(self, layer, merge_mode="concat", backward_layer=None, **kwargs):
        if not isinstance(layer, Layer):
            raise ValueError(f"Bidirectional: `layer` must be a loopax Layer (an RNN); got "
                             f"{layer!r:.80}.")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Bidirectional: `merge_mode` must be one of {list(_MERGE_MODES)}; "
                             f"got {merge_mode!r}.")
        super().__init__(**kwargs)

        def copy(go_backwards, prefix):
            config = serialization.serialize(layer)
            config["config"]["name"] = prefix + layer.name.removeprefix(prefix)
            if go_backwards:
                config["config"]["go_backwards"] = not layer.go_backwards
            return serialization.deserialize(config)
        self.forward_layer = copy(False, "forward_")
        self.backward_layer = copy(True, "backward_") if backward_layer is None \
            else backward_layer
        if self.forward_layer.go_backwards == self.backward_layer.go_backwards:
            raise ValueError("Bidirectional: the forward and backward layers must have "
                             "different `go_backwards`.")
        for attr in ("stateful", "return_sequences", "return_state"):
            if getattr(self.forward_layer, attr) != getattr(self.backward_layer, attr):
                raise ValueError(f"Bidirectional: the forward and backward layers must have "
                                 f"the same `{attr}`.")
        for sub in (self.forward_layer, self.backward_layer):
            if hasattr(sub, "zero_output_for_mask"):
                sub.zero_output_for_mask = sub.return_sequences
        self.merge_mode = merge_mode
        self.stateful = layer.stateful
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True

    def build(self, sequences_shape, initial_state_shape=None):
        for sub in (self.forward_layer, self.backward_layer):
            if not sub.built:
                with name_scope(self.name, caller=self):
                    sub.build(sequences_shape)
                sub.built = True
        self.built = True

    def call(self, sequences, initial_state=None, mask=None, training=None):
        kwargs = {"training": training, "mask": mask}
        forward_state = backward_state = None
        if initial_state is not None:
            half = len(initial_state) // 2
            forward_state, backward_state = initial_state[:half], initial_state[half:]
        y = self.forward_layer(sequences, initial_state=forward_state, **kwargs)
        y_rev = self.backward_layer(sequences, initial_state=backward_state, **kwargs)
        states = ()
        if self.return_state:
            states = tuple(y[1:]) + tuple(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = jnp.flip(y_rev, axis=1)
        if self.merge_mode == "concat":
            output = jnp.concatenate([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            output = y + y_rev
        elif self.merge_mode == "ave":
            output = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            output = y * y_rev
        else:
            output = (y, y_rev)
        if self.return_state:
            return (*output, *states) if self.merge_mode is None else (output, *states)
        return output

    def compute_mask(self, inputs, mask=None):
        if mask is not None:
            mask = jax.tree_util.tree_leaves(mask)[0]
        output_mask = mask if self.return_sequences else None
        output_masks = [output_mask] * (2 if self.merge_mode is None else 1)
        if self.return_state:
            n_states = len(jax.tree_util.tree_leaves(self.forward_layer.state_size))
            return output_masks + [None] * (2 * n_states)
        return output_masks if self.merge_mode is None else output_mask

    def reset_states(self):
        self.forward_layer.reset_states()
        self.backward_layer.reset_states()

    reset_state = reset_states

    def get_config(self):
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": serialization.serialize(self.forward_layer),
                "backward_layer": serialization.serialize(self.backward_layer)}

    @classmethod
    def from_config(cls, config, custom_objects=None):
        config = dict(config)
        layer = serialization.deserialize(config.pop("layer"), custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            backward = serialization.deserialize(backward, custom_objects)
        return cls(layer, backward_layer=backward, **config)
