"""The loopax version (written into saved model files)."""

__version__ = "0.1.0"
