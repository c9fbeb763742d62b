"""`tf.version` and `tf.__version__`: the TensorFlow API version that loopax.tf
follows (its names, signatures and defaults are TensorFlow 2.21's), with
loopax's own version as the local part: `2.21.0+loopax.0.1.0` (PEP 440, so
`packaging.version.parse(tf.__version__) >= Version("2.0")` holds)."""

from loopax.src.version import __version__ as _loopax_version

TF_API_VERSION = "2.21.0"
VERSION = f"{TF_API_VERSION}+loopax.{_loopax_version}"
GIT_VERSION = f"loopax-{_loopax_version}"
COMPILER_VERSION = "XLA (through JAX)"
