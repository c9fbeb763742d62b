"""Utilities: labels, padding, downloads."""
