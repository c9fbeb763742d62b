"""STFTSpectrogram and MelSpectrogram against Keras 3.15.1 itself: the same
signal (and, for STFTSpectrogram, the same kernels) gives the same outputs in
every mode and layout, configs carry Keras's keys, and fit() inside a model
takes the same steps as Keras's."""



import jax
import numpy as np
import pytest

import loopax

keras = pytest.importorskip("keras")

RNG = np.random.default_rng(0)
SIGNAL = RNG.normal(size=(2, 300, 3)).astype("float32")   # (batch, time, channels)
AUDIO = RNG.normal(size=(2, 2000)).astype("float32")       # (batch, samples)
SMALL = {"frame_length": 64, "frame_step": 16, "fft_length": 128}

STFT_CASES = {
    **{mode: {"mode": mode} for mode in ("log", "magnitude", "psd", "real", "imag", "angle",
                                         "stft")},
    "log_same_padding": {"mode": "log", "padding": "same"},
    "stft_expand_dims": {"mode": "stft", "expand_dims": True},
    "psd_channels_first": {"mode": "psd", "data_format": "channels_first"},
    "magnitude_channels_first_expand_dims": {"mode": "magnitude", "expand_dims": True,
                                             "data_format": "channels_first"},
    "spectrum_scaling_hamming_periodic": {"mode": "real", "scaling": "spectrum",
                                          "window": "hamming", "periodic": True},
    "no_window_odd_step": {"mode": "imag", "window": None, "frame_step": 7, "scaling": None},
}


def signal_for(kwargs):
    return np.swapaxes(SIGNAL, 1, 2) if kwargs.get("data_format") == "channels_first" \
        else SIGNAL


@pytest.mark.parametrize("kwargs", STFT_CASES.values(), ids=STFT_CASES.keys())
def test_stft_spectrogram_matches_keras_on_the_same_kernels(kwargs):
    kwargs = {**SMALL, **kwargs}
    x = signal_for(kwargs)
    k_layer = keras.layers.STFTSpectrogram(**kwargs)
    l_layer = loopax.layers.STFTSpectrogram(**kwargs)
    want = np.asarray(k_layer(x))
    l_layer(x)
    assert [w.path for w in l_layer.weights] == [w.path for w in k_layer.weights]
    l_layer.set_weights(k_layer.get_weights())
    got = np.asarray(l_layer(x))
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("mode", ["magnitude", "real", "psd"])
def test_stft_kernels_start_as_keras_kernels(mode):
    # The STFT initializer computes in float64, Keras's in float32: the
    # kernels differ by ~1e-6, the outputs by far less than the tolerance.
    k_out = np.asarray(keras.layers.STFTSpectrogram(mode=mode, **SMALL)(SIGNAL))
    l_out = np.asarray(loopax.layers.STFTSpectrogram(mode=mode, **SMALL)(SIGNAL))
    np.testing.assert_allclose(l_out, k_out, rtol=1e-4, atol=1e-4)


def test_stft_config_round_trip_with_keras_keys():
    layer = loopax.layers.STFTSpectrogram(mode="angle", frame_length=32, frame_step=8,
                                          fft_length=64, window="hamming", periodic=True,
                                          scaling="spectrum", padding="same", expand_dims=True,
                                          data_format="channels_first")
    config = layer.get_config()
    k_config = keras.layers.STFTSpectrogram(**{k: v for k, v in config.items()
                                               if k not in ("name", "dtype")}).get_config()
    assert set(config) == set(k_config)
    assert {k: v for k, v in config.items() if k not in ("name", "dtype")} == \
        {k: v for k, v in k_config.items() if k not in ("name", "dtype")}
    assert loopax.layers.STFTSpectrogram.from_config(config).get_config() == config


def stft_model(lib):
    signal = lib.Input((300, 3))
    spectrum = lib.layers.STFTSpectrogram(mode="log", name="stft", **SMALL)(signal)
    pooled = lib.layers.GlobalAveragePooling1D()(spectrum)
    return lib.Model(signal, lib.layers.Dense(1, name="head")(pooled))


def mel_model(lib):
    audio = lib.Input((2000,))
    mel = lib.layers.MelSpectrogram(fft_length=256, sequence_stride=128, num_mel_bins=16,
                                    sampling_rate=8000)(audio)
    scaled = lib.layers.Rescaling(0.01)(lib.layers.Flatten()(mel))
    return lib.Model(audio, lib.layers.Dense(1, name="head")(scaled))


@pytest.mark.parametrize("make_model, x", [(stft_model, SIGNAL), (mel_model, AUDIO)],
                         ids=["stft_spectrogram_trainable_kernels", "mel_spectrogram"])
