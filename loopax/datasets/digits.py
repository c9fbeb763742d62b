"""The 8×8 handwritten digits shipped with loopax: `load_data(test_split=0.2, seed=113)`."""

from loopax.src.datasets.digits import load_data
