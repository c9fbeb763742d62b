"""Attention layers."""
