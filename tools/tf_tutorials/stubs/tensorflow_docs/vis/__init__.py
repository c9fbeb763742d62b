"""Display-only stand-in."""
