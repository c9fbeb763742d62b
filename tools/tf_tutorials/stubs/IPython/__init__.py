"""Display-only stand-in for IPython (the tutorials use IPython.display).

matplotlib asks `IPython.get_ipython()` (None: not inside IPython) and reads
`IPython.version_info` when IPython is imported, so both exist."""

version_info = (8, 0, 0, "")


def get_ipython():
    return None
