"""Image preprocessing and augmentation layers."""
