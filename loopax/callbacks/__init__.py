"""Callbacks: hooks into `fit`, `evaluate` and `predict` (Keras names)."""

from loopax.src.callbacks.backup_and_restore import BackupAndRestore
from loopax.src.callbacks.callback import Callback
from loopax.src.callbacks.callback_list import CallbackList
from loopax.src.callbacks.csv_logger import CSVLogger
from loopax.src.callbacks.early_stopping import EarlyStopping
from loopax.src.callbacks.history import History
from loopax.src.callbacks.lambda_callback import LambdaCallback
from loopax.src.callbacks.learning_rate_scheduler import LearningRateScheduler
from loopax.src.callbacks.model_checkpoint import ModelCheckpoint
from loopax.src.callbacks.orbax_checkpoint import OrbaxCheckpoint
from loopax.src.callbacks.progbar_logger import ProgbarLogger
from loopax.src.callbacks.reduce_lr_on_plateau import ReduceLROnPlateau
from loopax.src.callbacks.remote_monitor import RemoteMonitor
from loopax.src.callbacks.swap_ema_weights import SwapEMAWeights
from loopax.src.callbacks.tensorboard import TensorBoard
from loopax.src.callbacks.terminate_on_nan import TerminateOnNaN

__all__ = [
    "BackupAndRestore", "Callback", "CallbackList", "CSVLogger", "EarlyStopping", "History", "LambdaCallback",
    "LearningRateScheduler", "ModelCheckpoint", "OrbaxCheckpoint",
    "ProgbarLogger", "ReduceLROnPlateau", "RemoteMonitor",
    "SwapEMAWeights", "TensorBoard", "TerminateOnNaN",
]
