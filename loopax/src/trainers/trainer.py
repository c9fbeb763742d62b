"""`Trainer`: `compile`, `fit`, `evaluate`, `predict` and the `*_on_batch`
methods of `Model` (a mixin; `self` is the model).

Training state is the values of four groups of Variables, `(trainable,
non_trainable, optimizer, metrics)` (evaluation drops the optimizer's,
prediction the metrics' too), and a step is a function of values, as Keras's
JAX backend writes them:

    train_step(self, state, data) -> (logs, state)
    test_step(self, state, data)  -> (logs, state)
    predict_step(self, state, data) -> (outputs, non_trainable)

A step overridden with one `data` argument is TF-style (it reads and assigns
Variables); `step_functions.py` makes it a step of the same form. During a
pass the state lives in the compiled calls' arrays (`LiveState`) and is
written back to the Variables around whatever may read them: epoch ends,
validation, interruptions, `callback.model`. The flow: trainers/README.md.
"""

from __future__ import annotations

import functools
import inspect
import random
import warnings
from typing import TYPE_CHECKING, Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from loopax.src import config as loopax_config
from loopax.src import losses as losses_module
from loopax.src import metrics as metrics_module
from loopax.src import optimizers, serialization
from loopax.src import random as loopax_random
from loopax.src.callbacks.callback import TrainingRun
from loopax.src.callbacks.callback_list import CallbackList, logs_to_host
from loopax.src.distribution import placement
from loopax.src.metrics import Mean, Metric
from loopax.src.module import owned
from loopax.src.state import StateScope, Variable, pure
from loopax.src.trainers import data_checks, epoch_runner, in_use
from loopax.src.trainers.compile_utils import CompileLoss, CompileMetrics, check_scalar, results_of
from loopax.src.trainers.compiled_steps import CompiledSteps
from loopax.src.trainers.data_adapters import (
    ArrayDataAdapter,
    batch_source_kind,
    data_adapter_utils,
    get_data_adapter,
    pack_x_y_sample_weight,
)
from loopax.src.trainers.data_adapters.array_data_adapter import check_batch_size
from loopax.src.trainers.data_adapters.data_adapter_utils import (
    batch_size_of,
    shape_signature,
    unpack_x_y_sample_weight,
)
from loopax.src.trainers.execution_planner import ExecutionPlanner
from loopax.src.trainers.live_state import LiveState
from loopax.src.trainers.padded_batches import rows_of
from loopax.src.trainers.pass_kind import PREDICT, TEST, TRAIN
from loopax.src.trainers.step_functions import ModelSteps

if TYPE_CHECKING:
    from loopax.src.callbacks.callback import Callback
    from loopax.src.callbacks.history import History


