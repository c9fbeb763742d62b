"""Exporting inference functions as StableHLO (Keras's `keras.export`):
`ExportArchive`, and `load` to run an archive back."""

from loopax.src.export import ExportArchive, ReloadedArchive, load
