"""MNIST: `load_data(path=None)`."""

from loopax.src.datasets.mnist import load_data
