"""`TerminateOnNaN`: stop training as soon as the loss is NaN or infinite."""

import numpy as np

from loopax.src.api_export import export
from loopax.src.callbacks import progbar
from loopax.src.callbacks.callback import Callback


@export("loopax.callbacks.TerminateOnNaN")
class TerminateOnNaN(Callback):
    """Sets `model.stop_training` and prints `Batch N: Invalid loss, terminating training`."""

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is not None and not np.all(np.isfinite(loss)):
            progbar._write(f"Batch {batch}: Invalid loss, terminating training\n")
            self.model.stop_training = True
