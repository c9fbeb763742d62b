"""Pooling layers: max/average, global, adaptive."""
