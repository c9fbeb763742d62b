"""Utilities: `to_categorical`, `normalize`, `pad_sequences`, `set_random_seed`,
`get_file`, `clear_session`, the serialization helpers Keras keeps here, and the
data utilities (`timeseries_dataset_from_array`, `image_/text_/audio_dataset_from_directory`,
`split_dataset`, `load_img`/`img_to_array`/`array_to_img`/`save_img`), `FeatureSpace`,
`Config`, `standardize_dtype`, the interactive-logging switches and `legacy` (Keras 2's
serialization format)."""

from loopax.src.callbacks.progbar import Progbar
from loopax.src.config import standardize_dtype
from loopax.src.layers.symbolic import get_source_inputs, is_keras_tensor
from loopax.src.models.plotting import model_to_dot, plot_model
from loopax.src.random import set_random_seed
from loopax.src.serialization import (
    CustomObjectScope,
    custom_object_scope,
    deserialize_keras_object,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    serialize_keras_object,
)
from loopax.src.state import clear_session
from loopax.src.trainers.data_adapters import (
    PyDataset,
    pack_x_y_sample_weight,
    unpack_x_y_sample_weight,
)
from loopax.src.trainers.data_adapters import PyDataset as Sequence  # Keras's alias
from loopax.src.utils.config_object import Config
from loopax.src.utils.dataset_utils import split_dataset, timeseries_dataset_from_array
from loopax.src.utils.directory_datasets import (
    audio_dataset_from_directory,
    image_dataset_from_directory,
    text_dataset_from_directory,
)
from loopax.src.utils.feature_space import FeatureSpace
from loopax.src.utils.file_utils import get_file
from loopax.src.utils.image_utils import array_to_img, img_to_array, load_img, save_img
from loopax.src.utils.io_utils import (
    disable_interactive_logging,
    enable_interactive_logging,
    is_interactive_logging_enabled,
)
from loopax.src.utils.numerical_utils import normalize, to_categorical
from loopax.src.utils.sequence_utils import pad_sequences
from loopax.utils import bounding_boxes, legacy