class Trainer:
    """The training loop of `Model`. See the module docstring for the design."""

    # Not owned by the model (the ownership walk skips them): the optimizer and
    # the compile() arguments hold Variables and Metrics of their own, the live
    # training state and the History callback refer back to the model's.
    _untracked_attributes = frozenset({"optimizer", "_compile_config", "_trainer_state",
                                       "history"})

    if TYPE_CHECKING:   # what the Layer that `Model` mixes in gives
        dtype_policy: Any
        trainable_weights: list
        history: Any

        trainable_variables: list[Variable]
        non_trainable_variables: list[Variable]
        losses: list

        def stateless_call(self, trainable_variables: Sequence,
                           non_trainable_variables: Sequence, *args: Any,
                           return_losses: bool = False, **kwargs: Any) -> tuple: ...

    compiled = False
    optimizer: Any = None
    stop_training = False
    stop_evaluating = False
    stop_predicting = False
    _compile_loss = None
    _compile_metrics = None
    _loss_tracker: Any = None
    _trainer_state = None

    def __init__(self):
        self.compiled = False
        self.optimizer = None
        self.stop_training = False
        self._compile_loss = None
        self._compile_metrics = None
        self._loss_tracker = None
        self._trainer_state = None

    @property
    def _compiled_steps(self) -> CompiledSteps:
        """The engine the passes run on, made by `compile()` (or an uncompiled model's
        `predict`); kept out of the Module walk (it holds optimizer and metric Variables)."""
        engine = self.__dict__.get("_loopax_engine")
        if engine is None:
            engine = self._new_engine()
        return engine

    def _new_engine(self):
        engine = self.__dict__["_loopax_engine"] = CompiledSteps(
            ModelSteps(self, default_steps=Trainer), self.steps_per_execution,
            self.run_eagerly)
        return engine

    # ---- compile -------------------------------------------------------------------------
    def compile(self, optimizer: str | optimizers.Optimizer | Any = "rmsprop",
                loss: str | Callable | Sequence | dict | None = None,
                loss_weights: float | Sequence[float] | dict | None = None,
                metrics: Sequence | dict | None = None,
                weighted_metrics: Sequence | dict | None = None, run_eagerly: bool = False,
                steps_per_execution: int | str = "auto", jit_compile: bool | str = "auto",
                auto_scale_loss: bool = True) -> None:
        """Configures training.

        Args:
            optimizer: name, Optimizer or optax transformation.
            loss: name, function or Loss; a list (output order) or dict
                (output names) for several outputs.
            loss_weights: weights of the per-output losses (number, list, dict).
            metrics: metrics (no sample weights): a list, a list of lists or a
                dict keyed by output names.
            weighted_metrics: metrics that receive `sample_weight`/`class_weight`.
            run_eagerly: run steps as plain Python, without compiling (debugging).
            steps_per_execution: steps fused into one compiled call: a positive
                int, or "auto" (from the measured step time).
            jit_compile: "auto"/True compiles; False runs eagerly (JAX has no
                other way to run without XLA).
            auto_scale_loss: under the "mixed_float16" dtype policy, wrap the
                optimizer in a `LossScaleOptimizer` (dynamic loss scaling).

        Raises:
            ValueError: `loss_weights` is given without `loss`, or an argument has an
                unknown name or an invalid value.
        """
        self.optimizer = optimizers.get(optimizer)
        if (auto_scale_loss and getattr(self, "dtype_policy", None) is not None
                and self.dtype_policy.name == "mixed_float16"
                and isinstance(self.optimizer, optimizers.Optimizer)
                and not isinstance(self.optimizer, optimizers.LossScaleOptimizer)):
            self.optimizer = optimizers.LossScaleOptimizer(self.optimizer)
        output_names = self._output_names()
        self._compile_loss = (CompileLoss(loss, loss_weights, output_names, self._model_label())
                              if loss is not None else None)
        if loss is None and loss_weights is not None:
            raise ValueError("`loss_weights` was given without `loss`.")
        self._compile_metrics = (CompileMetrics(metrics, weighted_metrics, output_names)
                                 if metrics or weighted_metrics else None)
        self._loss_tracker = Mean(name="loss")
        self._run_eagerly = bool(run_eagerly)
        self._jit_compile = True if jit_compile == "auto" else bool(jit_compile)
        self.steps_per_execution = steps_per_execution
        self._compile_config = dict(optimizer=optimizer, loss=loss, loss_weights=loss_weights,
                                    metrics=metrics, weighted_metrics=weighted_metrics,
                                    run_eagerly=run_eagerly,
                                    steps_per_execution=steps_per_execution,
                                    jit_compile=jit_compile)
        self._new_engine()
        self.compiled = True

    def get_compile_config(self) -> dict | None:
        """The `compile()` arguments as JSON values (None if not compiled), for
        `model.save`; Losses, Metrics and the optimizer become their configs."""
        if not self.compiled:
            return None
        config = dict(self._compile_config)
        config["optimizer"] = optimizers.serialize(self.optimizer)
        config["loss"] = _map_nested(_serialize_loss, config["loss"])
        for key in ("metrics", "weighted_metrics"):
            config[key] = _map_nested(_serialize_metric, config[key])
        return config

    def compile_from_config(self, config: dict) -> None:
        """Compiles the model with the arguments `get_compile_config()` described."""
        config = dict(config)
        config["optimizer"] = optimizers.deserialize(config["optimizer"])
        config["loss"] = _map_nested(losses_module.deserialize,
                                     _map_nested(_custom_name, config["loss"], names=True))
        for key in ("metrics", "weighted_metrics"):
            config[key] = _map_nested(metrics_module.deserialize,
                                      _map_nested(_custom_name, config[key], names=True))
        self.compile(**config)

    @property
    def run_eagerly(self) -> bool:
        return getattr(self, "_run_eagerly", False) or not getattr(self, "_jit_compile", True)

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        self._run_eagerly = bool(value)
        self._compiled_steps.run_eagerly = self.run_eagerly

    @property
    def steps_per_execution(self) -> int | str:
        """Steps fused into one compiled call: an int, or "auto". Settable."""
        return getattr(self, "_steps_per_execution", "auto")

    @steps_per_execution.setter
    def steps_per_execution(self, value: int | str) -> None:
        ExecutionPlanner(value)  # validates
        self._steps_per_execution = value
        self._compiled_steps.steps_per_execution = value   # new planners

    @property
    def jit_compile(self) -> bool | str:
        return getattr(self, "_jit_compile", True)

    def _output_names(self):
        try:
            names = getattr(self, "output_names", None)
        except Exception:  # a model without outputs yet
            names = None
        return list(names) if names else None

    def _model_label(self):
        return f"model {getattr(self, 'name', type(self).__name__)!r}"

    def _assert_compiled(self, what):
        if not self.compiled:
            raise ValueError(
                f"You must call `compile()` before `{what}()`: e.g. "
                "model.compile(optimizer='adam', loss='mse').")

    # ---- metrics -------------------------------------------------------------------------
    @property
    def metrics(self) -> list:
        """The loss tracker ("loss"), the compiled metrics, the per-output loss
        trackers, then Metric objects held as attributes (Keras's order)."""
        out = []
        if self.compiled:
            out.append(self._loss_tracker)
            if self._compile_metrics is not None:
                out.append(self._compile_metrics)
            if self._compile_loss is not None:
                out.extend(self._compile_loss.metrics)
        out.extend(self._tracked_metrics())
        return out

    def _tracked_metrics(self):
        """Metrics held as attributes (not the compiled ones), in attribute order."""
        seen = {id(self), id(self._loss_tracker), id(self._compile_metrics)}
        if self._compile_loss is not None:
            seen.update(id(m) for m in self._compile_loss.metrics)
        return owned(self, seen, wanted=lambda value: isinstance(value, Metric))[1]

    @property
    def metrics_names(self) -> list[str]:
        return [m.name for m in self.metrics]

    @property
    def metrics_variables(self) -> list[Variable]:
        """The Variables of `self.metrics`, in order (the state's 4th group)."""
        out = []
        for metric in self.metrics:
            out.extend(metric.variables)
        return out

    @property
    def compiled_metrics(self) -> Any:
        """The compiled metrics (tf.keras's name), for TF-style train_steps:
        `self.compiled_metrics.update_state(y, y_pred, sample_weight)`."""
        if self._compile_metrics is None:
            self._compile_metrics = CompileMetrics(None, None, self._output_names())
        return self._compile_metrics

    def compiled_loss(self, y: Any, y_pred: Any, sample_weight: Any = None,
                      regularization_losses: Sequence | None = None) -> Any:
        """tf.keras's compiled loss: the compiled losses plus `regularization_losses`;
        updates the "loss" tracker and returns the total (for TF-style train_steps)."""
        self._assert_compiled("compiled_loss")
        total = self._compile_loss(y, y_pred, sample_weight) if self._compile_loss else 0.0
        for extra in regularization_losses or ():
            total = total + extra
        check_scalar(total, "loss")
        self._loss_tracker.update_state(total, sample_weight=batch_size_of(y_pred))
        return total

    def reset_metrics(self) -> None:
        for metric in self.metrics:
            metric.reset_state()

    def get_metrics_result(self) -> dict:
        """`{name: result}` of every metric (dict results merged in)."""
        return results_of(self.metrics)

    def _metrics_result_from(self, metric_values):
        return pure(self.get_metrics_result, self.metrics_variables)(metric_values)[0]

    # ======================================================================
    # losses
    # ======================================================================
    def compute_loss(self, x: Any = None, y: Any = None, y_pred: Any = None,
                     sample_weight: Any = None, training: bool = True) -> Any:
        """The total loss: the compiled losses of `(y, y_pred)` plus the model's
        own losses (`add_loss`, weight regularization) of the last call.
        Works inside a stateless step: the state scope around it holds the
        losses of the `stateless_call` before it (`Layer.losses`). Override it
        to customize the loss of `fit`."""
        total = None
        if self._compile_loss is not None:
            if y is None:
                raise ValueError(
                    "The model was compiled with a loss but the data has no targets y. "
                    "Pass (x, y) data, or compile without `loss` and compute it in "
                    "train_step / compute_loss.")
            total = self._compile_loss(y, y_pred, sample_weight)
        for extra in self.losses:
            check_scalar(extra, "model loss (add_loss / regularization)")
            total = extra if total is None else total + extra
        if total is None:
            return jnp.zeros((), jnp.float32)
        check_scalar(total, "loss")
        return total

    def _compute_loss(self, x, y, y_pred, sample_weight, training):
        if "training" in inspect.signature(self.compute_loss).parameters:
            return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                     training=training)
        return self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight)

    def stateless_compute_loss(self, trainable_variables: Sequence,
                               non_trainable_variables: Sequence, metrics_variables: Sequence,
                               x: Any = None, y: Any = None, y_pred: Any = None,
                               sample_weight: Any = None, training: bool = True) -> tuple:
        """`compute_loss` on values (Keras's method): it runs with the model's
        trainable, non-trainable and metric Variables reading the given values, so
        a weight used only inside an overridden `compute_loss` (a distiller's
        teacher) is differentiated and trained, as in Keras.

        Returns:
            `(loss, (trainable, non_trainable, metrics))`: the values after the call
            (trainable ones as given; non-trainable and metric ones may be updated).
        """
        groups = [self.trainable_variables, self.non_trainable_variables,
                  self.metrics_variables]
        values = [list(trainable_variables), list(non_trainable_variables),
                  list(metrics_variables)]
        loss, new_values = pure(self._compute_loss, [v for g in groups for v in g])(
            [v for g in values for v in g], x, y, y_pred, sample_weight, training)
        n_trainable, n_non_trainable = len(groups[0]), len(groups[1])
        return loss, (values[0], new_values[n_trainable:n_trainable + n_non_trainable],
                      new_values[n_trainable + n_non_trainable:])

    def compute_metrics(self, x: Any, y: Any, y_pred: Any, sample_weight: Any = None) -> dict:
        """Updates the compiled metrics; returns `get_metrics_result()`."""
        if self._compile_metrics is not None:
            self._compile_metrics.update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    # ======================================================================
    # the default steps (stateless: `(self, state, data)`)
    # ======================================================================
    def train_step(self, state: tuple, data: Any) -> tuple:
        """One training step on values: `(logs, state)` for `state =
        (trainable, non_trainable, optimizer, metrics)` variable values."""
        trainable, non_trainable, optimizer_values, metric_values = state
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        metric_variables = self.metrics_variables

        def loss_and_updates(trainable):
            with StateScope():   # holds the call's add_loss values for compute_loss
                y_pred, new_non_trainable = self.stateless_call(
                    trainable, non_trainable, x, training=True)
                loss, (_, new_non_trainable, new_metrics) = self.stateless_compute_loss(
                    trainable, new_non_trainable, metric_values, x, y, y_pred, sample_weight,
                    training=True)
            # The gradient is of the scaled loss (loss scaling); logs get the loss.
            scaled_loss, _ = pure(self.optimizer.scale_loss, self.optimizer.variables)(
                optimizer_values, loss)
            return scaled_loss, (loss, y_pred, new_non_trainable, new_metrics)

        (_, (loss, y_pred, non_trainable, metric_values)), grads = jax.value_and_grad(
            loss_and_updates, has_aux=True)(trainable)
        if len(trainable):   # no trainable weights: metrics only, as in Keras
            trainable, optimizer_values = self.optimizer.stateless_apply(
                optimizer_values, grads, trainable)

        def update_metrics():
            self._loss_tracker.update_state(
                loss, sample_weight=rows_of(sample_weight, batch_size_of(x)))
            return self.compute_metrics(x, y, y_pred, sample_weight)

        logs, metric_values = pure(update_metrics, metric_variables)(metric_values)
        return logs, (trainable, non_trainable, optimizer_values, metric_values)

    def test_step(self, state: tuple, data: Any) -> tuple:
        """One evaluation step: `(logs, state)` for `state = (trainable,
        non_trainable, metrics)` variable values."""
        trainable, non_trainable, metric_values = state
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        metric_variables = self.metrics_variables

        with StateScope():   # holds the call's add_loss values for compute_loss
            y_pred, non_trainable = self.stateless_call(trainable, non_trainable, x,
                                                        training=False)
            loss, (_, non_trainable, metric_values) = self.stateless_compute_loss(
                trainable, non_trainable, metric_values, x, y, y_pred, sample_weight,
                training=False)

        def update_metrics():
            self._loss_tracker.update_state(
                loss, sample_weight=rows_of(sample_weight, batch_size_of(x)))
            return self.compute_metrics(x, y, y_pred, sample_weight)

        logs, metric_values = pure(update_metrics, metric_variables)(metric_values)
        return logs, (trainable, non_trainable, metric_values)

    def predict_step(self, state: tuple, data: Any) -> tuple:
        """`(outputs, non_trainable)` for one batch, as Keras's JAX trainer returns:
        `state = (trainable, non_trainable)`; the non-trainable values come back
        updated (seed generators advance). An override may return outputs only."""
        trainable, non_trainable = state
        x, _, _ = unpack_x_y_sample_weight(data)
        return self.stateless_call(trainable, non_trainable, x, training=False)

    # ======================================================================
    # building
    # ======================================================================
    def _build_for_batch(self, batch, training=True):
        """Builds what the first batch determines: the model's weights, the
        compiled loss and metrics (checking y against the outputs) and the
        optimizer's slots."""
        x, y, _ = unpack_x_y_sample_weight(batch)
        if not self.built or not self.variables and _has_sublayers(self):
            self(epoch_runner.to_jax(x), training=False)
        placement.prepare_model(self, batch, training)
        engine = self._compiled_steps
        engine.example_batch = jax.tree_util.tree_map(
            lambda a: jax.ShapeDtypeStruct(np.shape(a), a.dtype), batch)
        if not self.compiled:
            return
        checked = engine.checked_batches
        signature = shape_signature(batch)
        if y is not None and signature not in checked:
            y_pred = engine.output_spec = self._output_spec(x)
            if self._compile_loss is not None:
                if self._compile_loss.built:
                    self._compile_loss.check_targets(y, y_pred)
                else:
                    self._compile_loss.build(y, y_pred)
            if self._compile_metrics is not None and not self._compile_metrics.built:
                losses = getattr(self._compile_loss, "losses_by_output", None)
                self._compile_metrics.build(y, y_pred, losses)
            checked.add(signature)
        if training and not getattr(self.optimizer, "built", False):
            self.optimizer.build(self.trainable_variables)

    def _output_spec(self, x):
        def forward(trainable, non_trainable, x):
            with loopax_random.shape_inference_scope():
                return self.stateless_call(trainable, non_trainable, x, training=False)[0]
        spec = jax.eval_shape(
            forward,
            [v.value for v in self.trainable_variables],
            [v.value for v in self.non_trainable_variables],
            epoch_runner.to_jax(x),
        )
        return spec

    # ---- fit -----------------------------------------------------------------------------
    @in_use.exclusive("fit")
    def fit(self, x: Any = None, y: Any = None, batch_size: int | None = None, epochs: int = 1,
            verbose: int | str = "auto", callbacks: Sequence[Callback] | None = None,
            validation_split: float = 0.0, validation_data: Any = None, shuffle: bool = True,
            class_weight: dict[int, float] | None = None, sample_weight: Any = None,
            initial_epoch: int = 0, steps_per_epoch: int | None = None,
            validation_steps: int | None = None, validation_batch_size: int | None = None,
            validation_freq: int | Sequence[int] = 1, check_data: str = "warn") -> History:
        """Trains the model for `epochs` epochs.

        Keras's arguments, plus `check_data`: in-memory arrays are checked once before
        training; sparse labels outside `[0, classes)` or not integral raise, NaN/Inf
        values warn (`"warn"`), raise (`"raise"`), or nothing is checked (`"off"`).

        Args:
            x: The inputs: a NumPy/JAX array, a list or dict of arrays (several inputs),
                or a source of batches (a generator, `PyDataset`, `tf.data.Dataset`, torch
                `DataLoader`, grain dataset) yielding `(x, y[, sample_weight])`.
            y: The targets, in the structure of the outputs (None when `x` yields batches,
                or for a model that adds its own loss).
            batch_size: Rows per batch for array data (default 32).
            epochs: The number of the last epoch: epochs `initial_epoch` to `epochs - 1`
                run.
            verbose: 0 silent, 1 progress bar, 2 one line per epoch; `"auto"` is 1.
            callbacks: A list of `Callback`s.
            validation_split: A fraction in (0, 1) of the array data (the last rows,
                before shuffling) held out for validation.
            validation_data: `(x_val, y_val)`, `(x_val, y_val, val_sample_weight)` or a
                source of batches, evaluated after each epoch.
            shuffle: Shuffle array rows each epoch.
            class_weight: `{class index: weight}` multiplying each example's loss.
            sample_weight: Per-example loss weights, shape `(batch,)` (or per time step).
            initial_epoch: The epoch to start from (to resume a run).
            steps_per_epoch: Batches per epoch (default: all the data). Below the
                batches of array data or a `PyDataset`, the next epoch goes on where
                this one stopped (as Keras), starting the data again once it is read.
            validation_steps: Batches per validation pass (default: all of them).
            validation_batch_size: Batch size of array validation data (default
                `batch_size`).
            validation_freq: Validate every n epochs (an int), or after the listed epochs
                (1-based).
            check_data: `"warn"`, `"raise"` or `"off"`, as above.

        Returns:
            The `History` callback; `history.history` maps each log name (`"loss"`,
            metrics, `"val_..."`) to one value per epoch.

        Raises:
            ValueError: the model is not compiled, an argument is invalid (epochs, steps,
                `validation_split` with a batch source, ...), or the data fails its checks.
        """
        self._assert_compiled("fit")
        data_checks.check_fit_arguments(epochs, initial_epoch, steps_per_epoch,
                                        validation_steps, check_data)
        if batch_size is not None:
            check_batch_size(batch_size)
        if validation_split and validation_data is None:
            if batch_source_kind(type(x)) is not None:
                raise ValueError(
                    "`validation_split` is only supported for array data (NumPy, JAX, "
                    f"pandas), not a {type(x).__name__}. Pass `validation_data=` instead.")
            arrays = data_adapter_utils.to_arrays(
                data_adapter_utils.pack_x_y_sample_weight(x, y, sample_weight))
            data_adapter_utils.num_samples(*unpack_x_y_sample_weight(arrays))
            train, validation_data = data_adapter_utils.train_validation_split(
                arrays, validation_split)
            x, y, sample_weight = unpack_x_y_sample_weight(train)
        adapter = get_data_adapter(x, y, sample_weight, batch_size, steps_per_epoch, shuffle,
                                   class_weight, what="fit")
        epochs = loopax_config.capped_epochs(epochs)   # loopax.config's debugging caps
        steps_per_epoch = loopax_config.capped_steps(steps_per_epoch, adapter.num_batches)
        val_adapter = None
        if validation_data is not None:
            val_adapter = self._validation_adapter(validation_data,
                                                   validation_batch_size or batch_size,
                                                   validation_steps)
            validation_steps = loopax_config.capped_steps(validation_steps, val_adapter.num_batches)
        self._build_for_batch(adapter.peek())
        if val_adapter is not None:
            self._build_for_batch(val_adapter.peek(), training=False)
        data_checks.check_model_has_a_loss(self, Trainer, adapter.peek())
        data_checks.check_steps_fit_arrays(adapter, steps_per_epoch, "fit")
        data_checks.check_array_data(self, adapter, check_data, "fit()")
        if val_adapter is not None:
            data_checks.check_array_data(self, val_adapter, check_data, "fit() validation data")
        steps = steps_per_epoch or adapter.num_batches
        verbose = 1 if verbose == "auto" else verbose
        callback_list = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
                                      model=self, verbose=verbose, epochs=epochs, steps=steps)
        engine = self._compiled_steps
        bounds = epoch_runner.step_bounds(engine, callback_list, TRAIN, say=verbose == 2)
        seed = random.randint(0, 2 ** 31 - 1)   # loopax.utils.set_random_seed fixes it
        self.stop_training = False
        self.reset_metrics()
        live = LiveState(engine.state_groups(TRAIN))
        self._trainer_state = live
        run = TrainingRun(live.groups, seed, initial_epoch)
        callback_list.set_run(run)
        callback_list.on_train_begin()
        # Asked for by BackupAndRestore.on_train_begin when a backup exists.
        resume = run.resume_point
        if resume is not None:
            initial_epoch, seed = resume.begin(adapter, run)
            run.data_seed = seed
        training_logs = None
        position = epoch_runner.DataPosition(adapter.batches_per_pass, steps_per_epoch)
        # fit()'s first epoch compiles its one-step programs ahead, in order: the training
        # step's (the first step waits for it), then validation's (while the epoch trains).
        compile_next = functools.partial(
            epoch_runner.compile_ahead, engine, TEST, val_adapter, None, validation_steps,
            full_batches=True) if val_adapter is not None else _nothing
        try:
            for epoch in range(initial_epoch, epochs):
                self.reset_metrics()
                live.in_variables = True
                run.epoch = epoch
                callback_list.on_epoch_begin(epoch)
                start_step = 0
                if resume is not None:   # the state as saved, after the hooks
                    start_step = resume.enter_epoch(run)
                    resume = None
                live.refresh()
                data_start, data_end, data_epoch = position.epoch(epoch)
                logs = epoch_runner.run_pass(engine, TRAIN, adapter, live, callback_list,
                                             (seed, data_epoch), data_end, bounds, start_step,
                                             later_passes=epochs - epoch - 1,
                                             data_start=data_start, run=run,
                                             compile_next=compile_next if epoch == initial_epoch
                                             else None)
                position.advance(data_end)
                live.write_back()
                if logs is None:
                    warnings.warn(
                        "fit(): the training data ran out of batches; stopping. Pass "
                        "`steps_per_epoch` no larger than the batches it yields per epoch, "
                        "or data that can be iterated every epoch.", stacklevel=2)
                    break
                epoch_logs = dict(logs)
                if val_adapter is not None and _should_validate(epoch, validation_freq):
                    later = sum(_should_validate(e, validation_freq)
                                for e in range(epoch + 1, epochs))
                    val_logs = self._evaluate_pass(val_adapter, callback_list, validation_steps,
                                                   allow_empty=True, later_passes=later)
                    epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
                callback_list.on_epoch_end(epoch, epoch_logs)
                training_logs = epoch_logs
                if self.stop_training:
                    break
        except BaseException:
            callback_list.on_fit_interrupted()
            callback_list.set_run(None)
            raise
        finally:
            live.write_back()
            self._trainer_state = None
            if epochs > initial_epoch and isinstance(self.optimizer, optimizers.Optimizer):
                # With use_ema, the averages become the weights (as Keras's fit).
                self.optimizer.finalize_variable_values(self.trainable_weights)
        callback_list.on_train_end(logs=training_logs)
        callback_list.set_run(None)
        return self.history

    def _validation_adapter(self, validation_data, batch_size, steps):
        if batch_source_kind(type(validation_data)) is not None:
            return get_data_adapter(validation_data, steps_per_epoch=steps, what="fit")
        if isinstance(validation_data, (list, tuple)) and len(validation_data) in (2, 3):
            vx, vy, vsw = unpack_x_y_sample_weight(tuple(validation_data))
            return get_data_adapter(vx, vy, vsw, batch_size, steps, what="fit")
        raise ValueError(
            "`validation_data` must be a tuple (x_val, y_val) or (x_val, y_val, "
            f"val_sample_weight), or a dataset/generator; got {type(validation_data).__name__}.")

    def jax_state_sync(self) -> None:
        """Writes the in-flight training state back to the Variables (Keras's
        name; `Callback.model` calls it)."""
        live = getattr(self, "_trainer_state", None)
        if live is not None:
            live.write_back()

    # ---- evaluate ------------------------------------------------------------------------
    @in_use.exclusive("evaluate")
    def evaluate(self, x: Any = None, y: Any = None, batch_size: int | None = None,
                 verbose: int | str = "auto", sample_weight: Any = None,
                 steps: int | None = None, callbacks: Sequence[Callback] | None = None,
                 return_dict: bool = False, check_data: str = "warn", **kwargs: Any
                 ) -> float | list[float] | dict[str, float]:
        """Computes the loss and metrics on the data (no weight updates).

        Args:
            x: The inputs: a NumPy/JAX array, a list or dict of arrays (several inputs),
                or a source of batches (a generator, `PyDataset`, `tf.data.Dataset`, torch
                `DataLoader`, grain dataset) yielding `(x, y[, sample_weight])`.
            y: The targets (None when `x` yields batches).
            batch_size: Rows per batch for array data (default 32).
            verbose: 0 silent, 1 progress bar, 2 one line; `"auto"` is 1.
            sample_weight: Per-example loss weights, shape `(batch,)`.
            steps: Batches to evaluate (default: all the data).
            callbacks: A list of `Callback`s.
            return_dict: Return `{name: value}` instead of a list.
            check_data: `"warn"`, `"raise"` or `"off"`, as in `fit`.
            **kwargs: Refused (Keras 2's removed arguments raise instead of being ignored).

        Returns:
            A float (only a loss), a list of floats in Keras's order (the loss, the
            compiled metrics logged under their own name (one output), the per-output
            losses, then the other logs by sorted name), or a dict with `return_dict=True`.

        Raises:
            ValueError: the model is not compiled, or the data is empty or fails its checks.
            TypeError: an unknown keyword argument is given.
        """
        self._assert_compiled("evaluate")
        if kwargs:
            raise TypeError(f"evaluate() got unexpected arguments {sorted(kwargs)}.")
        data_checks.check_steps(steps, "steps", "evaluate")
        data_checks.check_data_mode(check_data)
        adapter = get_data_adapter(x, y, sample_weight, batch_size, steps, False, None,
                                   what="evaluate")
        steps = loopax_config.capped_steps(steps, adapter.num_batches)
        self._build_for_batch(adapter.peek(), training=False)
        data_checks.check_steps_fit_arrays(adapter, steps, "evaluate")
        data_checks.check_array_data(self, adapter, check_data, "evaluate()")
        verbose = 1 if verbose == "auto" else verbose
        callback_list = CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                                      verbose=verbose, epochs=1, steps=steps or adapter.num_batches)
        logs = self._evaluate_pass(adapter, callback_list, steps)
        if return_dict:
            return logs
        return self._flatten_in_order(logs)

    def _evaluate_pass(self, adapter, callbacks, steps, allow_empty=False, later_passes=0):
        """One test pass; `later_passes`: how many more this run makes (fit's
        validation), for the planner's horizon."""
        self.reset_metrics()
        callbacks.on_test_begin()   # first: it may assign weights (SwapEMAWeights)
        logs = self._run_pass(TEST, adapter, callbacks, steps, later_passes)
        if logs is None:
            if not allow_empty:
                raise ValueError("evaluate(): the data yielded no batch (empty dataset).")
            warnings.warn("fit(): the validation data yielded no batch this epoch (an "
                          "exhausted generator?); no val_ metrics for it. Pass data that can "
                          "be iterated every epoch, or `validation_steps`.", stacklevel=3)
            callbacks.on_test_end({})
            return {}
        logs = logs_to_host(logs)
        callbacks.on_test_end(logs)
        return logs

    def _run_pass(self, kind, adapter, callbacks, steps, later_passes=0):
        """A test or predict pass on a `LiveState` of its own, written back after it
        (a test pass's is the model's trainer state meanwhile, as fit's is)."""
        engine = self._compiled_steps
        live = LiveState(engine.state_groups(kind))
        outer = self._trainer_state
        if kind is TEST:
            self._trainer_state = live
        bounds = epoch_runner.step_bounds(
            engine, callbacks, kind, say=outer is None and callbacks.params.get("verbose") == 2)
        setattr(self, kind.stop_flag, False)
        try:
            return epoch_runner.run_pass(engine, kind, adapter, live, callbacks, None, steps,
                                         bounds, later_passes=later_passes)
        finally:
            live.write_back()   # predict: advanced seed generators
            self._trainer_state = outer

    def _flatten_in_order(self, logs):
        """`logs` as evaluate's list, in Keras's order: the values named by the metrics'
        own names (a compiled metric's name before its output prefix) in `self.metrics`
        order, then the other logs by sorted key."""
        names = []
        for metric in self.metrics:
            names += metric.own_names if isinstance(metric, CompileMetrics) else [metric.name]
        values = [logs[n] for n in names if n in logs]
        values += [logs[k] for k in sorted(logs) if k not in names]
        return values[0] if len(values) == 1 else values

    # ---- predict -------------------------------------------------------------------------
    @in_use.exclusive("predict")
    def predict(self, x: Any, batch_size: int | None = None, verbose: int | str = "auto",
                steps: int | None = None, callbacks: Sequence[Callback] | None = None) -> Any:
        """Computes the model's outputs for `x`, batch after batch.

        Args:
            x: The inputs: a NumPy/JAX array, a list or dict of arrays (several inputs),
                or a source of batches (a generator, `PyDataset`, `tf.data.Dataset`, torch
                `DataLoader`, grain dataset) yielding `(x, y[, sample_weight])`.
            batch_size: Rows per batch for array data (default 32).
            verbose: 0 silent, 1 progress bar, 2 one line; `"auto"` is 1.
            steps: Batches to predict (default: all the data).
            callbacks: A list of `Callback`s.

        Returns:
            NumPy arrays in the structure of the outputs, each `(num_examples, ...)`:
            the batches' outputs concatenated.

        Raises:
            ValueError: the data yields no batch.
        """
        data_checks.check_steps(steps, "steps", "predict")
        adapter = get_data_adapter(x, None, None, batch_size, steps, False, None,
                                   what="predict")
        steps = loopax_config.capped_steps(steps, adapter.num_batches)
        self._build_for_batch(adapter.peek(), training=False)
        verbose = 1 if verbose == "auto" else verbose
        callback_list = CallbackList(callbacks, add_progbar=verbose != 0, model=self,
                                      verbose=verbose, epochs=1, steps=steps or adapter.num_batches)
        callback_list.on_predict_begin()   # first: it may assign weights (SwapEMAWeights)
        outputs = self._run_pass(PREDICT, adapter, callback_list, steps)
        if outputs is None:
            raise ValueError("predict(): the data yielded no batch (empty dataset).")
        callback_list.on_predict_end()
        return outputs

    # ---- on one batch --------------------------------------------------------------------
    def train_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                       class_weight: dict[int, float] | None = None, return_dict: bool = False
                       ) -> float | list[float] | dict[str, float]:
        """One training step on one batch; the metrics are reset first, so the
        values returned are this batch's alone (as Keras 3).

        Args:
            x: The inputs of one batch (array, list or dict of arrays).
            y: The targets of the batch.
            sample_weight: Per-example loss weights, shape `(batch,)`.
            class_weight: `{class index: weight}`.
            return_dict: Return `{name: value}` instead of a list.

        Returns:
            The batch's loss and metrics: a float, a list in `evaluate`'s order, or a
            dict with `return_dict=True`.

        Raises:
            ValueError: the model is not compiled.
        """
        self._assert_compiled("train_on_batch")
        return self._on_batch(TRAIN, x, y, sample_weight, class_weight, return_dict)

    def test_on_batch(self, x: Any, y: Any = None, sample_weight: Any = None,
                      return_dict: bool = False) -> float | list[float] | dict[str, float]:
        """One evaluation step on one batch; the metrics are reset first, so the
        values returned are this batch's alone (as Keras 3).

        Args:
            x: The inputs of one batch (array, list or dict of arrays).
            y: The targets of the batch.
            sample_weight: Per-example loss weights, shape `(batch,)`.
            return_dict: Return `{name: value}` instead of a list.

        Returns:
            The batch's loss and metrics: a float, a list in `evaluate`'s order, or a
            dict with `return_dict=True`.

        Raises:
            ValueError: the model is not compiled.
        """
        self._assert_compiled("test_on_batch")
        return self._on_batch(TEST, x, y, sample_weight, None, return_dict)

    def predict_on_batch(self, x: Any) -> Any:
        """The model's outputs for one batch, as NumPy arrays.

        Args:
            x: The inputs of one batch (array, list or dict of arrays).

        Returns:
            NumPy arrays in the structure of the outputs, each `(batch, ...)`.
        """
        batch = epoch_runner.to_jax(pack_x_y_sample_weight(data_adapter_utils.to_arrays(x)))
        self._build_for_batch(batch, training=False)
        engine = self._compiled_steps
        live = LiveState(engine.state_groups(PREDICT))
        out = live.call(engine.program(PREDICT), batch)
        live.write_back()
        return jax.tree_util.tree_map(np.asarray, out)

    def _on_batch(self, kind, x, y, sample_weight, class_weight, return_dict):
        adapter = ArrayDataAdapter(x, y, sample_weight, class_weight=class_weight,
                                   batch_size=None, steps=1)
        batch = epoch_runner.to_jax(adapter.data)
        self._build_for_batch(batch, training=kind.trains)
        self.reset_metrics()
        engine = self._compiled_steps
        live = LiveState(engine.state_groups(kind))
        fn = engine.program(kind)
        try:
            logs = live.call(fn, batch)
        finally:
            live.write_back()
        logs = logs_to_host(logs)
        return logs if return_dict else self._flatten_in_order(logs)


