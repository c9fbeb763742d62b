"""What differs between a training, an evaluation and a prediction pass, as
types: `PassKind`, one frozen value per kind: TRAIN, TEST, PREDICT."""

from __future__ import annotations

from dataclasses import dataclass

from loopax.src.callbacks.callback import (
    PREDICT_BATCH_HOOKS,
    TEST_BATCH_HOOKS,
    TRAIN_BATCH_HOOKS,
)


@dataclass(frozen=True)
class PassKind:
    """One kind of pass over the data.

    name: "train", "test" or "predict" (what `str()` gives);
    caller: the public method that runs it, for messages ("fit()");
    step_method: the model's step method ("train_step");
    state_groups: the names of the state groups its step carries, in order;
    stop_flag: the model attribute a batch hook sets to end the pass;
    batch_begin, batch_end: the CallbackList hooks called around executions;
    batch_hooks: every batch hook a callback may implement for this kind
        (aliases included);
    trains: whether steps advance the global training step (`batch_hooks_freq`
        and BackupAndRestore count those).
    """

    name: str
    caller: str
    step_method: str
    state_groups: tuple[str, ...]
    stop_flag: str
    batch_begin: str
    batch_end: str
    batch_hooks: tuple[str, ...]
    trains: bool = False

    def __str__(self):
        return self.name

    @property
    def metrics_index(self) -> int:
        """The position of the metrics' group in the state (train/test only)."""
        return self.state_groups.index("metrics_variables")


TRAIN = PassKind(
    "train", "fit()", "train_step",
    ("trainable_variables", "non_trainable_variables", "optimizer_variables",
     "metrics_variables"),
    "stop_training", "on_train_batch_begin", "on_train_batch_end", TRAIN_BATCH_HOOKS,
    trains=True)
TEST = PassKind(
    "test", "evaluate()", "test_step",
    ("trainable_variables", "non_trainable_variables", "metrics_variables"),
    "stop_evaluating", "on_test_batch_begin", "on_test_batch_end", TEST_BATCH_HOOKS)
PREDICT = PassKind(
    "predict", "predict()", "predict_step",
    ("trainable_variables", "non_trainable_variables"),
    "stop_predicting", "on_predict_batch_begin", "on_predict_batch_end", PREDICT_BATCH_HOOKS)
