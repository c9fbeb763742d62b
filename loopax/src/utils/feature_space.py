"""`FeatureSpace`: one object that turns a dict of raw columns (numbers, integer ids,
strings) into model-ready features, as Keras's `keras.utils.FeatureSpace`: each column
gets a preprocessing layer (normalization, discretization, lookup, hashing), learned
by `adapt(data)`, and categorical ones are one-hot encoded; the result is one float
matrix ("concat") or a dict of them ("dict").

loopax runs it eagerly on arrays (`feature_space(data)` gives arrays that `fit()`
takes); feature crosses and the symbolic `get_inputs()`/`get_encoded_features()` are
not built yet.
"""

import numpy as np

from loopax.src.api_export import export
from loopax.src.layers.core.identity import Identity
from loopax.src.layers.preprocessing.preprocessing import Normalization, Rescaling
from loopax.src.layers.preprocessing.structured.categorical import CategoryEncoding, Discretization
from loopax.src.layers.preprocessing.structured.hashing import Hashing
from loopax.src.layers.preprocessing.structured.lookup import IntegerLookup, StringLookup

_OUTPUT_MODES = ("int", "one_hot", "float")


class Feature:
    """A column's dtype, preprocessing layer and encoding (`output_mode`: "int",
    "one_hot" or "float").

    Args:
        dtype: The column's dtype ("float32", "int32" or "string").
        preprocessor: The layer applied to the column, shaped `(batch, 1)`.
        output_mode: "one_hot" encodes the layer's integer output; "int"/"float" keep it.
    """

    def __init__(self, dtype, preprocessor, output_mode):
        if output_mode not in _OUTPUT_MODES:
            raise ValueError(f"Feature: `output_mode` must be one of {_OUTPUT_MODES}, got "
                             f"{output_mode!r}.")
        self.dtype, self.preprocessor, self.output_mode = dtype, preprocessor, output_mode


class Cross:
    """A crossing of several categorical features, hashed into `crossing_dim` bins.

    Args:
        feature_names: The crossed features' names.
        crossing_dim: The number of hash bins.
        output_mode: "int" or "one_hot".
    """

    def __init__(self, feature_names, crossing_dim, output_mode="one_hot"):
        if output_mode not in ("int", "one_hot"):
            raise ValueError(f"Cross: `output_mode` must be 'int' or 'one_hot', got "
                             f"{output_mode!r}.")
        self.feature_names = tuple(feature_names)
        self.crossing_dim, self.output_mode = crossing_dim, output_mode

    @property
    def name(self):
        """The features' names joined by "_X_"."""
        return "_X_".join(self.feature_names)


