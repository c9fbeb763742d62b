"""Holding Ctrl-C while a few lines must run together.

A compiled step donates its input buffers: once it returns, the only valid
copy of the training state is the value it returned. A `KeyboardInterrupt`
raised between the return and the line that records that value loses the
state for good (the model's Variables point at deleted buffers). Code that
hands state over runs inside `with INTERRUPTS_HELD:`; a SIGINT arriving
inside is delivered, to the handler that was installed before, when the
outermost such block ends.

Holding needs a SIGINT handler of loopax's own. A block installs it and puts
the previous one back (two system calls, a few microseconds); a loop of many
blocks runs inside `with INTERRUPTS_HELD.installed():`, which keeps it in
place, so that each block costs a counter. Outside the blocks the handler
passes each SIGINT straight on.

Only the main thread receives signals, so elsewhere (and when SIGINT is
ignored or not handled by Python) a block runs as it is. Blocks nest.
"""

from __future__ import annotations

import contextlib
import signal
import threading

_MAIN_THREAD = threading.main_thread().ident


def _in_main_thread():
    return threading.get_ident() == _MAIN_THREAD


class _InterruptsHeld:
    """The context manager (one instance, `INTERRUPTS_HELD`); reentrant."""

    def __init__(self):
        self._depth = 0          # blocks entered (main thread)
        self._pending = None     # (signum, frame) of a SIGINT that arrived inside one
        self._previous = None    # the handler loopax's replaced
        self._installs = 0       # how many blocks and `installed()` scopes need it
        self._holding = []       # per entered block: whether it holds (a stack)

    def _handle(self, signum, frame):
        if self._depth:
            self._pending = (signum, frame)
        else:
            self._pending = None
            self._previous(signum, frame)

    def _install(self) -> bool:
        """Puts loopax's handler in place (or counts one more user); False when
        SIGINT is not handled by Python (ignored, default, set outside Python)."""
        if self._installs:
            self._installs += 1
            return True
        previous = signal.getsignal(signal.SIGINT)
        if not callable(previous):
            return False
        self._previous = previous
        signal.signal(signal.SIGINT, self._handle)
        self._installs = 1
        return True

    def _uninstall(self):
        self._installs -= 1
        if not self._installs:
            signal.signal(signal.SIGINT, self._previous)   # from here SIGINT goes there

    @contextlib.contextmanager
    def installed(self):
        """Keeps the handler in place for a loop of blocks (one install in all)."""
        done = _in_main_thread() and self._install()
        try:
            yield
        finally:
            if done:
                self._uninstall()

    def __enter__(self):
        if not _in_main_thread():
            return self
        self._depth += 1   # a SIGINT reaching loopax's handler from here is held
        try:
            holds = self._install()
        except BaseException:   # a KeyboardInterrupt before the handler was in place
            self._depth -= 1
            raise
        if not holds:
            self._depth -= 1
        self._holding.append(holds)
        return self

    def __exit__(self, *exc):
        if not _in_main_thread() or not self._holding.pop():
            return False
        previous = self._previous
        self._uninstall()
        self._depth -= 1
        if not self._depth:
            pending, self._pending = self._pending, None
            if pending is not None:
                previous(*pending)   # the default handler raises KeyboardInterrupt here
        return False


INTERRUPTS_HELD = _InterruptsHeld()
