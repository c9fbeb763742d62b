"""`tf.errors`: TensorFlow's runtime error classes, each also the Python error it is
(`InvalidArgumentError` is a `ValueError`), so `except ValueError` code keeps working."""

from __future__ import annotations

import types


class OpError(Exception):
    """The base of TensorFlow's runtime errors."""

    def __init__(self, node_def=None, op=None, message=None, *args):
        super().__init__(message if message is not None else node_def)
        self.message = message if message is not None else str(node_def)


def _error(name, *bases):
    return type(name, (OpError,) + bases, {"__doc__": f"TensorFlow's {name}."})


errors = types.SimpleNamespace(
    OpError=OpError,
    InvalidArgumentError=_error("InvalidArgumentError", ValueError),
    NotFoundError=_error("NotFoundError", FileNotFoundError),
    AlreadyExistsError=_error("AlreadyExistsError", FileExistsError),
    OutOfRangeError=_error("OutOfRangeError", IndexError),
    ResourceExhaustedError=_error("ResourceExhaustedError", MemoryError),
    UnimplementedError=_error("UnimplementedError", NotImplementedError),
    FailedPreconditionError=_error("FailedPreconditionError", RuntimeError),
    UnknownError=_error("UnknownError", RuntimeError),
    InternalError=_error("InternalError", RuntimeError),
    CancelledError=_error("CancelledError", RuntimeError),
    AbortedError=_error("AbortedError", RuntimeError),
    DeadlineExceededError=_error("DeadlineExceededError", TimeoutError),
    PermissionDeniedError=_error("PermissionDeniedError", PermissionError),
    UnauthenticatedError=_error("UnauthenticatedError", PermissionError),
    UnavailableError=_error("UnavailableError", RuntimeError),
    DataLossError=_error("DataLossError", RuntimeError),
)
