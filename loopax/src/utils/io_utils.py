"""Where loopax's progress output goes: stdout while interactive logging is on (the
default), the `loopax` Python logger at INFO level once it is off (Keras sends it to
`absl.logging` then), so a server job's output holds no progress bars.
"""

import logging
import sys

from loopax.src.api_export import export

_interactive_logging = True
logger = logging.getLogger("loopax")


@export("loopax.config.enable_interactive_logging", "loopax.utils.enable_interactive_logging")
def enable_interactive_logging() -> None:
    """Prints progress bars and messages to stdout (the default)."""
    global _interactive_logging
    _interactive_logging = True


@export("loopax.config.disable_interactive_logging", "loopax.utils.disable_interactive_logging")
def disable_interactive_logging() -> None:
    """Sends progress bars and messages to the `loopax` logger (INFO) instead of stdout."""
    global _interactive_logging
    _interactive_logging = False


@export(
    "loopax.config.is_interactive_logging_enabled",
    "loopax.utils.is_interactive_logging_enabled",
)
def is_interactive_logging_enabled() -> bool:
    """Returns whether progress output goes to stdout (True) or to the `loopax` logger."""
    return _interactive_logging


def print_msg(message: str, line_break: bool = True) -> None:
    """Writes `message` to stdout, or logs it (one INFO record, without the carriage
    returns and line breaks of a live display) when interactive logging is off."""
    if not _interactive_logging:
        text = str(message).replace("\r", "").strip("\n")
        if text.strip():
            logger.info(text)
        return
    sys.stdout.write(f"{message}\n" if line_break else str(message))
    sys.stdout.flush()
