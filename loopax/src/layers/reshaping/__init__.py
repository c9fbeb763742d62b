"""Reshaping layers: flatten, reshape, pad, crop, up-sample, repeat, permute."""
