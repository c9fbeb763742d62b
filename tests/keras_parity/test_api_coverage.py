"""Every public name of keras.layers, .ops, .losses, .metrics, .optimizers,
.callbacks, .utils, .distribution and .preprocessing is either in the loopax module of the same name or
listed, with a reason, in docs/keras_differences.md (a `## keras.<module>`
section, one `- `Name`: reason` line per name). A listed name that loopax
now has fails too, so the list only ever says what is really missing.
"""

import pathlib
import re

import pytest
from keras_reference import keras

import loopax

DOC = pathlib.Path(__file__).parents[2] / "docs" / "keras_differences.md"
MODULES = ["layers", "ops", "losses", "metrics", "optimizers", "callbacks", "utils",
           "distribution", "preprocessing"]
ENTRY = re.compile(r"^- `([A-Za-z_][A-Za-z0-9_]*)`: (.*\S)\s*$")


def listed_differences():
    """{module: {name: reason}} from the doc."""
    sections, current = {}, None
    for line in DOC.read_text().splitlines():
        if line.startswith("## "):
            heading = re.match(r"^## keras\.(\w+)\s*$", line)
            current = sections.setdefault(heading.group(1), {}) if heading else None
        elif line.startswith("- `") and current is not None:
            entry = ENTRY.match(line)
            assert entry, f"{DOC.name}: malformed entry (want - `Name`: reason): {line!r}"
            current[entry.group(1)] = entry.group(2)
    return sections


def public(module):
    return {n for n in dir(module) if not n.startswith("_")}


@pytest.mark.parametrize("module", MODULES)
def test_every_keras_name_is_in_loopax_or_listed_with_a_reason(module):
    listed = listed_differences().get(module)
    assert listed is not None, f"{DOC.name} has no '## keras.{module}' section"
    keras_names = public(getattr(keras, module))
    loopax_names = public(getattr(loopax, module))
    missing = sorted(keras_names - loopax_names - listed.keys())
    assert not missing, (f"keras.{module} names neither in loopax.{module} nor listed in "
                         f"{DOC.name}: {missing}")
    stale = sorted(listed.keys() & loopax_names)
    assert not stale, (f"loopax.{module} now has {stale}: remove them from the "
                       f"'keras.{module}' section of {DOC.name}")
    unknown = sorted(listed.keys() - keras_names)
    assert not unknown, f"{DOC.name} lists {unknown}, which keras.{module} does not have"


# Layers compared with Keras elsewhere than in test_layer_parity's CASES, and
# exports that are not layers one can compare by calling.
COMPARED_ELSEWHERE = {
    "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
    "GaussianDropout", "AlphaDropout",  # test_noise_parity (statistics)
    "SimpleRNN", "LSTM", "GRU", "SimpleRNNCell", "LSTMCell", "GRUCell", "RNN",
    "StackedRNNCells", "Bidirectional", "TimeDistributed",  # tests/layers/test_rnn.py
    "Masking",  # tests/layers/test_masking.py
    "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D",  # tests/layers/test_conv_lstm.py
    "SpectralNormalization", "Wrapper",  # tests/layers/test_spectral_normalization.py
    "StringLookup", "IntegerLookup", "Hashing", "TextVectorization",  # test_lookup_parity
    "CategoryEncoding", "Discretization",  # test_categorical_parity
    "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
    "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D",
    "AdaptiveMaxPooling3D",  # tests/layers/test_adaptive_pooling.py
    "Pipeline",  # tests/layers/test_pipeline.py
    "Lambda",  # tests/layers/test_lambda.py (models with the same function for both)
    "MixUp", "CutMix", "RandomGrayscale", "RandomInvert", "Solarization", "RandomPosterization",
    "AutoContrast", "Equalization", "RandomErasing",  # tests/layers/test_image_augmentation.py
    "RandomColorDegeneration", "RandomSaturation", "RandomHue", "RandomColorJitter",
    "RandomSharpness", "RandomGaussianBlur",  # tests/layers/test_color_augmentation.py
    "RandomShear", "RandomPerspective",  # tests/layers/test_geometric_augmentation.py
    "RandAugment",  # tests/layers/test_augmentation_policies.py
}
NOT_CALLABLE_LAYERS = {"InputLayer", "Input", "InputSpec", "Layer"}


def test_every_shared_layer_class_has_a_parity_case():
    from test_layer_parity import CASES
    tested = {getattr(loopax.layers, c.values[0]) for c in CASES}
    tested |= {getattr(loopax.layers, n) for n in COMPARED_ELSEWHERE}
    shared = public(keras.layers) & public(loopax.layers) - NOT_CALLABLE_LAYERS
    untested = sorted(n for n in shared if isinstance(getattr(loopax.layers, n), type)
                      and getattr(loopax.layers, n) not in tested)
    assert not untested, f"loopax layers with no Keras parity case: {untested}"
