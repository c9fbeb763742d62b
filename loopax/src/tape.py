"""PLACEHOLDER: the tape helper replaces this file."""
