"""Character-level text generation as in keras.io's lstm_character_level_text_
generation: one-hot windows of a text, an LSTM and a softmax over characters,
then generation by sampling from the predictions at a temperature (NumPy's
random generator, seeded the same for both libraries); compared with Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins

TEXT = "the cat sat on the mat. the dog sat on the log. " * 3


def text_generation_script(keras, same_weights):
    chars = sorted(set(TEXT))
    char_indices = {c: i for i, c in enumerate(chars)}
    maxlen, step = 10, 3
    sentences = [TEXT[i:i + maxlen] for i in range(0, len(TEXT) - maxlen, step)]
    next_chars = [TEXT[i + maxlen] for i in range(0, len(TEXT) - maxlen, step)]
    x = np.zeros((len(sentences), maxlen, len(chars)), dtype="bool")
    y = np.zeros((len(sentences), len(chars)), dtype="bool")
    for i, sentence in enumerate(sentences):
        for t, char in enumerate(sentence):
            x[i, t, char_indices[char]] = 1
        y[i, char_indices[next_chars[i]]] = 1

    model = same_weights(keras.Sequential([
        keras.Input(shape=(maxlen, len(chars))),
        keras.layers.LSTM(16),
        keras.layers.Dense(len(chars), activation="softmax"),
    ]))
    model.compile(loss="categorical_crossentropy",
                  optimizer=keras.optimizers.RMSprop(learning_rate=0.01))
    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)

    def sample(preds, rng, temperature=1.0):
        preds = np.asarray(preds).astype("float64")
        preds = np.log(preds) / temperature
        exp_preds = np.exp(preds)
        preds = exp_preds / np.sum(exp_preds)
        return np.argmax(rng.multinomial(1, preds, 1))

    generated = {}
    for temperature in (0.2, 1.0):
        rng = np.random.default_rng(5)
        sentence = TEXT[:maxlen]
        text = ""
        for _ in range(8):
            x_pred = np.zeros((1, maxlen, len(chars)))
            for t, char in enumerate(sentence):
                x_pred[0, t, char_indices[char]] = 1.0
            preds = model.predict(x_pred, verbose=0)[0]
            next_char = chars[sample(preds, rng, temperature)]
            sentence = sentence[1:] + next_char
            text += next_char
        generated[f"temperature={temperature}"] = text
    return {"history": history.history, "generated": generated,
            "first_prediction": model.predict(x[:2], verbose=0)}


def test_char_level_text_generation_with_sampling_matches_keras():
    ours, theirs = run_twins(text_generation_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
