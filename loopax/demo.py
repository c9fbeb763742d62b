"""`python -m loopax.demo`: train, evaluate, save, reload and plot on the bundled digits.

Offline and on CPU; see `loopax.src.demo` and docs/guides/getting_started.md.
"""

from loopax.src.demo import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
