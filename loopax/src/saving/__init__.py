"""Saving: weights files, whole-model files and the serialization registry."""
