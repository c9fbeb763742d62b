"""Core layers: Dense, EinsumDense, Embedding, Identity, Lambda, wrappers of other code."""
