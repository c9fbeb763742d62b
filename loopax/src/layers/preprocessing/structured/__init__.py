"""Structured-data preprocessing layers: lookups, hashing, encoding."""
