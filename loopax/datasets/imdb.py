"""IMDB: `load_data(...)`, `get_word_index()`."""

from loopax.src.datasets.imdb import get_word_index, load_data