@export("loopax.utils.FeatureSpace")
class FeatureSpace:
    """Preprocesses and encodes a dict of feature columns.

    Args:
        features: `{name: feature}`: a `Feature` (from `FeatureSpace.float()`,
            `.float_normalized()`, `.integer_categorical()`, ...) or its name as a
            string ("float", "float_normalized", "float_rescaled", "float_discretized",
            "integer_categorical", "string_categorical", "integer_hashed",
            "string_hashed").
        output_mode: "concat" (one float matrix, features in sorted name order) or
            "dict" (`{name: encoded feature}`).
        crosses: Not supported yet (raises).
        crossing_dim: Hash bins of a cross.
        hashing_dim: Hash bins of a hashed feature given by name.
        num_discretization_bins: Bins of a "float_discretized" feature given by name.
        name: A name, for messages.
    """

    @classmethod
    def feature(cls, dtype, preprocessor, output_mode):
        """Returns a `Feature` with your own preprocessing layer."""
        return Feature(dtype, preprocessor, output_mode)

    @classmethod
    def cross(cls, feature_names, crossing_dim, output_mode="one_hot"):
        """Returns a `Cross` of the named features."""
        return Cross(feature_names, crossing_dim, output_mode)

    @classmethod
    def float(cls, name=None):
        """Returns a float feature passed through unchanged (as float32)."""
        return Feature("float32", Identity(dtype="float32"), "float")

    @classmethod
    def float_rescaled(cls, scale=1.0, offset=0.0, name=None):
        """Returns a float feature mapped to `x * scale + offset`."""
        return Feature("float32", Rescaling(scale=scale, offset=offset), "float")

    @classmethod
    def float_normalized(cls, name=None):
        """Returns a float feature normalized to mean 0 and variance 1 (learned by
        `adapt`)."""
        return Feature("float32", Normalization(axis=-1), "float")

    @classmethod
    def float_discretized(cls, num_bins, bin_boundaries=None, output_mode="one_hot",
                          name=None):
        """Returns a float feature cut into `num_bins` quantile bins (learned by
        `adapt`), or at the given `bin_boundaries`."""
        if bin_boundaries is not None:
            return Feature("float32", Discretization(bin_boundaries=bin_boundaries),
                           output_mode)
        return Feature("float32", Discretization(num_bins=num_bins), output_mode)

    @classmethod
    def integer_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot",
                            name=None):
        """Returns an integer-id feature indexed by its vocabulary (learned by `adapt`)."""
        return Feature("int32", IntegerLookup(max_tokens=max_tokens,
                                                     num_oov_indices=num_oov_indices),
                       output_mode)

    @classmethod
    def string_categorical(cls, max_tokens=None, num_oov_indices=1, output_mode="one_hot",
                           name=None):
        """Returns a string feature indexed by its vocabulary (learned by `adapt`)."""
        return Feature("string", StringLookup(max_tokens=max_tokens,
                                                     num_oov_indices=num_oov_indices),
                       output_mode)

    @classmethod
    def string_hashed(cls, num_bins, output_mode="one_hot", name=None):
        """Returns a string feature hashed into `num_bins` bins."""
        return Feature("string", Hashing(num_bins=num_bins), output_mode)

    @classmethod
    def integer_hashed(cls, num_bins, output_mode="one_hot", name=None):
        """Returns an integer feature hashed into `num_bins` bins."""
        return Feature("int32", Hashing(num_bins=num_bins), output_mode)

    def __init__(self, features, output_mode="concat", crosses=None, crossing_dim=32,
                 hashing_dim=32, num_discretization_bins=32, name=None):
        if not features:
            raise ValueError("FeatureSpace: the `features` argument cannot be None or empty.")
        if output_mode not in ("concat", "dict"):
            raise ValueError(f"FeatureSpace: `output_mode` must be 'concat' or 'dict', got "
                             f"{output_mode!r}.")
        if crosses:
            raise NotImplementedError(
                "FeatureSpace: `crosses` are not built in loopax yet (they need the "
                "HashedCrossing layer). Cross the columns yourself (e.g. join two string "
                "columns and use FeatureSpace.string_hashed).")
        self.name = name or "feature_space"
        self.output_mode = output_mode
        self.crossing_dim, self.hashing_dim = crossing_dim, hashing_dim
        self.num_discretization_bins = num_discretization_bins
        self.crosses = []
        self.features = {key: self._standardize_feature(key, value)
                         for key, value in features.items()}
        self.preprocessors = {key: f.preprocessor for key, f in self.features.items()}
        self._adapted = not self._adaptable()

    def _standardize_feature(self, name, feature):
        if isinstance(feature, Feature):
            return feature
        by_name = {
            "float": lambda: self.float(),
            "float_normalized": lambda: self.float_normalized(),
            "float_rescaled": lambda: self.float_rescaled(),
            "float_discretized": lambda: self.float_discretized(self.num_discretization_bins),
            "integer_categorical": lambda: self.integer_categorical(),
            "string_categorical": lambda: self.string_categorical(),
            "integer_hashed": lambda: self.integer_hashed(self.hashing_dim),
            "string_hashed": lambda: self.string_hashed(self.hashing_dim),
        }
        if not isinstance(feature, str) or feature not in by_name:
            raise ValueError(f"FeatureSpace: invalid feature type {feature!r} for "
                             f"{name!r}; use a Feature or one of {sorted(by_name)}.")
        return by_name[feature]()

    def _adaptable(self):
        """Names of the features whose preprocessor still has to learn from data."""
        names = []
        for name, layer in self.preprocessors.items():
            if isinstance(layer, Normalization) and layer.input_mean is not None:
                continue
            if isinstance(layer, Discretization) and layer.num_bins is None:
                continue   # fixed bin_boundaries
            if hasattr(layer, "adapt"):
                names.append(name)
        return names

    def adapt(self, dataset):
        """Lets each preprocessor learn from the data (means and variances, quantiles,
        vocabularies).

        Args:
            dataset: A dict `{name: array or list}` of whole columns.

        Raises:
            ValueError: `dataset` is not a dict, or lacks a feature.
        """
        if not isinstance(dataset, dict):
            raise ValueError("FeatureSpace.adapt: expected a dict of arrays/lists "
                             f"{{name: column}}, got {type(dataset).__name__}.")
        for name in self._adaptable():
            self.preprocessors[name].adapt(_column(self._get(dataset, name), name))
        self._adapted = True

    def _get(self, data, name):
        if name not in data:
            raise ValueError(f"FeatureSpace: the data has no column {name!r} (it has "
                             f"{sorted(data)}).")
        return data[name]

    def __call__(self, data):
        """Encodes a dict of columns (or of single values: one example).

        Args:
            data: `{name: array or list of shape (batch,) or (batch, 1)}`, or
                `{name: scalar}`.

        Returns:
            "concat": a float32 array `(batch, total width)`, features in sorted name
            order; "dict": `{name: encoded array}`. Without a batch axis for scalars.

        Raises:
            ValueError: `adapt` was not called, `data` is not a dict, or a feature that
                is not one-hot encoded is concatenated.
        """
        if not self._adapted:
            raise ValueError("FeatureSpace: call `.adapt(data)` before using it.")
        if not isinstance(data, dict):
            raise ValueError(f"FeatureSpace can only be called with a dict, got "
                             f"{type(data).__name__}.")
        single = all(np.ndim(value) == 0 for value in data.values())
        encoded = {}
        for name in sorted(self.features):
            column = _column(self._get(data, name), name)
            encoded[name] = self._encode(name, np.asarray(self.preprocessors[name](column)))
        if self.output_mode == "dict":
            return {k: v[0] if single else v for k, v in encoded.items()}
        for name, value in encoded.items():
            if not np.issubdtype(value.dtype, np.floating):
                raise ValueError(
                    f"FeatureSpace: cannot concatenate feature {name!r}: it is not encoded "
                    f"(dtype {value.dtype}). Use output_mode='dict', or the feature's "
                    "output_mode='one_hot'.")
        merged = np.concatenate([encoded[name] for name in sorted(encoded)], axis=-1)
        return merged[0] if single else merged

    def _encode(self, name, value):
        feature = self.features[name]
        if feature.output_mode != "one_hot":
            return value
        if not np.issubdtype(value.dtype, np.integer):
            raise ValueError(f"FeatureSpace: feature {name!r} has output_mode='one_hot', so "
                             f"its preprocessor should return integers; it returns "
                             f"{value.dtype}.")
        depth = _cardinality(name, feature.preprocessor)
        encoder = CategoryEncoding(num_tokens=depth, output_mode="multi_hot")
        return np.asarray(encoder(value))


def _column(values, name):
    """A column as a `(batch, 1)` array (a scalar as one example)."""
    array = np.asarray(values)
    if array.dtype.kind in "OU":
        array = array.astype(str)
    if array.ndim == 0:
        return array.reshape(1, 1)
    if array.ndim == 1:
        return array[:, None]
    return array


def _cardinality(name, layer):
    if isinstance(layer, (IntegerLookup, StringLookup)):
        return layer.vocabulary_size()
    if isinstance(layer, Discretization):
        return layer.num_bins or len(layer.bin_boundaries) + 1
    if isinstance(layer, Hashing):
        return layer.num_bins
    if isinstance(layer, CategoryEncoding):
        return layer.num_tokens
    raise ValueError(f"FeatureSpace: feature {name!r} has output_mode='one_hot' but the size "
                     "of its preprocessor's output space is unknown, so it cannot be one-hot "
                     "encoded. Use output_mode='int'.")
