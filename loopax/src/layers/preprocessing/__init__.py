"""Preprocessing layers, by kind of data: image, text, audio, structured."""
