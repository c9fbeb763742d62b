"""Models: `Model` (subclassed), `Functional`, `Sequential`."""
