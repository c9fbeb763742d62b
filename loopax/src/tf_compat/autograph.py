"""`tf.autograph`: the switches of autograph, which `tf.function` (`loopax.function`)
applies to Python control flow on traced values (see `loopax.src.autograph`)."""

from __future__ import annotations

import types

from loopax.src.autograph import do_not_convert, to_code


def set_verbosity(level, alsologtostdout=False):
    """Accepted for TensorFlow compatibility: loopax's autograph logs nothing."""


experimental = types.SimpleNamespace(do_not_convert=do_not_convert)

__all__ = ["do_not_convert", "experimental", "set_verbosity", "to_code"]
