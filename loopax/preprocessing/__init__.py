"""`keras.preprocessing`: the module paths Keras code imports from, mapped to
loopax: `sequence.pad_sequences`, `image` (load_img, img_to_array, array_to_img,
save_img, smart_resize), `timeseries_dataset_from_array`,
`image_dataset_from_directory` and `text_dataset_from_directory`."""

from loopax.preprocessing import image, sequence
from loopax.src.utils.dataset_utils import timeseries_dataset_from_array
from loopax.src.utils.directory_datasets import (
    image_dataset_from_directory,
    text_dataset_from_directory,
)
