"""Boston housing: `load_data(path, test_split, seed)`."""

from loopax.src.datasets.housing import load_boston_housing as load_data
