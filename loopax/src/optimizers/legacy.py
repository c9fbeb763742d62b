"""`optimizers.legacy`: Keras 2's optimizers, which Keras 3 (and so loopax) no longer
has. Every name is a class whose construction raises the ImportError Keras 3 raises,
naming the fix."""

from loopax.src.api_export import export


@export(
    "loopax.optimizers.legacy.Adagrad",
    "loopax.optimizers.legacy.Adam",
    "loopax.optimizers.legacy.Ftrl",
    "loopax.optimizers.legacy.Optimizer",
    "loopax.optimizers.legacy.RMSprop",
    "loopax.optimizers.legacy.SGD",
)
class LegacyOptimizer:
    """Raises ImportError when created: `optimizers.legacy` is gone in Keras 3.

    Args:
        *args: Ignored.
        **kwargs: Ignored.
    """

    def __init__(self, *args, **kwargs):
        raise ImportError(
            "`keras.optimizers.legacy` is not supported in Keras 3, nor in loopax. Use the "
            "optimizer of the same name in `loopax.optimizers` (e.g. "
            "`loopax.optimizers.Adam(learning_rate=1e-3)`). To keep a "
            "`tf.keras.optimizers.legacy` optimizer, use TensorFlow's Keras 2 (`tf_keras` "
            "with `TF_USE_LEGACY_KERAS=True`).")
