"""Reuters: `load_data(...)`, `get_word_index()`, `get_label_names()`."""

from loopax.src.datasets.reuters import get_label_names, get_word_index, load_data
