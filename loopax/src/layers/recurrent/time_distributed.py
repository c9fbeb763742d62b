"""`TimeDistributed`: a layer applied to every timestep (axis 1) of its inputs."""

from __future__ import annotations

import jax.numpy as jnp

from loopax.src.api_export import export
from loopax.src.layers.core.wrapper import Wrapper
from loopax.src.tensor import unwrap


@export("loopax.layers.TimeDistributed")
class TimeDistributed(Wrapper):
    """Applies `layer` to every timestep: `(batch, timesteps, ...)` ->
    `(batch, timesteps, ...)`, with the same weights at each step.

    Timesteps are folded into the batch (one call of `layer` on
    `(batch * timesteps, ...)`); a layer with non-trainable state (e.g.
    BatchNormalization, whose statistics would then pool the timesteps) is
    called once per timestep instead, as Keras does.

    Args:
        layer: The layer applied to each `(batch, ...)` timestep slice.
        **kwargs: Base layer arguments (`name`, `dtype`, `trainable`, ...).

    Raises:
        ValueError: `layer` is not a loopax Layer, or (when called) the input has rank
            below 3.
    """

    def __init__(self, layer, **kwargs):
        super().__init__(layer, **kwargs)
        self.supports_masking = True

    def _check_shape(self, shape):
        if len(shape) < 3:
            raise ValueError(
                f"TimeDistributed {self.name!r} expects inputs of shape (batch, timesteps, "
                f"...) (at least rank 3); got shape {tuple(shape)}.")

    def build(self, input_shape):
        self._check_shape(input_shape)
        if not self.layer.built:
            self.layer.build((input_shape[0],) + tuple(input_shape[2:]))
            self.layer.built = True
        self.built = True

    def call(self, inputs, training=None, mask=None):
        x = unwrap(inputs)
        self._check_shape(x.shape)
        batch_size, timesteps = x.shape[0], x.shape[1]
        kwargs = {"training": training} if self.layer._call_takes_training else {}
        if self.layer.non_trainable_weights:
            outputs = [self.layer(x[:, t], **kwargs, **self._step_mask(mask, t))
                       for t in range(timesteps)]
            return jnp.stack(outputs, axis=1)
        y = self.layer(x.reshape((batch_size * timesteps,) + x.shape[2:]), **kwargs,
                       **self._step_mask(mask, None, batch_size * timesteps))
        return y.reshape((batch_size, timesteps) + y.shape[1:])

    def _step_mask(self, mask, t, folded=None):
        if mask is None or not self.layer._call_takes_mask:
            return {}
        mask = unwrap(mask)
        return {"mask": mask[:, t] if t is not None else mask.reshape((folded,) + mask.shape[2:])}

    def compute_mask(self, inputs, mask=None):
        return mask
