"""cifar100: `load_data(...)`."""

from loopax.src.datasets.cifar100 import load_data
