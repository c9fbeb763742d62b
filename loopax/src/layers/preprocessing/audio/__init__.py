"""Audio preprocessing layers."""
