"""loopax ops: pure JAX functions made taped ops by `loopax.src.tensor.op`.

numpy.py (NumPy names), math.py, linalg.py, nn.py, core.py (conversion,
control flow, slicing); operators.py backs Python operators on Variables and
Tensors.
"""
