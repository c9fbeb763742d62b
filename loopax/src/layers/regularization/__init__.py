"""Regularization layers: dropout, noise, penalties."""