def test_fit_matches_keras(make_model, x):
    keras.utils.set_random_seed(3)
    k_model = make_model(keras)
    l_model = make_model(loopax)
    l_model.set_weights(k_model.get_weights())
    y = np.array([[0.5], [-1.0]], "float32")
    histories = []
    for lib, model in ((keras, k_model), (loopax, l_model)):
        model.compile(lib.optimizers.SGD(0.01), "mse")
        histories.append(model.fit(x, y, batch_size=2, epochs=3, verbose=0).history["loss"])
    np.testing.assert_allclose(histories[1], histories[0], rtol=1e-4)
    for got, want in zip(l_model.get_weights(), k_model.get_weights()):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)
    if make_model is stft_model:   # the STFT kernels are trained, as in Keras
        before = keras.initializers.STFT("real")((64, 1, 65))
        assert not np.allclose(l_model.get_layer("stft").real_kernel.numpy(), before)


MEL_CASES = {
    "defaults_short_fft": {"fft_length": 512, "sequence_stride": 128},
    "every_argument": {"fft_length": 512, "sequence_stride": 100, "sequence_length": 400,
                       "num_mel_bins": 40, "sampling_rate": 8000, "min_freq": 50.0,
                       "max_freq": 3000.0, "top_db": 40.0, "mag_exp": 1.0, "ref_power": 2.0,
                       "min_power": 1e-6},
    "no_db_hamming": {"power_to_db": False, "fft_length": 256, "sequence_stride": 64,
                      "window": "hamming", "num_mel_bins": 32},
}


@pytest.mark.parametrize("kwargs", MEL_CASES.values(), ids=MEL_CASES.keys())
@pytest.mark.parametrize("batched", [True, False], ids=["batch", "one_clip"])
def test_mel_spectrogram_matches_keras(kwargs, batched):
    x = AUDIO if batched else AUDIO[0]
    k_layer = keras.layers.MelSpectrogram(**kwargs)
    l_layer = loopax.layers.MelSpectrogram(**kwargs)
    # Keras's layer compiled: eagerly its ops each compile for this case's shapes (about
    # 1 s more per case); compiled, the same jnp ops. Ours runs eagerly, as users call it.
    want, got = np.asarray(jax.jit(k_layer)(x)), np.asarray(l_layer(x))
    assert got.shape == want.shape
    # In dB, a relative power difference of 2e-5 (float32 FFTs) is 1e-4 dB anywhere
    # on the scale, also near 0 dB: the tolerance there is absolute.
    atol = 1e-3 if kwargs.get("power_to_db", True) else 1e-6
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=atol)
    config = l_layer.get_config()
    k_config = k_layer.get_config()
    assert {k: v for k, v in config.items() if k != "dtype"} == \
        {k: v for k, v in k_config.items() if k != "dtype"}
    np.testing.assert_array_equal(
        np.asarray(loopax.layers.MelSpectrogram.from_config(config)(x)), got)


BAD_ARGUMENTS = {
    "stft_unknown_mode": ("STFTSpectrogram", {"mode": "power"}, "mode"),
    "stft_step_over_frame": ("STFTSpectrogram", {"frame_length": 8, "frame_step": 9},
                             "frame_step"),
    "stft_fft_under_frame": ("STFTSpectrogram", {"frame_length": 64, "fft_length": 32},
                             "fft_length"),
    "stft_bad_padding": ("STFTSpectrogram", {"padding": "causal"}, "padding"),
    "mel_fft_under_sequence": ("MelSpectrogram", {"fft_length": 256, "sequence_length": 512},
                               "fft_length"),
}


@pytest.mark.parametrize("name, kwargs, argument", BAD_ARGUMENTS.values(),
                         ids=BAD_ARGUMENTS.keys())
def test_bad_arguments_raise_as_in_keras(name, kwargs, argument):
    with pytest.raises(ValueError):
        getattr(keras.layers, name)(**kwargs)
    with pytest.raises(ValueError, match=argument):
        getattr(loopax.layers, name)(**kwargs)


def test_integer_signal_and_odd_fft_length():
    layer = loopax.layers.STFTSpectrogram(**SMALL)
    with pytest.raises(TypeError, match="float"):
        layer.call(np.ones((1, 300, 1), "int32"))
    with pytest.warns(UserWarning, match="power of two"):
        loopax.layers.STFTSpectrogram(frame_length=64, fft_length=100)


@pytest.mark.parametrize("make_model, x", [(stft_model, SIGNAL), (mel_model, AUDIO)],
                         ids=["stft_spectrogram", "mel_spectrogram"])
def test_keras_file_loads_and_loopax_file_round_trips(make_model, x, tmp_path):
    keras.utils.set_random_seed(4)
    k_model = make_model(keras)
    path = str(tmp_path / "audio.keras")
    k_model.save(path)
    want = np.asarray(k_model(x))
    l_model = loopax.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(l_model(x)), want, rtol=1e-4, atol=1e-5)
    own = str(tmp_path / "audio_loopax.keras")
    l_model.save(own)
    np.testing.assert_allclose(np.asarray(loopax.saving.load_model(own)(x)), want,
                               rtol=1e-4, atol=1e-5)
