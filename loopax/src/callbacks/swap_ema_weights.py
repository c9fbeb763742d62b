"""`SwapEMAWeights`: evaluate (and optionally checkpoint) with the optimizer's
EMA weights (Keras's callback).

Before evaluation and prediction the model's trainable weights and the
optimizer's moving averages (`use_ema=True`) trade values; afterwards they
trade back, so training continues from its own weights. With
`swap_on_epoch=True` the averages are in the model from `on_epoch_end` (so a
later `ModelCheckpoint` saves them) until the next epoch begins; after the
last epoch they stay (both sides then hold the averages).
"""

from loopax.src.api_export import export
from loopax.src.callbacks.callback import Callback


@export("loopax.callbacks.SwapEMAWeights")
class SwapEMAWeights(Callback):
    """Swaps the model's weights with the optimizer's EMA weights around evaluation.

    Args:
        swap_on_epoch: also swap at the end of each epoch (and back at the
            next epoch's start), for callbacks such as `ModelCheckpoint`.
    """

    def __init__(self, swap_on_epoch=False):
        super().__init__()
        self.swap_on_epoch = swap_on_epoch
        self._ema_in_model = False

    def _ema_optimizer(self):
        optimizer = self.model.optimizer
        optimizer = getattr(optimizer, "inner_optimizer", optimizer)
        if not getattr(optimizer, "use_ema", False):
            raise ValueError(
                "SwapEMAWeights needs an optimizer created with `use_ema=True`; "
                f"the model's optimizer is {optimizer!r}.")
        return optimizer

    def _swap(self):
        optimizer = self._ema_optimizer()
        if not optimizer.built:
            return
        for variable, average in zip(optimizer._trainable_variables, optimizer._averages):
            current = variable.value
            variable.assign(average.value)
            average.assign(current)
        self._ema_in_model = not self._ema_in_model

    def _finalize(self):
        optimizer = self._ema_optimizer()
        for variable, average in zip(optimizer._trainable_variables, optimizer._averages):
            average.assign(variable.value)

    def on_epoch_begin(self, epoch, logs=None):
        if self.swap_on_epoch and self._ema_in_model:
            self._swap()

    def on_epoch_end(self, epoch, logs=None):
        if self.swap_on_epoch and not self._ema_in_model:
            self._swap()
            if epoch == (self.params or {}).get("epochs", 0) - 1:
                self._finalize()

    def on_test_begin(self, logs=None):
        if not self._ema_in_model:
            self._swap()

    def on_test_end(self, logs=None):
        if self._ema_in_model:
            self._swap()

    on_predict_begin = on_test_begin
    on_predict_end = on_test_end
