"""Merging layers: Add, Concatenate, Dot, ..."""
