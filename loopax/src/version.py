"""The loopax version (written into saved model files)."""

__version__ = "0.1.0"


def version() -> str:
    """Returns the loopax version string (`keras.version()`)."""
    return __version__
