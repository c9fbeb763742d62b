"""Metrics: stateful (`update_state`, `result`, `reset_state`) and stateless
(`stateless_update_state`, `stateless_result`, `stateless_reset_state`)."""

from loopax.src.metrics import (
    AUC, Accuracy, BinaryAccuracy, BinaryCrossentropy, CategoricalAccuracy,
    CategoricalCrossentropy, CategoricalHinge, CosineSimilarity, FalseNegatives,
    FalsePositives, Hinge, KLDivergence, LogCoshError, Mean, MeanAbsoluteError,
    MeanAbsolutePercentageError, MeanMetricWrapper, MeanSquaredError,
    MeanSquaredLogarithmicError, Metric, Poisson, Precision, Recall, RootMeanSquaredError,
    SparseCategoricalAccuracy, SparseCategoricalCrossentropy, SparseTopKCategoricalAccuracy,
    SquaredHinge, Sum, TopKCategoricalAccuracy, TrueNegatives, TruePositives,
    accuracy, binary_accuracy, categorical_accuracy, cosine_similarity, deserialize, get,
    get_accuracy_for, serialize, sparse_categorical_accuracy,
    sparse_top_k_categorical_accuracy, top_k_categorical_accuracy)
from loopax.src.losses.losses import (
    binary_crossentropy, binary_focal_crossentropy, categorical_crossentropy,
    categorical_hinge, hinge, huber, kl_divergence, log_cosh, mean_absolute_error,
    mean_absolute_percentage_error, mean_squared_error, mean_squared_logarithmic_error,
    poisson, sparse_categorical_crossentropy, squared_hinge)
