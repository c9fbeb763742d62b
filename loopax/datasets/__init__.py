"""Datasets with `load_data()`: `digits` (shipped, 1,797 8×8 images), and Keras's
`mnist`, `fashion_mnist`, `cifar10`, `cifar100`, `imdb`, `reuters`,
`boston_housing` and `california_housing` (downloaded once from Keras's URLs
into `$LOOPAX_HOME/datasets`, checksum-checked, or read from a local path)."""

from loopax.datasets import (
    boston_housing,
    california_housing,
    cifar10,
    cifar100,
    digits,
    fashion_mnist,
    imdb,
    mnist,
    reuters,
)
