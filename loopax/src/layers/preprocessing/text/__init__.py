"""Text preprocessing layers."""
