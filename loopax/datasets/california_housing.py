"""California housing: `load_data(version, path, test_split, seed)`."""

from loopax.src.datasets.housing import load_california_housing as load_data
