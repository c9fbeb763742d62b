"""TensorFlow 2 names on loopax: the implementation behind `import loopax.tf as tf`.

Each module holds one part of TensorFlow's namespace (`core` the top-level
ops, `nn`, `math_ops`, `linalg`, `random`, `function`, `data`, `train`,
`summary`, ...) with TensorFlow's signatures and defaults, mapped onto loopax
ops (so a recording `GradientTape` follows them) and JAX.
"""
