"""cifar10: `load_data(...)`."""

from loopax.src.datasets.cifar10 import load_data
