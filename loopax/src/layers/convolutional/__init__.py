"""Convolution layers: standard, depthwise/separable, transposed."""
