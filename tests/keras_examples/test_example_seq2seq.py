"""Character-level LSTM sequence-to-sequence as in keras.io's lstm_seq2seq:
an encoder LSTM whose states start a decoder LSTM trained with teacher
forcing, then separate inference models built from the same layers and a
greedy decoding loop; compared with Keras."""

import numpy as np
from twins import assert_same_results, falls, run_twins

CHARS = "\tabcde\n"  # \t starts a target, \n ends it
LENGTH = 5


def reversal_pairs(rng, n):
    """Input words over 'abcde' and their reversals as one-hot arrays:
    encoder input, decoder input (target shifted right by the start
    character) and decoder target."""
    words = ["".join(rng.choice(list("abcde"), 4)) for _ in range(n)]
    targets = ["\t" + w[::-1] + "\n" for w in words]
    encoder = np.zeros((n, LENGTH, len(CHARS)), "float32")
    decoder_in = np.zeros((n, LENGTH + 1, len(CHARS)), "float32")
    decoder_out = np.zeros((n, LENGTH + 1, len(CHARS)), "float32")
    for i, (word, target) in enumerate(zip(words, targets)):
        for t, char in enumerate(word):
            encoder[i, t, CHARS.index(char)] = 1
        for t, char in enumerate(target):
            decoder_in[i, t, CHARS.index(char)] = 1
            if t > 0:
                decoder_out[i, t - 1, CHARS.index(char)] = 1
    return encoder, decoder_in, decoder_out


def seq2seq_script(keras, same_weights):
    encoder_data, decoder_data, target_data = reversal_pairs(np.random.default_rng(4), 64)
    latent_dim, tokens = 16, len(CHARS)

    encoder_inputs = keras.Input(shape=(None, tokens))
    encoder = keras.layers.LSTM(latent_dim, return_state=True)
    encoder_outputs, state_h, state_c = encoder(encoder_inputs)
    encoder_states = [state_h, state_c]
    decoder_inputs = keras.Input(shape=(None, tokens))
    decoder_lstm = keras.layers.LSTM(latent_dim, return_sequences=True, return_state=True)
    decoder_outputs, _, _ = decoder_lstm(decoder_inputs, initial_state=encoder_states)
    decoder_dense = keras.layers.Dense(tokens, activation="softmax")
    decoder_outputs = decoder_dense(decoder_outputs)
    model = same_weights(keras.Model([encoder_inputs, decoder_inputs], decoder_outputs))
    model.compile(optimizer=keras.optimizers.RMSprop(0.01), loss="categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit([encoder_data, decoder_data], target_data, batch_size=16, epochs=3,
                        shuffle=False, verbose=0)

    # Inference: the same layers, rewired.
    encoder_model = keras.Model(encoder_inputs, encoder_states)
    decoder_state_input_h = keras.Input(shape=(latent_dim,))
    decoder_state_input_c = keras.Input(shape=(latent_dim,))
    decoder_states_inputs = [decoder_state_input_h, decoder_state_input_c]
    decoder_outputs, state_h_dec, state_c_dec = decoder_lstm(
        decoder_inputs, initial_state=decoder_states_inputs)
    decoder_outputs = decoder_dense(decoder_outputs)
    decoder_model = keras.Model([decoder_inputs] + decoder_states_inputs,
                                [decoder_outputs, state_h_dec, state_c_dec])

    def decode_sequence(input_seq):
        states_value = encoder_model.predict(input_seq, verbose=0)
        target_seq = np.zeros((1, 1, tokens), "float32")
        target_seq[0, 0, CHARS.index("\t")] = 1.0
        decoded = ""
        while len(decoded) <= LENGTH:
            output_tokens, h, c = decoder_model.predict([target_seq] + states_value, verbose=0)
            sampled_char = CHARS[int(np.argmax(output_tokens[0, -1, :]))]
            if sampled_char == "\n":
                break
            decoded += sampled_char
            target_seq = np.zeros((1, 1, tokens), "float32")
            target_seq[0, 0, CHARS.index(sampled_char)] = 1.0
            states_value = [h, c]
        return decoded

    return {"history": history.history, "decoded": [decode_sequence(encoder_data[i:i + 1])
                                                    for i in range(2)],
            "first_step": decoder_model.predict(
                [decoder_data[:2, :1]] + encoder_model.predict(encoder_data[:2], verbose=0),
                verbose=0)[0]}


def test_lstm_seq2seq_with_inference_models_matches_keras():
    ours, theirs = run_twins(seq2seq_script)
    assert_same_results(ours, theirs)
    assert falls(ours["history"])
