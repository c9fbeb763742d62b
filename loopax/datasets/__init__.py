"""Datasets with `load_data()`: `digits` (shipped, 1,797 8×8 images) and
`mnist` (downloaded once, checksum-checked, or read from a local file)."""

from loopax.datasets import digits, mnist
