"""`keras.preprocessing`: the module paths Keras code imports from, mapped to what
loopax has (`sequence.pad_sequences`). Keras's `image_dataset_from_directory`,
`text_dataset_from_directory`, `timeseries_dataset_from_array` and the
`preprocessing.image` helpers are not built in loopax yet (docs/keras_differences.md)."""

from loopax.preprocessing import sequence
