"""fashion_mnist: `load_data(...)`."""

from loopax.src.datasets.fashion_mnist import load_data