def _has_sublayers(model):
    return bool(getattr(model, "layers", None))


def _nothing():
    pass


def _should_validate(epoch, validation_freq):
    if isinstance(validation_freq, int):
        if validation_freq < 1:
            raise ValueError(f"`validation_freq` must be >= 1, got {validation_freq}.")
        return (epoch + 1) % validation_freq == 0
    if isinstance(validation_freq, (list, tuple, set)):
        return epoch + 1 in validation_freq
    raise ValueError("`validation_freq` must be an int or a list of epochs (1-based), got "
                     f"{validation_freq!r}.")


def _serialize_loss(loss):
    """A loss's config; your own function by its name (as Keras), which `load_model`
    finds again in its `custom_objects`."""
    try:
        return losses_module.serialize(loss)
    except ValueError:
        if _named_function(loss):
            return loss.__name__
        raise


def _serialize_metric(metric):
    """A metric's config; a function by its name: a metric's name
    (`mean_absolute_error` the function -> "mean_absolute_error") or your own
    function's, found again in `load_model`'s `custom_objects` (as Keras)."""
    config = metrics_module.serialize(metric)
    if config is metric and _named_function(metric):
        return metric.__name__
    return config


def _custom_name(name):
    """A saved loss/metric name as the function `custom_objects` (of the `load_model`
    running) or the registry holds, so the functions `_serialize_loss`/`_serialize_metric`
    saved by name come back; other names stay (built-in ones resolve when compiled)."""
    found = serialization.get_registered_object(name)
    return name if found is None else found


def _named_function(obj):
    """A function with a name `custom_objects` can give (not a lambda)."""
    return inspect.isfunction(obj) and obj.__name__ != "<lambda>"


def _map_nested(fn, spec, names=False):
    """`fn` applied to each loss/metric in a compile argument (None, one, or a list/dict
    of them, nested): to the names (strings) only with `names`, else to all but names."""
    if spec is None:
        return spec
    if isinstance(spec, str):
        return fn(spec) if names else spec
    if isinstance(spec, dict) and "class_name" not in spec:
        return {key: _map_nested(fn, value, names) for key, value in spec.items()}
    if isinstance(spec, (list, tuple)):
        return [_map_nested(fn, value, names) for value in spec]
    return spec if names else fn(spec)
