"""Every public name of keras.layers, .ops, .losses, .metrics, .optimizers,
.callbacks, .utils, .distribution and .preprocessing is either in the loopax
module of the same name or listed, with a reason, in docs/keras_differences.md
(a `## keras.<module>` section, one `- `Name`: reason` line per name). A listed name that loopax
now has fails too, so the list only ever says what is really missing.
"""

import pathlib
import re
import types

import pytest
from keras_reference import keras

import loopax

DOC = pathlib.Path(__file__).parents[2] / "docs" / "keras_differences.md"
MODULES = ["layers", "ops", "losses", "metrics", "optimizers", "callbacks", "utils",
           "distribution", "preprocessing", "tree", "export"]
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
    "StackedRNNCells", "Bidirectional", "TimeDistributed",  # tests/layers/recurrent/test_rnn.py
    "Masking",  # tests/layers/test_masking.py
    "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D",  # tests/layers/recurrent/test_conv_lstm.py
    "SpectralNormalization", "Wrapper",  # tests/layers/normalization/test_spectral_normalization.py
    "StringLookup", "IntegerLookup", "Hashing", "TextVectorization",  # test_lookup_parity
    "CategoryEncoding", "Discretization",  # test_categorical_parity
    "AdaptiveAveragePooling1D", "AdaptiveAveragePooling2D", "AdaptiveAveragePooling3D",
    "AdaptiveMaxPooling1D", "AdaptiveMaxPooling2D",
    "AdaptiveMaxPooling3D",  # tests/layers/pooling/test_adaptive_pooling.py
    "Pipeline",  # tests/layers/preprocessing/test_pipeline.py
    "Lambda",  # tests/layers/core/test_lambda.py (models with the same function for both)
    "JaxLayer", "FlaxLayer",  # tests/layers/core/test_jax_layer.py (same params, fit steps)
    "MixUp", "CutMix", "RandomGrayscale", "RandomInvert", "Solarization", "RandomPosterization",
    # tests/layers/preprocessing/image/test_image_augmentation.py
    "AutoContrast", "Equalization", "RandomErasing",
    "RandomColorDegeneration", "RandomSaturation", "RandomHue", "RandomColorJitter",
    # tests/layers/preprocessing/image/test_color_augmentation.py
    "RandomSharpness", "RandomGaussianBlur",
    # tests/layers/preprocessing/image/test_geometric_augmentation.py
    "RandomShear", "RandomPerspective",
    "RandAugment",  # tests/layers/preprocessing/image/test_augmentation_policies.py
    "ReversibleEmbedding",  # tests/layers/core/test_reversible_embedding.py
    "STFTSpectrogram", "MelSpectrogram",  # tests/layers/preprocessing/audio/test_spectrogram.py
    # tests/layers/preprocessing/structured/test_hashed_crossing.py (recorded Keras outputs)
    "HashedCrossing",
    "MaxNumBoundingBoxes",  # tests/layers/preprocessing/image/test_max_num_bounding_boxes.py
    "AugMix",  # tests/layers/preprocessing/image/test_aug_mix.py
    "RandomElasticTransform",  # tests/layers/preprocessing/image/test_random_elastic_transform.py
    # tests/layers/preprocessing/image/test_clahe.py
    "ContrastLimitedAdaptiveHistogramEqualization",
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


# Every public Keras module, recursively: names loopax deliberately lacks for
# now, by module path ("" is `keras` itself). Modules with a section in
# docs/keras_differences.md (MODULES above) are listed there instead. A name
# listed here that loopax now has fails, so the list only shrinks.
NEEDS_ANOTHER_FRAMEWORK = {
    "layers": {"TFSMLayer", "TorchModuleWrapper"},  # TensorFlow SavedModel / PyTorch
}
NOT_BUILT_YET = {}


def public_modules(keras_module, loopax_module, path=""):
    """Yield (path, keras module, loopax module or None) for `keras_module` and
    every public submodule under it (keras.src excluded)."""
    yield path, keras_module, loopax_module
    for name in sorted(public(keras_module)):
        sub = getattr(keras_module, name)
        if not isinstance(sub, types.ModuleType) or not _is_public_keras(sub):
            continue
        mirror = getattr(loopax_module, name, None) if loopax_module is not None else None
        yield from public_modules(sub, mirror if isinstance(mirror, types.ModuleType) else None,
                                  f"{path}.{name}".lstrip("."))


def _is_public_keras(module):
    return module.__name__.startswith("keras") and not module.__name__.startswith("keras.src")


def api_gap():
    """{module path: sorted Keras names loopax lacks} over every public Keras module."""
    gap = {}
    for path, keras_module, loopax_module in public_modules(keras, loopax):
        names = {n for n in public(keras_module)
                 if not isinstance(getattr(keras_module, n), types.ModuleType)}
        have = public(loopax_module) if loopax_module is not None else set()
        if names - have:
            gap[path] = sorted(names - have)
    return gap


def left_out(path):
    docs = listed_differences().get(path, {}) if path in MODULES else {}
    return (set(docs) | NEEDS_ANOTHER_FRAMEWORK.get(path, set())
            | NOT_BUILT_YET.get(path, set()))


def test_every_public_keras_module_is_covered_or_its_gap_listed():
    gap = api_gap()
    print(f"\nKeras names loopax lacks: {sum(map(len, gap.values()))} in {len(gap)} modules")
    for path, names in gap.items():
        print(f"  keras.{path or '<top>'} ({len(names)}): {', '.join(names)}")
    unlisted = {p: sorted(set(n) - left_out(p)) for p, n in gap.items()}
    unlisted = {p: n for p, n in unlisted.items() if n}
    assert not unlisted, ("Keras names loopax lacks that are not listed in NOT_BUILT_YET / "
                          f"NEEDS_ANOTHER_FRAMEWORK (or {DOC.name}): {unlisted}")
    stale = {p: sorted(names - set(gap.get(p, ())))
             for p, names in {**NOT_BUILT_YET, **NEEDS_ANOTHER_FRAMEWORK}.items()}
    stale = {p: n for p, n in stale.items() if n}
    assert not stale, f"loopax now has these: remove them from NOT_BUILT_YET: {stale}"


if __name__ == "__main__":
    for module_path, missing_names in api_gap().items():
        print(f"keras.{module_path or '<top>'} ({len(missing_names)}): {', '.join(missing_names)}")
