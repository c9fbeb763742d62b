"""Display-only stand-in for tensorflow_docs."""
