"""scikit-learn wrappers (Keras's `keras.wrappers`)."""

from loopax.src.wrappers.sklearn_wrapper import (
    SKLearnClassifier,
    SKLearnRegressor,
    SKLearnTransformer,
)
