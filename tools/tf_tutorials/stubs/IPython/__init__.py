"""Display-only stand-in for IPython (the tutorials use IPython.display)."""
