"""scikit-learn estimators around loopax models (Keras's `keras.wrappers`):
`SKLearnClassifier`, `SKLearnRegressor`, `SKLearnTransformer` fit a compiled model on
`(X, y)` and predict/transform with it, so it can sit in a scikit-learn `Pipeline`,
`GridSearchCV` or `cross_val_score`. Needs scikit-learn (`pip install scikit-learn`).
"""

import copy

import numpy as np

from loopax.src.api_export import export
from loopax.src.models.cloning import clone_model
from loopax.src.models.model import Model

try:
    import sklearn
    import sklearn.pipeline
    import sklearn.preprocessing
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
except ImportError:   # the classes exist; creating one says to install scikit-learn
    sklearn = None
    BaseEstimator = ClassifierMixin = RegressorMixin = TransformerMixin = object


def _validate_data(estimator, *args, **kwargs):
    from sklearn.utils.validation import validate_data
    return validate_data(estimator, *args, **kwargs)


def _check_is_fitted(estimator):
    from sklearn.utils.validation import check_is_fitted
    check_is_fitted(estimator)


def _type_of_target(y):
    from sklearn.utils.multiclass import type_of_target
    target_type = type_of_target(y)
    if target_type == "unknown":
        raise ValueError(f"Unknown label type for data: {y!r}")
    return target_type


class _TargetReshaper(TransformerMixin, BaseEstimator):
    """Makes a 1-D target `(n, 1)` for the encoders, and back after predicting."""

    def fit(self, y):
        self.ndim_ = y.ndim
        return self

    def transform(self, y):
        return y.reshape(-1, 1) if y.ndim == 1 else y

    def inverse_transform(self, y):
        return np.squeeze(y, axis=1) if self.ndim_ == 1 and y.ndim == 2 else y


class SKLBase(BaseEstimator):
    """The shared part of the three wrappers.

    Args:
        model: A compiled `Model` (cloned by `fit`: its weights are not reused), or a
            function `model(X=..., y=..., **model_kwargs)` returning a compiled model.
        warm_start: Kept for scikit-learn (a given model is cloned anyway, as Keras).
        model_kwargs: Extra keyword arguments of `model` when it is a function.
        fit_kwargs: Keyword arguments of `Model.fit` (those given to `fit` win).
    """

    def __init__(self, model, warm_start=False, model_kwargs=None, fit_kwargs=None):
        if sklearn is None:
            raise ImportError(f"{type(self).__name__} requires `scikit-learn` to be "
                              "installed. Run `pip install scikit-learn` to install it.")
        self.model = model
        self.warm_start = warm_start
        self.model_kwargs = model_kwargs
        self.fit_kwargs = fit_kwargs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags

    def __sklearn_clone__(self):
        model = self.model if callable(self.model) else copy.deepcopy(self.model)
        return type(self)(model=model, warm_start=self.warm_start,
                          model_kwargs=self.model_kwargs)

    @property
    def epoch_(self):
        """The number of epochs the last `fit` ran (0 before fitting)."""
        history = getattr(self, "history_", None)
        return len(history.epoch) if history is not None else 0

    def _get_model(self, X, y):
        if isinstance(self.model, Model):
            clone = clone_model(self.model)
            if self.model.compiled:   # Keras's clone_model compiles the copy too
                clone.compile_from_config(self.model.get_compile_config())
            return clone
        return self.model(X=X, y=y, **(self.model_kwargs or {}))

    def fit(self, X, y, **kwargs):
        """Fits a fresh model on `(X, y)`.

        Args:
            X: The inputs, `(n_samples, n_features)`.
            y: The targets, `(n_samples,)` or `(n_samples, n_outputs)`.
            **kwargs: Keyword arguments of `Model.fit` (epochs, batch_size, ...).

        Returns:
            self.

        Raises:
            RuntimeError: the model is not compiled with an optimizer.
        """
        X, y = _validate_data(self, X, y)
        y = self._process_target(y, reset=True)
        model = self._get_model(X, y)
        if not getattr(model, "compiled", False) or model.optimizer is None:
            raise RuntimeError("Given model needs to be compiled, and have a loss and an "
                               "optimizer: call model.compile(optimizer=..., loss=...) (or "
                               "compile it in the function you pass).")
        fit_kwargs = dict(self.fit_kwargs or {})
        fit_kwargs.update(kwargs)
        self.history_ = model.fit(X, y, **fit_kwargs)
        self.model_ = model
        return self

    def predict(self, X):
        """Returns the fitted model's predictions for `X` (labels for a classifier).

        Args:
            X: The inputs, `(n_samples, n_features)`.
        """
        _check_is_fitted(self)
        X = _validate_data(self, X, reset=False)
        return self._reverse_process_target(self.model_.predict(X, verbose=0))

    def _process_target(self, y, reset=False):
        _type_of_target(y)
        if reset:
            self._target_encoder = _TargetReshaper().fit(y)
        return self._target_encoder.transform(y)

    def _reverse_process_target(self, y):
        return self._target_encoder.inverse_transform(y)


