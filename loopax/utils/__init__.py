"""Utilities: `to_categorical`, `normalize`, `pad_sequences`, `set_random_seed`,
`get_file`, `clear_session`, and the serialization helpers Keras keeps here."""

from loopax.src.callbacks.progbar import Progbar
from loopax.src.layers.symbolic import get_source_inputs, is_keras_tensor
from loopax.src.models.plotting import model_to_dot, plot_model
from loopax.src.random import set_random_seed
from loopax.src.saving.serialization import (
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
from loopax.src.utils.file_utils import get_file
from loopax.src.utils.numerical_utils import normalize, to_categorical
from loopax.src.utils.sequence_utils import pad_sequences
