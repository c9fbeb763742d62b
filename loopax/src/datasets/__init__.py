"""Datasets: the shipped 8×8 digits, and MNIST (downloaded and cached)."""