@export("loopax.wrappers.SKLearnClassifier")
class SKLearnClassifier(ClassifierMixin, SKLBase):
    """A scikit-learn classifier: `fit` one-hot encodes the labels (binary or
    multiclass) for the model, `predict` returns labels, `classes_` the classes.

    Args:
        model: A compiled `Model` (cloned by `fit`: its weights are not reused), or a
            function `model(X=..., y=..., **model_kwargs)` returning a compiled model.
        warm_start: Kept for scikit-learn (a given model is cloned anyway, as Keras).
        model_kwargs: Extra keyword arguments of `model` when it is a function.
        fit_kwargs: Keyword arguments of `Model.fit` (those given to `fit` win).
    """

    def _process_target(self, y, reset=False):
        target_type = _type_of_target(y)
        if target_type not in ("binary", "multiclass"):
            raise ValueError(f"Only binary and multiclass target types are supported. "
                             f"Target type: {target_type}")
        if reset:
            self._target_encoder = sklearn.pipeline.make_pipeline(
                _TargetReshaper(), sklearn.preprocessing.OneHotEncoder(sparse_output=False),
            ).fit(y)
            self.classes_ = np.unique(y)
            if len(self.classes_) == 1:
                raise ValueError("Classifier can't train when only one class is present.")
        return self._target_encoder.transform(y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags


@export("loopax.wrappers.SKLearnRegressor")
class SKLearnRegressor(RegressorMixin, SKLBase):
    """A scikit-learn regressor: the targets go to the model as they are (a 1-D `y`
    as `(n, 1)`), `predict` gives them back in `y`'s shape.

    Args:
        model: A compiled `Model` (cloned by `fit`: its weights are not reused), or a
            function `model(X=..., y=..., **model_kwargs)` returning a compiled model.
        warm_start: Kept for scikit-learn (a given model is cloned anyway, as Keras).
        model_kwargs: Extra keyword arguments of `model` when it is a function.
        fit_kwargs: Keyword arguments of `Model.fit` (those given to `fit` win).
    """

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


@export("loopax.wrappers.SKLearnTransformer")
class SKLearnTransformer(TransformerMixin, SKLBase):
    """A scikit-learn transformer: `transform(X)` is the fitted model's output (an
    embedding step of a pipeline).

    Args:
        model: A compiled `Model` (cloned by `fit`: its weights are not reused), or a
            function `model(X=..., y=..., **model_kwargs)` returning a compiled model.
        warm_start: Kept for scikit-learn (a given model is cloned anyway, as Keras).
        model_kwargs: Extra keyword arguments of `model` when it is a function.
        fit_kwargs: Keyword arguments of `Model.fit` (those given to `fit` win).
    """

    def transform(self, X):
        """Returns the fitted model's outputs for `X`.

        Args:
            X: The inputs, `(n_samples, n_features)`.
        """
        _check_is_fitted(self)
        X = _validate_data(self, X, reset=False)
        return self.model_.predict(X, verbose=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags
