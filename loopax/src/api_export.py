"""Public names declared where they are defined, as Keras's `keras_export`.

    @export("loopax.layers.AveragePooling1D", "loopax.layers.AvgPool1D")
    class AveragePooling1D(Layer): ...

    ALL_OPTIMIZERS = {...}
    export("loopax.optimizers.ALL_OPTIMIZERS")(ALL_OPTIMIZERS)

`export` does nothing at run time (it returns the object as it is): `tools/api_gen.py` reads
the calls with `ast`, without importing anything, and writes the public
`loopax/<package>/__init__.py` files from them. A path's last part is the public name; its
package must be one the generator writes. This module imports nothing from loopax.
"""

from __future__ import annotations


def export(*paths: str):
    """A decorator that marks an object as public under `paths` ("loopax.layers.Dense").

    Write it as a decorator on a class or function, call it on a module-level name
    (`export("loopax.activations.relu6")(relu6)`), or around a value
    (`ResNet50 = export("loopax.applications.ResNet50")(_variant(...))`). Returns the object
    unchanged.
    """
    if not paths or not all(isinstance(p, str) and p.startswith("loopax.") for p in paths):
        raise ValueError(
            f"export() takes public paths such as 'loopax.layers.Dense', got {paths!r}"
        )

    def mark(obj):
        return obj

    return mark
